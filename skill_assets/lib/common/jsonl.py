"""Reading user-supplied JSON Lines where every error names the file and the line.

Query files for ``skill-assets route``, skill pools and external benchmark files share this
reader, so a malformed line reads the same wherever it is found: ``path:line: invalid JSON (...)``.
JSON allows escapes that are not text — a lone surrogate (``"\\ud800"``) decodes to a Python string
that cannot be encoded, tokenized or written back — so such a line is refused here, by name,
instead of failing later with a traceback.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO


class JsonlError(ValueError):
    """A line that is not a usable JSON object; the message starts with ``path:line``, ``code`` says why."""

    def __init__(self, message: str, code: str = "invalid_json") -> None:
        super().__init__(message)
        self.code = code


def has_lone_surrogate(value: Any) -> bool:
    """True if any string in ``value`` (a decoded JSON value) holds a surrogate code point."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if not v.isascii():
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError:
                    return True
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def parse_json_object(raw: bytes, where: str) -> dict | None:
    """The JSON object on one line (None for a blank line); raise JsonlError naming ``where``."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonlError(f"{where}: not UTF-8 ({exc.reason} at byte {exc.start})", "not_utf8") from None
    if not line.strip():
        return None
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as exc:
        raise JsonlError(f"{where}: invalid JSON ({exc.msg}, column {exc.colno})") from None
    except RecursionError:
        raise JsonlError(f"{where}: invalid JSON (nested too deep)") from None
    except ValueError:  # json builds an int from its digits, and Python refuses more than 4,300 of them
        digits = sys.get_int_max_str_digits()
        raise JsonlError(f"{where}: invalid JSON (a number of more than {digits} digits)") from None
    if not isinstance(rec, dict):
        raise JsonlError(f"{where}: expected a JSON object, got {type(rec).__name__}", "invalid_record")
    if has_lone_surrogate(rec):
        raise JsonlError(f"{where}: a string holds a lone surrogate escape (e.g. \"\\ud800\"), which is not text",
                         "invalid_text")
    return rec


def capped_lines(fh: BinaryIO, max_bytes: int) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes) per line; ``None`` for a line longer than ``max_bytes`` (read past, never held)."""
    lineno = 0
    while True:
        raw = fh.readline(max_bytes + 1)
        if not raw:
            return
        lineno += 1
        if len(raw) > max_bytes and not raw.endswith(b"\n"):
            while (rest := fh.readline(1 << 20)) and not rest.endswith(b"\n"):
                pass
            yield lineno, None
        else:
            yield lineno, raw


def json_objects(path: Path) -> Iterator[tuple[str, dict]]:
    """(``path:line``, object) for every non-blank line of ``path``."""
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            where = f"{path}:{lineno}"
            rec = parse_json_object(raw, where)
            if rec is not None:
                yield where, rec


def format_records(path: Path, error: type[Exception]) -> Iterator[tuple[str, dict]]:
    """``json_objects`` of a file a format requires, every problem (a missing file included) raised as the
    format's own ``error``, so its callers catch one exception type."""
    if not path.is_file():
        raise error(f"{path}: file not found")
    try:
        yield from json_objects(path)
    except JsonlError as exc:
        raise error(str(exc)) from exc
