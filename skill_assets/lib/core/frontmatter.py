"""Parse a SKILL.md file into front matter and body: the one reader ingest and the router share.

Skill files in the wild carry a UTF-8 BOM, Windows line endings, tabs in YAML and extra keys;
a parse failure must name *why* so the caller can quarantine the file with a reason code, and
no input may abort the caller. YAML aliases are allowed (the safe loader resolves them to shared
objects), but a 60-byte self-referencing alias builds a cyclic structure and a few lines of
nested aliases expand a 400-byte file to megabytes (the file-size cap never sees it), so the
parsed front matter is measured *after* parsing — nesting depth, nodes and text as if every
alias were expanded — with a walk that stops at the first limit, so it cannot be made slow.
What YAML costs *before* that walk is bounded by capping the front matter's length (the loader's
work is linear in it) and the length of an integer (YAML 1.1 builds a base-60 integer such as
``1:2:3`` by repeated big-integer arithmetic, quadratic in its length: a 1 MB one took 83 s).
"""
from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

# libyaml's safe loader when compiled in (10x faster at corpus scale), else the pure-Python one
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class SkillParseError(ValueError):
    """A SKILL.md that cannot become a skill; ``code`` is the quarantine reason code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class FrontMatterLimits:
    """Bounds on the parsed front matter, every alias counted each time it is used.

    The defaults are far above any real skill (7,098 real front matters: depth ≤ 4, no alias, at most
    5,000 characters) and far below what makes ``json.dumps`` or DuckDB struggle; ``max_chars``
    equals the default file cap. ``max_header_chars`` is checked before YAML reads the text: 100,000
    lines of ``k: v`` took 1.6 s to load before the node limit could refuse them.
    """

    max_depth: int = 32
    max_nodes: int = 100_000
    max_chars: int = 1_000_000
    max_header_chars: int = 100_000


DEFAULT_LIMITS = FrontMatterLimits()


@dataclass(frozen=True)
class ParsedSkill:
    name: str
    description: str
    body: str
    extra: dict[str, Any] = field(default_factory=dict)


#: a closing fence: a line that is '---' or '...' once stripped (``[^\S\n]`` is ``str.strip``'s whitespace on one line)
_CLOSING_FENCE = re.compile(r"^[^\S\n]*(?:---|\.\.\.)[^\S\n]*$", re.MULTILINE)


def _split_front_matter(text: str) -> tuple[str, str]:
    """(front matter, body) of ``text`` split on ``\n`` lines: the first line must strip to '---' and the
    front matter ends at the next line that strips to '---' or '...'. Found by one regex search from
    the second line, not by splitting the whole file into lines (a skill's body is ~100x its header)."""
    first_end = text.find("\n")
    if (text if first_end < 0 else text[:first_end]).strip() != "---":
        raise SkillParseError("missing_front_matter", "file does not start with a '---' front-matter fence")
    fence = _CLOSING_FENCE.search(text, first_end + 1) if first_end >= 0 else None
    if fence is None:
        raise SkillParseError("unterminated_front_matter", "front matter has no closing '---' fence")
    # the lines between the two fences (none when the fence is the second line), and every line after it
    return text[first_end + 1 : max(first_end + 1, fence.start() - 1)], text[fence.end() + 1 :]


def check_expanded_size(meta: Any, limits: FrontMatterLimits = DEFAULT_LIMITS) -> None:
    """Raise SkillParseError if ``meta`` is cyclic, too deep or too large with its aliases expanded.

    Iterative (no recursion to exhaust) and stops at the first limit, so a billion-laughs document
    costs at most ``max_nodes`` steps.
    """
    nodes = chars = 0
    on_path: set[int] = set()
    stack: list[tuple[Any, int, bool]] = [(meta, 1, False)]
    while stack:
        value, depth, leaving = stack.pop()
        if leaving:
            on_path.discard(id(value))
            continue
        nodes += 1
        if nodes > limits.max_nodes:
            raise SkillParseError("front_matter_too_large",
                                  f"front matter expands to more than {limits.max_nodes} YAML nodes (aliases expanded)")
        if isinstance(value, (dict, list)):
            if id(value) in on_path:
                raise SkillParseError("yaml_alias_cycle", "front matter has a YAML alias that refers to itself")
            if depth > limits.max_depth:
                raise SkillParseError("front_matter_too_deep",
                                      f"front matter nests deeper than {limits.max_depth} levels")
            on_path.add(id(value))
            stack.append((value, depth, True))
            children = [x for kv in value.items() for x in kv] if isinstance(value, dict) else value
            stack.extend((child, depth + 1, False) for child in children)
        else:
            chars += len(value) if isinstance(value, (str, bytes)) else 8
            if chars > limits.max_chars:
                raise SkillParseError("front_matter_too_large",
                                      f"front matter expands to more than {limits.max_chars} characters "
                                      "(aliases expanded)")


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return " ".join(_as_text(v) for v in value)
    return str(value).strip()


#: the longest integer YAML may build: Python's default limit on converting digits (``sys.get_int_max_str_digits``)
MAX_INT_CHARS = 4_300


class _BoundedLoader(_SAFE_LOADER):  # type: ignore[misc, valid-type]
    """The safe loader, refusing an integer longer than ``MAX_INT_CHARS`` before it is built."""


def _bounded_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    if len(node.value) > MAX_INT_CHARS:
        raise yaml.constructor.ConstructorError(None, None, f"an integer of {len(node.value)} characters "
                                                f"(more than {MAX_INT_CHARS})", node.start_mark)
    return yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _bounded_int)


def _load_yaml(header: str) -> Any:
    try:
        return yaml.load(header.replace("\t", "  "), Loader=_BoundedLoader)
    except yaml.YAMLError as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else "unknown YAML error"
        raise SkillParseError("invalid_yaml", f"front matter is not valid YAML: {first_line}") from exc
    except RecursionError as exc:  # the pure-Python loader composes nested nodes recursively
        raise SkillParseError("front_matter_too_deep", "front matter nests too deep to parse") from exc
    except UnicodeEncodeError as exc:  # libyaml takes UTF-8: text decoded from a JSON escape can hold a lone surrogate
        raise SkillParseError("not_utf8", f"front matter holds a lone surrogate at character {exc.start}") from exc
    except (ValueError, OverflowError) as exc:  # a value of a well-formed tag that cannot be built: 2024-13-45
        raise SkillParseError("invalid_yaml", f"front matter holds a value YAML cannot build: {exc}") from exc


#: parsed front matters kept per process, keyed by their text: forks and mirrors repeat a front matter
#: verbatim, and YAML is most of the parse. Only results with scalar extra values are kept (their
#: ``extra`` dict is rebuilt per call, so no caller can alter a cached one) and only short headers.
_HEADER_CACHE: dict[tuple, tuple[str, str, tuple]] = {}
HEADER_CACHE_ENTRIES = 16_384
HEADER_CACHE_MAX_CHARS = 4_000
_IMMUTABLE = frozenset({str, int, float, bool, type(None), bytes, datetime.date, datetime.datetime})


def _parse_header(header: str, limits: FrontMatterLimits, require_description: bool) -> tuple[str, str, dict]:
    """(name, description, extra keys) of a front matter, or SkillParseError; cached as described above."""
    key = (header, limits, require_description) if len(header) <= HEADER_CACHE_MAX_CHARS else None
    hit = _HEADER_CACHE.get(key) if key is not None else None
    if hit is not None:
        return hit[0], hit[1], dict(hit[2])
    if len(header) > limits.max_header_chars:
        raise SkillParseError("front_matter_too_large", f"front matter of {len(header)} characters passes the cap "
                                                        f"of {limits.max_header_chars}; not parsed")
    meta = _load_yaml(header)
    if not isinstance(meta, dict):
        raise SkillParseError("invalid_yaml", "front matter is not a YAML mapping")
    check_expanded_size(meta, limits)
    name = _as_text(meta.get("name"))
    description = _as_text(meta.get("description"))
    if not name:
        raise SkillParseError("missing_name", "front matter has no non-empty 'name'")
    if not description and require_description:
        raise SkillParseError("missing_description", "front matter has no non-empty 'description'")
    extra = {str(k): v for k, v in meta.items() if k not in ("name", "description")}
    if key is not None and all(type(v) in _IMMUTABLE for v in extra.values()):
        if len(_HEADER_CACHE) >= HEADER_CACHE_ENTRIES:
            _HEADER_CACHE.clear()
        _HEADER_CACHE[key] = (name, description, tuple(extra.items()))
    return name, description, extra


def parse_skill_markdown(text: str, limits: FrontMatterLimits = DEFAULT_LIMITS,
                         require_description: bool = True) -> ParsedSkill:
    """Parse decoded SKILL.md text (BOM and CRLF tolerated); raise SkillParseError on bad input.

    ``require_description=False`` lets an empty description through (the router routes such a
    skill on its name and body; the benchmark pipeline needs one).
    """
    text = text.lstrip("\ufeff")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    header, body = _split_front_matter(text)
    name, description, extra = _parse_header(header, limits, require_description)
    body = body.strip()
    if not body:
        raise SkillParseError("empty_body", "the Markdown body after the front matter is empty")
    return ParsedSkill(name=name, description=description, body=body, extra=extra)
