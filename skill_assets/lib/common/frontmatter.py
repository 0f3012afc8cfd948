"""Parse a SKILL.md file into front matter and body: the one reader ingest and the router share.

Skill files in the wild carry a UTF-8 BOM, Windows line endings, tabs in YAML and extra keys;
a parse failure must name *why* so the caller can quarantine the file with a reason code, and
no input may abort the caller. YAML aliases are allowed (the safe loader resolves them to shared
objects), but a 60-byte self-referencing alias builds a cyclic structure and a few lines of
nested aliases expand a 400-byte file to megabytes (the file-size cap never sees it), so the
parsed front matter is measured *after* parsing — nesting depth, nodes and text as if every
alias were expanded — with a walk that stops at the first limit, so it cannot be made slow.
"""
from __future__ import annotations

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

    The defaults are far above any real skill (7,098 real front matters: depth ≤ 4, no alias) and
    far below what makes ``json.dumps`` or DuckDB struggle; ``max_chars`` equals the default file cap.
    """

    max_depth: int = 32
    max_nodes: int = 100_000
    max_chars: int = 1_000_000


DEFAULT_LIMITS = FrontMatterLimits()


@dataclass(frozen=True)
class ParsedSkill:
    name: str
    description: str
    body: str
    extra: dict[str, Any] = field(default_factory=dict)


def _split_front_matter(text: str) -> tuple[str, str]:
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise SkillParseError("missing_front_matter", "file does not start with a '---' front-matter fence")
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1 :])
    raise SkillParseError("unterminated_front_matter", "front matter has no closing '---' fence")


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


def _load_yaml(header: str) -> Any:
    try:
        return yaml.load(header.replace("\t", "  "), Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else "unknown YAML error"
        raise SkillParseError("invalid_yaml", f"front matter is not valid YAML: {first_line}") from exc
    except RecursionError as exc:  # the pure-Python loader composes nested nodes recursively
        raise SkillParseError("front_matter_too_deep", "front matter nests too deep to parse") from exc


def parse_skill_markdown(text: str, limits: FrontMatterLimits = DEFAULT_LIMITS,
                         require_description: bool = True) -> ParsedSkill:
    """Parse decoded SKILL.md text (BOM and CRLF tolerated); raise SkillParseError on bad input.

    ``require_description=False`` lets an empty description through (the router routes such a
    skill on its name and body; the benchmark pipeline needs one).
    """
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    header, body = _split_front_matter(text)
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
    body = body.strip()
    if not body:
        raise SkillParseError("empty_body", "the Markdown body after the front matter is empty")
    extra = {str(k): v for k, v in meta.items() if k not in ("name", "description")}
    return ParsedSkill(name=name, description=description, body=body, extra=extra)
