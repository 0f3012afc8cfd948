"""Skill pools as users have them: a directory tree of ``SKILL.md`` files or a JSONL of skill records.

Skill id = the skill folder relative to the pool (POSIX-style), or the JSONL ``id``. Entries that
cannot become a skill are returned in ``rejected`` with a reason code, never dropped silently.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from skill_assets.lib.corpus.frontmatter import SkillParseError, parse_skill_markdown

SKILL_FILENAME = "SKILL.md"


@dataclass(frozen=True)
class Skill:
    id: str
    name: str
    description: str
    body: str
    source: str = ""


@dataclass(frozen=True)
class Rejected:
    source: str   # file path, or "path:line" for JSONL
    code: str     # parse reason code (missing_name, invalid_json, duplicate_id, ...)
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.code}: {self.message}"


@dataclass
class PoolLoad:
    """``skills, rejected = load_pool(path)``."""

    skills: list[Skill] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)

    def __iter__(self) -> Iterator:
        return iter((self.skills, self.rejected))


def _iter_skill_files(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in sorted(filenames):
            if name.lower() == SKILL_FILENAME.lower():
                yield Path(dirpath) / name


def _load_dir(root: Path, max_file_bytes: int) -> PoolLoad:
    out = PoolLoad()
    seen: dict[str, str] = {}
    for path in _iter_skill_files(root):
        rel = path.parent.relative_to(root).as_posix()
        sid = root.resolve().name if rel == "." else rel
        src = str(path)
        try:
            size = path.stat().st_size
            if size > max_file_bytes:
                raise SkillParseError("too_large", f"{size} bytes > {max_file_bytes}")
            raw = path.read_bytes()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise SkillParseError("not_utf8", f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
            parsed = parse_skill_markdown(text)
        except SkillParseError as exc:
            out.rejected.append(Rejected(src, exc.code, exc.message))
            continue
        except OSError as exc:
            out.rejected.append(Rejected(src, "unreadable", str(exc)))
            continue
        if sid in seen:  # e.g. SKILL.md and skill.md in one folder
            out.rejected.append(Rejected(src, "duplicate_id", f"skill id {sid!r} already taken by {seen[sid]}"))
            continue
        seen[sid] = src
        out.skills.append(Skill(sid, parsed.name, parsed.description, parsed.body, src))
    return out


def _load_jsonl(path: Path) -> PoolLoad:
    out = PoolLoad()
    seen: dict[str, int] = {}
    with path.open("r", encoding="utf-8", errors="strict") as fh:
        try:
            lines = list(fh)
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        src = f"{path}:{lineno}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            out.rejected.append(Rejected(src, "invalid_json", f"line {lineno}: {exc.msg} (column {exc.colno})"))
            continue
        if not isinstance(rec, dict):
            out.rejected.append(Rejected(src, "invalid_record", f"line {lineno}: expected a JSON object"))
            continue
        problems = []
        for key in ("id", "name", "description"):
            if not isinstance(rec.get(key), str) or not rec[key].strip():
                problems.append(f"{key!r} must be a non-empty string")
        if not isinstance(rec.get("body", ""), str):
            problems.append("'body' must be a string")
        if problems:
            code = "missing_" + next(k for k in ("id", "name", "description", "body")
                                     if any(p.startswith(repr(k)) for p in problems))
            out.rejected.append(Rejected(src, code, f"line {lineno}: " + "; ".join(problems)))
            continue
        sid = rec["id"].strip()
        if sid in seen:
            out.rejected.append(Rejected(src, "duplicate_id", f"line {lineno}: id {sid!r} already on line {seen[sid]}"))
            continue
        seen[sid] = lineno
        out.skills.append(Skill(sid, rec["name"].strip(), rec["description"].strip(), (rec.get("body") or "").strip(),
                                src))
    return out


def load_pool(path: str | Path, max_file_bytes: int = 1_000_000) -> PoolLoad:
    """Skills from a SKILL.md directory tree or a JSONL file; bad entries go to ``rejected`` with reasons.

    Raises FileNotFoundError for a missing pool, ValueError for a path that is neither kind.
    """
    p = Path(path).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"skill pool {p} does not exist")
    if p.is_dir():
        return _load_dir(p, max_file_bytes)
    if p.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        return _load_jsonl(p)
    if p.name.lower() == SKILL_FILENAME.lower():
        raise ValueError(f"{p} is a single SKILL.md: pass the directory that contains the skill folders")
    raise ValueError(f"skill pool {p} is neither a directory of SKILL.md files nor a .jsonl file")


