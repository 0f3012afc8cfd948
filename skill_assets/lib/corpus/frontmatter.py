"""Parse a SKILL.md file into front matter and body.

Skill files in the wild carry a UTF-8 BOM, Windows line endings, tabs in YAML and extra keys;
a parse failure must name *why* so the ingest stage can quarantine the file with a reason code.
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


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return " ".join(_as_text(v) for v in value)
    return str(value).strip()


def parse_skill_markdown(text: str) -> ParsedSkill:
    """Parse decoded SKILL.md text (BOM and CRLF tolerated); raise SkillParseError on bad input."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    header, body = _split_front_matter(text)
    try:
        meta = yaml.load(header.replace("\t", "  "), Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else "unknown YAML error"
        raise SkillParseError("invalid_yaml", f"front matter is not valid YAML: {first_line}") from exc
    if not isinstance(meta, dict):
        raise SkillParseError("invalid_yaml", "front matter is not a YAML mapping")
    name = _as_text(meta.get("name"))
    description = _as_text(meta.get("description"))
    if not name:
        raise SkillParseError("missing_name", "front matter has no non-empty 'name'")
    if not description:
        raise SkillParseError("missing_description", "front matter has no non-empty 'description'")
    body = body.strip()
    if not body:
        raise SkillParseError("empty_body", "the Markdown body after the front matter is empty")
    extra = {str(k): v for k, v in meta.items() if k not in ("name", "description")}
    return ParsedSkill(name=name, description=description, body=body, extra=extra)
