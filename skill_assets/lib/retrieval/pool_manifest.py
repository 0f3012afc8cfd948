"""What a folder pool's SKILL.md files parsed to last time, so a warm start reparses only the files that changed.

Reading the shared corpus (7,235 SKILL.md files) parses 7,235 YAML front matters to find the same skills as the
run before: 1.4 to 2.1 s on two busy cores (load average 5), 0.3 to 0.6 s through the manifest. The manifest keeps each file's parse outcome (the skill, or the
reject's reason) under the file's ``lstat`` identity: size, mtime and ctime in nanoseconds, inode and device.
A file whose identity is unchanged is taken from the manifest; any other is read and parsed as always
(``skill_files.read_skill``: the same rules and reasons). Only plain files are kept (a symlink's verdict
depends on its target, read every time), only outcomes that depend on the bytes alone (not ``unreadable``),
and no file changed in the last ``RACY_SECONDS`` before it was read: a second write within the file system's
timestamp tick could leave its identity unchanged (git's "racy" index entries).

A manifest names the reading rules it was made under: a digest of the source of the modules that read and parse
a skill file (this one, ``skill_files``, ``frontmatter``) and PyYAML's version. Under other rules (a new limit, a
new reason) it is not used and every file is parsed again, instead of serving verdicts the new rules would not give.

Two files per pool root and size cap, in the index cache's ``pools/`` folder: ``<key>.json``, sealed like every
cache manifest (``cache_files.sealed_json``: names, descriptions, the verdicts, the checksum of the bodies
file) and ``<key>.<checksum>.bodies``, every body in UTF-8 end to end. A damaged one (the seal, the bodies'
checksum, a span out of range) is discarded with one log line naming it and the pool is read afresh.
"""
from __future__ import annotations

import functools
import json
import logging
import os
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from skill_assets.lib.common import cache_files
from skill_assets.lib.core import frontmatter, skill_files
from skill_assets.lib.core.frontmatter import ParsedSkill, SkillParseError
from skill_assets.lib.common.hashing import digest

MANIFEST_FORMAT = "pool-manifest-v1"
#: a file written this recently when it was read is parsed again next time (see the module docstring)
RACY_SECONDS = 2.0
#: reasons that say something about the moment, not the bytes: never kept
TRANSIENT_REASONS = frozenset({"unreadable"})
_FOLDER = "pools"
_log = logging.getLogger(__name__)


@functools.cache
def reading_rules() -> str:
    """A digest of what decides a file's parse outcome: the reading and parsing modules' source, PyYAML's version."""
    sources = [Path(m.__file__).read_bytes() for m in (frontmatter, skill_files, sys.modules[__name__])]
    return digest(b"\0".join([*sources, yaml.__version__.encode()]))


def file_identity(st: os.stat_result) -> list[int]:
    """What must be unchanged for a file's last parse outcome to stand."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


@dataclass
class ManifestStats:
    """How a folder pool was read: files taken from the manifest, files parsed now."""

    unchanged: int = 0
    parsed: int = 0


#: one file's kept parse outcome: its identity when it was read (``file_identity``), and what it parsed to
Kept = tuple[list[int], ParsedSkill | SkillParseError]
#: a folder root's walk (``skill_files.walk_skill_paths``) in its order, each candidate file with its ``lstat`` where
#: the walk took one (None: taken when the file is read)
Walk = list[tuple[str | skill_files.FolderReject, os.stat_result | None]]


def walked_now(root: Path) -> Walk:
    """``root``'s walk taken now, each file's ``lstat`` left to the read."""
    return [(entry, None) for entry in skill_files.walk_skill_paths(root)]


class ParsedFiles:
    """The parse outcomes of one pool root's files, kept in memory from one read to the next.

    ``outcome(rel, st)`` answers from the last read for a file whose identity ``st`` is unchanged (else None);
    ``record`` keeps what was parsed now; after the read, ``kept`` holds every outcome the next read may reuse.
    ``serve --watch`` reads its pool through these on every reload: the manifest file (``PoolManifest``) would be
    loaded and written again each time, two JSON passes over 10,000 entries, sealed, in the serving process.
    ``walk``: the root's walk with each file's ``lstat``, where the caller took it just now (the watcher's look at
    the pool, which decided the reload: walking and stat-ing 10,000 files again was half of each reload's read)."""

    def __init__(self, last: dict[str, Kept] | None = None, walk: Walk | None = None) -> None:
        self.stats = ManifestStats()
        self.kept: dict[str, Kept] = {}
        self._last: dict[str, Kept] | dict[str, list] = last or {}
        self._walk = walk
        self._started_ns = time.time_ns()

    def walk(self, root: Path) -> Walk:
        """The root's candidate files in walk order: the walk given, else one taken now (``walked_now``)."""
        return self._walk if self._walk is not None else walked_now(root)

    def outcome(self, rel: str, st: os.stat_result) -> ParsedSkill | SkillParseError | None:
        """The last parse outcome of the plain file ``rel`` (relative to the root) if its identity is unchanged."""
        entry = self._last.get(rel)
        if entry is None or not stat.S_ISREG(st.st_mode) or entry[0] != file_identity(st):
            return None
        kept = self.kept[rel] = self._kept(entry)
        self.stats.unchanged += 1
        return kept[1]

    def _kept(self, entry: Kept) -> Kept:
        """A last read's entry as this read keeps it: the same tuple, not a new one per file and read (each reload
        of ``serve --watch`` would leave 10,000 more objects for the garbage collector to walk)."""
        return entry

    def record(self, rel: str, st: os.stat_result, found: ParsedSkill | SkillParseError) -> None:
        """Keep what ``rel`` parsed to now (``st``: its ``lstat`` taken before it was read), where it may be kept."""
        self.stats.parsed += 1
        recent = self._started_ns - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_SECONDS * 1e9
        if (stat.S_ISREG(st.st_mode) and not recent
                and not (isinstance(found, SkillParseError) and found.code in TRANSIENT_REASONS)):
            self.kept[rel] = (file_identity(st), found)

    def save(self) -> None:
        """Nothing to write: the outcomes stay in ``kept``, for the next read."""


class PoolManifest(ParsedFiles):
    """``ParsedFiles`` read from and written to ``<cache_dir>/pools/``, from one run to the next: ``save`` writes the
    manifest when anything differs from what was loaded.
    """

    def __init__(self, cache_dir: Path, root: Path, max_file_bytes: int) -> None:
        super().__init__()
        root_key = digest(json.dumps([MANIFEST_FORMAT, os.path.realpath(root), max_file_bytes]))[:24]
        self.directory = Path(cache_dir) / _FOLDER
        self.path = self.directory / f"{root_key}.json"
        self._bodies = b""
        self._load()

    def _load(self) -> None:
        if not self.path.is_file():
            return
        at_fault = self.path
        try:
            content = cache_files.unseal_json(self.path.read_text(encoding="utf-8"))
            if content["rules"] != reading_rules():
                return  # made under other reading rules: every file is parsed again, and the manifest rewritten
            files, bodies_name = content["files"], content["bodies"]
            bodies = self.directory / bodies_name
            at_fault = bodies
            data = bodies.read_bytes()
            if cache_files.checksum(data) != content["bodies_sha256"]:
                raise ValueError(f"its content does not match the checksum recorded in {self.path.name}")
            for entry in files.values():
                if entry[1] == "ok" and not 0 <= entry[4] <= entry[5] <= len(data):
                    raise ValueError(f"a body span {entry[4:6]} lies outside its {len(data)} bytes")
        except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:  # JSONDecodeError is a ValueError
            cache_files.discard_damaged(at_fault, f"{type(exc).__name__}: {exc}"[:200])
            if at_fault != self.path:
                self.path.unlink(missing_ok=True)
            return
        self._last, self._bodies = files, data

    def _kept(self, entry: list) -> Kept:
        if entry[1] == "ok":
            return entry[0], ParsedSkill(entry[2], entry[3], self._bodies[entry[4]:entry[5]].decode("utf-8"))
        return entry[0], SkillParseError(entry[2], entry[3])

    def save(self) -> None:
        """Write the manifest of this read (files gone since are dropped), unless it is the one loaded."""
        if not self.stats.parsed and len(self.kept) == len(self._last):
            return
        files: dict[str, list] = {}
        parts: list[bytes] = []
        at = 0
        for rel, (identity, found) in self.kept.items():
            if isinstance(found, SkillParseError):
                files[rel] = [identity, "rejected", found.code, found.message]
                continue
            body = found.body.encode("utf-8")
            files[rel] = [identity, "ok", found.name, found.description, at, at + len(body)]
            parts.append(body)
            at += len(body)
        data = b"".join(parts)
        data_sha = cache_files.checksum(data)
        bodies = self.directory / f"{self.path.stem}.{data_sha[:16]}.bodies"
        try:
            with cache_files.atomic_output(bodies) as tmp:
                tmp.write_bytes(data)
            manifest = {"format": MANIFEST_FORMAT, "rules": reading_rules(), "files": files, "bodies": bodies.name,
                        "bodies_sha256": data_sha}
            cache_files.write_text_atomic(self.path, cache_files.sealed_json(manifest))
        except OSError as exc:  # a read-only cache: the pool was read all the same, the next start parses again
            _log.warning("pool manifest %s not written (%s): the next start parses every file again", self.path,
                         exc.strerror or exc)
            return
        for old in self.directory.glob(f"{self.path.stem}.*.bodies"):
            if old != bodies:
                old.unlink(missing_ok=True)
