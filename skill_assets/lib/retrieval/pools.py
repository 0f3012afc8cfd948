"""Skill pools as users have them: a directory tree of ``SKILL.md`` files or a JSONL of skill records.

Skill id = the skill folder relative to the pool (POSIX-style), or the JSONL ``id``. A folder pool
follows ingest's rules exactly (``lib/core/skill_files``: same candidates, symlink policy, file
types, size cap and reasons), so a file ingest quarantines is never routed. Entries that cannot
become a skill are returned in ``rejected`` with a reason code, never dropped silently; skipped
folders (symlinked or unlistable) are listed there too. Two rules differ from ingest on purpose:

* an empty description is not a reject: about 2 % of a real registry has none, and such a skill
  is still routable on its name and body; it is flagged (``Skill.flags``) and logged;
* a duplicate id is an error (``PoolError``) naming both places: which of the two the user meant
  cannot be guessed, and routing to either would be silently wrong.

Several roots (``load_pools``: project skills, then the user's, then bundled ones) are read in precedence
order. A skill whose name (``normalise_name``) a root earlier in the order already holds is shadowed: it is
left out and listed (``PoolLoad.shadowed``), so one skill is never routed twice under two ids. Every other
skill keeps its id, except where an earlier root already holds the same id for a skill of another name: then
the id is prefixed with the root's position, ``2:tools/lint``, so ids stay unique and the first root's never
change.

Given the index cache (``cache_dir``), a folder pool is read through its ``PoolManifest``: a file unchanged since
the last read (its ``lstat`` identity) is not parsed again, which is most of a warm ``route``'s pool read. A caller
that reads the same roots again and again (``serve --watch``) keeps the outcomes in memory instead (``parsed_files``).
"""
from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from skill_assets.lib.core.frontmatter import ParsedSkill, SkillParseError
from skill_assets.lib.common.hashing import normalise_name
from skill_assets.lib.common.jsonl import JsonlError, capped_lines, parse_json_object
from skill_assets.lib.core.skill_files import FolderReject, read_skill
from skill_assets.lib.retrieval.give_way import gently
from skill_assets.lib.retrieval.pool_manifest import ManifestStats, ParsedFiles, PoolManifest, walked_now

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


@dataclass(frozen=True)
class Shadowed:
    """A skill left out because a root earlier in precedence holds a skill of the same name (``load_pools``)."""

    skill: Skill  # the one left out
    kept: Skill   # the one routed under that name

    def __str__(self) -> str:
        return f"{self.skill.name}: {self.skill.source} (shadowed by {self.kept.source})"


@dataclass
class PoolLoad:
    """``skills, rejected = load_pool(path)``; ``shadowed``: what ``load_pools`` left out by precedence."""

    skills: list[Skill] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    shadowed: list[Shadowed] = field(default_factory=list)
    #: a folder pool's SKILL.md files taken from its manifest unchanged, and read and parsed now
    files: ManifestStats = field(default_factory=ManifestStats)

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


#: where a folder root's parse outcomes are read through: ``(root, max_file_bytes) -> ParsedFiles``
ParsedFilesFor = Callable[[Path, int], ParsedFiles]


def _parsed(path: str, rel: str, root: Path, max_file_bytes: int, manifest: ParsedFiles | None,
            st: os.stat_result | None) -> ParsedSkill | SkillParseError:
    """What one candidate file (``rel`` under ``root``) parses to: from the manifest where the file is unchanged,
    else read now. ``st``: its ``lstat`` taken with the walk, if it was (else taken here)."""
    if manifest is not None and st is None:
        try:
            st = os.lstat(path)
        except OSError:
            pass  # gone since the walk: read_skill says why
    if manifest is not None and st is not None and (found := manifest.outcome(rel, st)) is not None:
        return found
    try:
        found = read_skill(Path(path), root, max_file_bytes, require_description=False)[1]
    except SkillParseError as exc:
        found = exc
    if manifest is not None and st is not None:
        manifest.record(rel, st, found)
    return found


def _load_dir(root: Path, max_file_bytes: int, manifest: ParsedFiles | None) -> PoolLoad:
    """A folder pool's skills and rejects; paths are handled as strings (a pathlib object per file was a third of a
    warm read)."""
    out = PoolLoad()
    ids = _Ids()
    prefix = str(root) if str(root).endswith(os.sep) else str(root) + os.sep
    shown_from = len(prefix) if str(root) == "." else 0  # a file under "." is shown as pathlib shows it: a/SKILL.md
    for entry, st in gently(manifest.walk(root) if manifest is not None else walked_now(root)):
        if isinstance(entry, FolderReject):
            out.rejected.append(Rejected(str(entry.path), entry.code, entry.message))
            continue
        rel_file, entry = entry[len(prefix):], entry[shown_from:]
        folder = os.path.dirname(rel_file)
        sid = folder.replace(os.sep, "/") if folder else root.resolve().name
        parsed = _parsed(entry, rel_file, root, max_file_bytes, manifest, st)
        if isinstance(parsed, SkillParseError):
            out.rejected.append(Rejected(entry, parsed.code, parsed.message))
            continue
        ids.claim(sid, entry)
        flags = () if parsed.description else (EMPTY_DESCRIPTION,)
        out.skills.append(Skill(sid, parsed.name, parsed.description, parsed.body, entry, flags))
    if manifest is not None:
        manifest.save()
        out.files = manifest.stats
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


def some_ids(ids: Sequence[str]) -> str:
    """The first ``MAX_IDS_LOGGED`` ids and how many more: a log line stays short whatever the pool's size."""
    more = len(ids) - MAX_IDS_LOGGED
    return ", ".join(ids[:MAX_IDS_LOGGED]) + (f" and {more} more" if more > 0 else "")


def _log_flagged(load: PoolLoad, log: Callable[[str], None]) -> None:
    flagged = [s.id for s in load.flagged]
    if flagged:
        log(f"{len(flagged)} pool skill(s) have an empty description and are routed on name and body: "
            f"{some_ids(flagged)}")


def load_pool(path: str | Path, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
              log: Callable[[str], None] = _log.warning, cache_dir: Path | None = None,
              parsed_files: ParsedFilesFor | None = None) -> PoolLoad:
    """Skills from a SKILL.md directory tree or a JSONL file; bad entries go to ``rejected`` with reasons.
    ``cache_dir``: the index cache, where a folder pool's manifest is kept (``PoolManifest``; None: no manifest).
    ``parsed_files``: where a folder pool's parse outcomes are read through instead of its manifest.

    Raises FileNotFoundError for a missing pool, PoolError (a ValueError) for a duplicate id, and
    ValueError for a path that is neither kind. ``log`` gets one line about flagged skills.
    """
    p = Path(path).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"skill pool {p} does not exist")
    if p.is_dir():
        if parsed_files is None:
            parsed_files = (lambda root, cap: PoolManifest(cache_dir, root, cap)) if cache_dir else None
        load = _load_dir(p, max_file_bytes, parsed_files(p, max_file_bytes) if parsed_files else None)
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


def load_pools(paths: Sequence[str | Path], max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
               log: Callable[[str], None] = _log.warning, cache_dir: Path | None = None,
               parsed_files: ParsedFilesFor | None = None) -> PoolLoad:
    """The skills of several roots in precedence order, the first root winning (see the module docstring).

    Within one root nothing changes (``load_pool``: two skills of one name in one root are both routed, as
    before); across roots a name held by an earlier root shadows the later skill, and an id held by an earlier
    root gets the later root's position as a prefix. Raises as ``load_pool`` does, and PoolError if a prefixed
    id still collides (a folder named like ``2:tools/lint`` in an earlier root)."""
    if not paths:
        raise ValueError("no skill pool given")
    out, ids = PoolLoad(), _Ids()
    owner: dict[str, Skill] = {}  # normalised name -> the skill routed under it
    for position, path in enumerate(paths, 1):
        load = load_pool(path, max_file_bytes, log, cache_dir, parsed_files)
        out.rejected += load.rejected
        out.files.unchanged += load.files.unchanged
        out.files.parsed += load.files.parsed
        kept_here = []
        for skill in gently(load.skills):
            if (kept := owner.get(normalise_name(skill.name))) is not None:
                out.shadowed.append(Shadowed(skill, kept))
                continue
            if skill.id in ids.where:
                skill = replace(skill, id=f"{position}:{skill.id}")
            ids.claim(skill.id, skill.source)
            kept_here.append(skill)
        for skill in kept_here:  # a root's names shadow the later roots' skills, not each other
            owner.setdefault(normalise_name(skill.name), skill)
        out.skills += kept_here
    return out
