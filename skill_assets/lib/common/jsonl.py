"""Reading user-supplied JSON Lines where every error names the file and the line.

Query files for ``skill-assets route`` and external benchmark files share this reader, so a
malformed line reads the same wherever it is found: ``path:line: invalid JSON (...)``.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path


class JsonlError(ValueError):
    """A line that is not UTF-8 or not a JSON object; the message starts with ``path:line``."""


def json_objects(path: Path) -> Iterator[tuple[str, dict]]:
    """(``path:line``, object) for every non-blank line of ``path``."""
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            where = f"{path}:{lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise JsonlError(f"{where}: not UTF-8 ({exc.reason})") from exc
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise JsonlError(f"{where}: invalid JSON ({exc.msg}, column {exc.colno})") from None
            if not isinstance(rec, dict):
                raise JsonlError(f"{where}: expected a JSON object, got {type(rec).__name__}")
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
