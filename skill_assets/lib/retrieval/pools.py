"""Skill pools as users have them: a directory tree of ``SKILL.md`` files or a JSONL of skill records.

Skill id = the skill folder relative to the pool (POSIX-style), or the JSONL ``id``. A folder pool
follows ingest's rules exactly (``lib/common/skill_files``: same candidates, symlink policy, file
types, size cap and reasons), so a file ingest quarantines is never routed. Entries that cannot
become a skill are returned in ``rejected`` with a reason code, never dropped silently; skipped
folders (symlinked or unlistable) are listed there too. Two rules differ from ingest on purpose:

* an empty description is not a reject: about 2 % of a real registry has none, and such a skill
  is still routable on its name and body; it is flagged (``Skill.flags``) and logged;
* a duplicate id is an error (``PoolError``) naming both places: which of the two the user meant
  cannot be guessed, and routing to either would be silently wrong.
"""
from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from skill_assets.lib.common.frontmatter import SkillParseError
from skill_assets.lib.common.jsonl import JsonlError, capped_lines, parse_json_object
from skill_assets.lib.common.skill_files import FolderReject, read_skill, walk_skill_files

SKILL_FILENAME = "SKILL.md"
DEFAULT_MAX_FILE_BYTES = 1_000_000
EMPTY_DESCRIPTION = "empty_description"
MAX_IDS_LOGGED = 10

_log = logging.getLogger(__name__)


class PoolError(ValueError):
    """A pool that cannot be routed as given (e.g. one id twice); the message names the places."""


@dataclass(frozen=True)
class Skill:
    id: str
    name: str
    description: str
    body: str
    source: str = ""
    #: why this skill is routed with less than a full record (``empty_description``)
    flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rejected:
    source: str   # file path, or "path:line" for JSONL
    code: str     # parse reason code (missing_name, invalid_json, not_regular_file, ...)
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

    @property
    def flagged(self) -> list[Skill]:
        return [s for s in self.skills if s.flags]


class _Ids:
    """Ids taken so far and where; a second use raises PoolError naming both."""

    def __init__(self) -> None:
        self.where: dict[str, str] = {}

    def claim(self, sid: str, place: str) -> None:
        if sid in self.where:
            raise PoolError(f"duplicate skill id {sid!r}: {self.where[sid]} and {place}")
        self.where[sid] = place


def _load_dir(root: Path, max_file_bytes: int) -> PoolLoad:
    out = PoolLoad()
    ids = _Ids()
    for entry in walk_skill_files(root):
        if isinstance(entry, FolderReject):
            out.rejected.append(Rejected(str(entry.path), entry.code, entry.message))
            continue
        rel = entry.parent.relative_to(root).as_posix()
        sid = root.resolve().name if rel == "." else rel
        src = str(entry)
        try:
            _, parsed = read_skill(entry, root, max_file_bytes, require_description=False)
        except SkillParseError as exc:
            out.rejected.append(Rejected(src, exc.code, exc.message))
            continue
        ids.claim(sid, src)
        flags = () if parsed.description else (EMPTY_DESCRIPTION,)
        out.skills.append(Skill(sid, parsed.name, parsed.description, parsed.body, src, flags))
    return out


def _skill_of_record(rec: dict, where: str) -> Skill:
    """A Skill from one JSONL record; raise SkillParseError with ingest's reason codes."""
    for key in ("id", "name"):
        if not isinstance(rec.get(key), str) or not rec[key].strip():
            raise SkillParseError(f"missing_{key}", f"{key!r} must be a non-empty string")
    for key in ("description", "body"):
        if not isinstance(rec.get(key) or "", str):
            raise SkillParseError(f"missing_{key}", f"{key!r} must be a string")
    description, body = (rec.get("description") or "").strip(), (rec.get("body") or "").strip()
    if any("\x00" in text for text in (rec["id"], rec["name"], description, body)):
        raise SkillParseError("binary", "a field holds a NUL character")
    return Skill(rec["id"].strip(), rec["name"].strip(), description, body, where,
                 () if description else (EMPTY_DESCRIPTION,))


def _load_jsonl(path: Path, max_line_bytes: int) -> PoolLoad:
    out = PoolLoad()
    ids = _Ids()
    with path.open("rb") as fh:
        for lineno, raw in capped_lines(fh, max_line_bytes):
            where = f"{path}:{lineno}"
            try:
                if raw is None:
                    raise SkillParseError("too_large", f"line {lineno} exceeds the cap of {max_line_bytes} bytes")
                rec = parse_json_object(raw, where)
                if rec is None:
                    continue
                skill = _skill_of_record(rec, where)
            except JsonlError as exc:
                out.rejected.append(Rejected(where, exc.code, f"line {lineno}: {str(exc).split(': ', 1)[-1]}"))
                continue
            except SkillParseError as exc:
                out.rejected.append(Rejected(where, exc.code, f"line {lineno}: {exc.message}"))
                continue
            ids.claim(skill.id, f"line {lineno}")
            out.skills.append(skill)
    return out


def _log_flagged(load: PoolLoad, log: Callable[[str], None]) -> None:
    flagged = [s.id for s in load.flagged]
    if flagged:
        shown = ", ".join(flagged[:MAX_IDS_LOGGED]) + (f" and {len(flagged) - MAX_IDS_LOGGED} more"
                                                       if len(flagged) > MAX_IDS_LOGGED else "")
        log(f"{len(flagged)} pool skill(s) have an empty description and are routed on name and body: {shown}")


def load_pool(path: str | Path, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
              log: Callable[[str], None] = _log.warning) -> PoolLoad:
    """Skills from a SKILL.md directory tree or a JSONL file; bad entries go to ``rejected`` with reasons.

    Raises FileNotFoundError for a missing pool, PoolError (a ValueError) for a duplicate id, and
    ValueError for a path that is neither kind. ``log`` gets one line about flagged skills.
    """
    p = Path(path).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"skill pool {p} does not exist")
    if p.is_dir():
        load = _load_dir(p, max_file_bytes)
    elif p.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        if not stat.S_ISREG(os.stat(p).st_mode):
            raise ValueError(f"skill pool {p} is not a regular file (a FIFO or device is never read)")
        load = _load_jsonl(p, max_file_bytes)
    elif p.name.lower() == SKILL_FILENAME.lower():
        raise ValueError(f"{p} is a single SKILL.md: pass the directory that contains the skill folders")
    else:
        raise ValueError(f"skill pool {p} is neither a directory of SKILL.md files nor a .jsonl file")
    _log_flagged(load, log)
    return load
