"""Find SKILL.md files in prepared sources and turn each into a raw skill or a reject.

Every file seen ends in exactly one of the two outputs, so counts reconcile downstream: nothing
is silently dropped. Which files are candidates and how each is read are ``skill_files``' rules
(shared with the router); a folder that is skipped, a license file that cannot be read and a
source that cannot be prepared at all are listed too (``UNCOUNTED_REASONS``: they name no skill
file), and the other sources still ingest. Large corpora are parsed in worker processes
(parsing is CPU-bound and independent per file).
"""
from __future__ import annotations

import json
import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import chain, islice
from pathlib import Path

from skill_assets.lib.corpus.archives import DEFAULT_LIMITS as DEFAULT_ARCHIVE_LIMITS
from skill_assets.lib.corpus.archives import ArchiveLimits
from skill_assets.lib.core.frontmatter import SkillParseError
from skill_assets.lib.common.hashing import digest, normalise_name, normalise_text, normalised_content_hash
from skill_assets.lib.common.language import detect_language, language_of_counts, script_counts
from skill_assets.lib.core.skill_files import FOLDER_REASONS, FolderReject, read_skill, walk_skill_paths
from skill_assets.lib.corpus.sources import (
    LICENSE_FILES,
    LicenseUnreadable,
    PreparedSource,
    SourceError,
    SourceSpec,
    license_in,
    prepare_source,
)

DEFAULT_MAX_BYTES = 1_000_000
PARALLEL_MIN_FILES = 2000
#: reject rows that name a source, a folder or a license file rather than a skill file: not among ``files_seen``
UNCOUNTED_REASONS = ("source_unreadable", "license_unreadable", *FOLDER_REASONS)
#: license file names in any case: a folder with none of them listed holds none (on a case-insensitive
#: file system too, where ``license_in``'s stat of 'LICENSE' would find 'license')
_LICENSE_NAMES = frozenset(n.lower() for n in LICENSE_FILES)


@dataclass
class IngestResult:
    raw_skills: list[dict]
    rejects: list[dict]
    files_seen: int
    #: per configured source: name, kind, location, commit actually read (None if unreadable), files_seen
    sources_read: list[dict] = field(default_factory=list)


def read_skill_file(path: Path, root: Path, max_bytes: int) -> dict:
    """Read and parse one file into a raw row (without ids and provenance); raise SkillParseError with a reason."""
    data, parsed = read_skill(path, root, max_bytes)
    size = len(data)
    desc_counts, body_counts = script_counts(parsed.description), script_counts(parsed.body)
    normalised_body = normalise_text(parsed.body)
    return {
        "name": parsed.name,
        "description": parsed.description,
        "body": parsed.body,
        "language": language_of_counts(desc_counts[0] + body_counts[0], desc_counts[1] + body_counts[1]),
        "name_language": detect_language(parsed.name),
        "description_language": language_of_counts(*desc_counts),
        "body_language": language_of_counts(*body_counts),
        "file_hash": digest(data),
        "name_hash": digest(normalise_name(parsed.name)),
        "content_hash": normalised_content_hash(normalise_text(parsed.description), normalised_body),
        "body_chars": len(normalised_body),
        "n_bytes": size,
        "extra_front_matter": json.dumps(parsed.extra, default=str, ensure_ascii=False, sort_keys=True),
    }


def _read_batch(args: tuple[list[str], str, int]) -> list[tuple[str, dict | None, str, str]]:
    """Worker: (path, row, reason, message) per file; row is None for a reject."""
    paths, root, max_bytes = args
    out = []
    for p in paths:
        try:
            out.append((p, read_skill_file(Path(p), Path(root), max_bytes), "", ""))
        except SkillParseError as exc:
            out.append((p, None, exc.code, exc.message))
        except Exception as exc:  # noqa: BLE001 - e.g. front matter JSON cannot hold; one file never aborts ingest
            out.append((p, None, "parse_error", f"{type(exc).__name__}: {str(exc)[:200]}"))
    return out


#: the large text fields a sink takes away; the rows kept in memory carry everything else
HEAVY_FIELDS = ("description", "body", "extra_front_matter")


class _RowBuffer:
    """Collects raw rows; with a sink, hands them over in batches and keeps only light copies."""

    def __init__(self, raw: list[dict], sink: Callable[[list[dict]], None] | None, batch: int) -> None:
        self.raw, self.sink, self.batch, self.pending = raw, sink, batch, []

    def add(self, row: dict) -> None:
        if self.sink is None:
            self.raw.append(row)
            return
        self.pending.append(row)
        if len(self.pending) >= self.batch:
            self.flush()

    def flush(self) -> None:
        if self.sink is not None and self.pending:
            self.sink(self.pending)
            self.raw.extend({k: v for k, v in r.items() if k not in HEAVY_FIELDS} for r in self.pending)
            self.pending = []


#: files a worker parses per task: small enough that results flow back steadily, large enough to amortise the hand-off
WORKER_BATCH = 500


def _parsed(files: Iterator[str], root: Path, max_bytes: int, workers: int) -> Iterator[tuple]:
    """Parse results in file order, consumed while the workers run (never all held at once).

    ``files`` is consumed as the workers go: the walk of a large source overlaps its parsing instead of
    leaving the workers idle until it ends. Fewer than ``PARALLEL_MIN_FILES`` files are parsed here.
    """
    head = list(islice(files, PARALLEL_MIN_FILES))
    if workers <= 1 or len(head) < PARALLEL_MIN_FILES:
        yield from _read_batch((head + list(files), str(root), max_bytes))
        return
    batches = _batched(chain(head, files), WORKER_BATCH)
    # spawned, not forked: a forked worker maps the parent's whole heap (a Dagster run, a loaded
    # model) and counts it in its own footprint; a spawned one holds only the parser
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        pending: deque = deque()
        for batch in batches:
            pending.append(pool.submit(_read_batch, (batch, str(root), max_bytes)))
            # a few tasks queued per worker; results are taken in order as soon as they are ready
            while len(pending) > 4 * workers or (pending and pending[0].done()):
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()


def _batched(items: Iterable[str], size: int) -> Iterator[list[str]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


def _ingest_one(src: PreparedSource, max_bytes: int, workers: int, now: datetime,
                raw: _RowBuffer, rejects: list[dict]) -> int:
    """Ingest one prepared source; return how many skill files it held (the rows it added to either output)."""
    file_rejects: list[dict] = []

    def reject(path: Path, code: str, message: str, into: list[dict] = file_rejects) -> None:
        into.append({"source": src.spec.name, "path": path.relative_to(src.root).as_posix(), "reason": code,
                     "message": message, "ingested_at": now})

    root = str(src.root)
    prefix = root if root.endswith(os.sep) else root + os.sep

    def relative(path: str) -> str:
        """``path`` relative to the source root, POSIX-style ('.' for the root): a string slice for
        what the walk joined onto the root, pathlib only for what it did not (e.g. a root of '.')."""
        if path == root:
            return "."
        if path.startswith(prefix):
            return path[len(prefix):].replace(os.sep, "/")
        return Path(path).relative_to(src.root).as_posix()

    # whether each folder the walk listed holds an entry that may be a license file: the others need
    # no stat per license name (seven per skill folder, the largest cost of a 100K-file ingest)
    may_hold_license: dict[str, bool] = {}

    def listed(folder: str, names: list[str]) -> None:
        may_hold_license[relative(folder)] = any(n.lower() in _LICENSE_NAMES for n in names)

    # folder rejects come first, as when the walk ended before any file was parsed (rows stay in walk order)
    folder_rejects: list[dict] = []
    n_files = 0

    def candidates() -> Iterator[str]:
        nonlocal n_files
        for entry in walk_skill_paths(src.root, listed):
            if isinstance(entry, FolderReject):
                reject(entry.path, entry.code, entry.message, folder_rejects)
            else:
                n_files += 1
                yield entry

    licenses: dict[str, str | None] = {}

    def nearest_license(rel_dir: str) -> str | None:
        """License of the skill folder or its nearest ancestor inside the source; an unreadable one is listed and skipped."""
        if rel_dir == ".":
            return src.license
        if rel_dir not in licenses:
            found = None
            if may_hold_license.get(rel_dir, True):
                try:
                    found = license_in(src.root / rel_dir)
                except LicenseUnreadable as exc:
                    reject(exc.path, "license_unreadable", exc.why)
            licenses[rel_dir] = found or nearest_license(rel_dir.rpartition("/")[0] or ".")
        return licenses[rel_dir]

    owners: dict[str, str] = {}
    for path_str, row, code, message in _parsed(candidates(), src.root, max_bytes, workers):
        rel = relative(path_str)
        rel_dir = rel.rpartition("/")[0] or "."
        skill_id = src.spec.name if rel_dir == "." else f"{src.spec.name}/{rel_dir}"
        if row is not None and skill_id in owners:  # SKILL.md and skill.md in one folder
            row, code, message = None, "duplicate_id", f"skill id {skill_id!r} already taken by {owners[skill_id]}"
        if row is None:
            reject(Path(path_str), code, message)
            continue
        owners[skill_id] = rel
        raw.add({"skill_id": skill_id, "source": src.spec.name, "path": rel, "repo": src.spec.repo or src.spec.location,
                 "commit": src.commit, "license": nearest_license(rel_dir),
                 **row, "ingested_at": now})
    rejects.extend(folder_rejects)
    rejects.extend(file_rejects)
    return n_files


def ingest_sources(specs: list[SourceSpec], workdir: Path, max_bytes: int = DEFAULT_MAX_BYTES,
                   workers: int = 1, sink: Callable[[list[dict]], None] | None = None,
                   sink_batch: int = 5000, archive_limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS) -> IngestResult:
    """Ingest every source. With ``sink``, full rows go to it in batches (e.g. appended to DuckDB) and
    ``raw_skills`` holds them without their heavy text fields, so memory stays flat at 100K files.

    A clone or extraction is removed as soon as its source is read, on every exit path.
    """
    now = datetime.now(UTC)
    raw: list[dict] = []
    buffer = _RowBuffer(raw, sink, sink_batch)
    rejects: list[dict] = []
    seen = 0
    sources_read: list[dict] = []
    for spec in specs:
        read = {"source": spec.name, "kind": spec.kind, "location": spec.location, "commit": None, "files_seen": 0}
        sources_read.append(read)
        try:
            src = prepare_source(spec, workdir, archive_limits)
        except SourceError as exc:
            rejects.append({"source": spec.name, "path": spec.location, "reason": "source_unreadable",
                            "message": str(exc), "ingested_at": now})
            continue
        try:
            rejects.extend({**r, "ingested_at": now} for r in src.member_rejects)
            n = sum(r["reason"] not in UNCOUNTED_REASONS for r in src.member_rejects)
            n += _ingest_one(src, max_bytes, workers, now, buffer, rejects)
            read.update(commit=src.commit, files_seen=n)
            seen += n
        except OSError as exc:  # the source's root could not be listed
            rejects.append({"source": spec.name, "path": spec.location, "reason": "source_unreadable",
                            "message": f"source {spec.name!r}: {type(exc).__name__}: {exc}", "ingested_at": now})
        finally:
            src.cleanup()
    buffer.flush()
    return IngestResult(raw_skills=raw, rejects=rejects, files_seen=seen, sources_read=sources_read)
