"""Find SKILL.md files in prepared sources and turn each into a raw skill or a reject.

Every file seen ends in exactly one of the two outputs, so counts reconcile downstream: nothing
is silently dropped. A source that cannot be prepared at all becomes one ``source_unreadable``
reject naming it, and the other sources still ingest. Large corpora are parsed in worker
processes (parsing is CPU-bound and independent per file).
"""
from __future__ import annotations

import json
import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from skill_assets.lib.common.hashing import digest, normalise_name, normalise_text, normalised_content_hash
from skill_assets.lib.common.language import detect_language, language_of_counts, script_counts
from skill_assets.lib.corpus.frontmatter import SkillParseError, parse_skill_markdown
from skill_assets.lib.corpus.sources import PreparedSource, SourceError, SourceSpec, license_in, prepare_source

SKILL_FILE_NAME = "skill.md"
DEFAULT_MAX_BYTES = 1_000_000
PARALLEL_MIN_FILES = 2000


@dataclass
class IngestResult:
    raw_skills: list[dict]
    rejects: list[dict]
    files_seen: int


def iter_skill_files(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for filename in sorted(filenames):
            if filename.lower() == SKILL_FILE_NAME:
                yield Path(dirpath) / filename


def read_skill_file(path: Path, root: Path, max_bytes: int) -> dict:
    """Read and parse one file; raise SkillParseError with a reason code on bad input."""
    if path.is_symlink() and not path.resolve().is_relative_to(root.resolve()):
        raise SkillParseError("symlink_outside_source", f"symlink points outside the source: {path.resolve()}")
    size = path.stat().st_size
    if size > max_bytes:
        raise SkillParseError("too_large", f"{size} bytes exceeds the cap of {max_bytes}")
    data = path.read_bytes()
    if b"\x00" in data:
        raise SkillParseError("binary", "file contains NUL bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillParseError("not_utf8", f"not valid UTF-8 at byte {exc.start}") from exc
    parsed = parse_skill_markdown(text)
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
        except OSError as exc:
            out.append((p, None, "unreadable", f"{type(exc).__name__}: {exc}"))
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


def _parsed(files: list[str], root: Path, max_bytes: int, workers: int) -> Iterator[tuple]:
    """Parse results in file order, consumed while the workers run (never all held at once)."""
    if workers > 1 and len(files) >= PARALLEL_MIN_FILES:
        chunk = max(200, len(files) // (workers * 16))
        batches = [(files[i : i + chunk], str(root), max_bytes) for i in range(0, len(files), chunk)]
        # spawned, not forked: a forked worker maps the parent's whole heap (a Dagster run, a loaded
        # model) and counts it in its own footprint; a spawned one holds only the parser
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            for batch in pool.map(_read_batch, batches):
                yield from batch
    else:
        yield from _read_batch((files, str(root), max_bytes))


def _ingest_one(src: PreparedSource, max_bytes: int, workers: int, now: datetime,
                raw: _RowBuffer, rejects: list[dict]) -> int:
    files = [str(p) for p in iter_skill_files(src.root)]
    licenses: dict[Path, str | None] = {}

    def nearest_license(folder: Path) -> str | None:
        """License file of the skill folder or its nearest ancestor inside the source."""
        if folder not in licenses:
            found = license_in(folder)
            if found is None and folder != src.root and src.root in folder.parents:
                found = nearest_license(folder.parent)
            licenses[folder] = found
        return licenses[folder]

    for path_str, row, code, message in _parsed(files, src.root, max_bytes, workers):
        path = Path(path_str)
        rel = path.relative_to(src.root).as_posix()
        if row is None:
            rejects.append({"source": src.spec.name, "path": rel, "reason": code, "message": message, "ingested_at": now})
            continue
        rel_dir = path.parent.relative_to(src.root).as_posix()
        raw.add({"skill_id": src.spec.name if rel_dir == "." else f"{src.spec.name}/{rel_dir}",
                    "source": src.spec.name, "path": rel, "repo": src.spec.repo or src.spec.location,
                    "commit": src.commit, "license": nearest_license(path.parent) or src.license,
                    **row, "ingested_at": now})
    return len(files)


def ingest_sources(specs: list[SourceSpec], workdir: Path, max_bytes: int = DEFAULT_MAX_BYTES,
                   workers: int = 1, sink: Callable[[list[dict]], None] | None = None,
                   sink_batch: int = 5000) -> IngestResult:
    """Ingest every source. With ``sink``, full rows go to it in batches (e.g. appended to DuckDB) and
    ``raw_skills`` holds them without their heavy text fields, so memory stays flat at 100K files."""
    now = datetime.now(UTC)
    raw: list[dict] = []
    buffer = _RowBuffer(raw, sink, sink_batch)
    rejects: list[dict] = []
    seen = 0
    for spec in specs:
        try:
            src = prepare_source(spec, workdir)
        except SourceError as exc:
            rejects.append({"source": spec.name, "path": spec.location, "reason": "source_unreadable",
                            "message": str(exc), "ingested_at": now})
            continue
        rejects.extend({**r, "ingested_at": now} for r in src.member_rejects)
        seen += len(src.member_rejects)
        seen += _ingest_one(src, max_bytes, workers, now, buffer, rejects)
    buffer.flush()
    return IngestResult(raw_skills=raw, rejects=rejects, files_seen=seen)
