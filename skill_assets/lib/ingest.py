"""Find SKILL.md files under source directories and turn each into a raw skill or a reject.

Every file seen ends in exactly one of the two outputs, so counts reconcile downstream: nothing
is silently dropped.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from skill_assets.lib.frontmatter import SkillParseError, parse_skill_markdown
from skill_assets.lib.hashing import content_hash, digest, normalise_name
from skill_assets.lib.language import detect_language

SKILL_FILE_NAME = "skill.md"
DEFAULT_MAX_BYTES = 1_000_000


@dataclass(frozen=True)
class SkillSource:
    """A directory tree of skills; ``name`` prefixes every skill id found under it."""

    name: str
    root: Path

    @classmethod
    def from_path(cls, path: str | Path) -> "SkillSource":
        root = Path(path).expanduser()
        return cls(name=root.resolve().name or "root", root=root)


@dataclass
class IngestResult:
    raw_skills: list[dict]
    rejects: list[dict]
    files_seen: int


def _reject(source: SkillSource, rel: str, code: str, message: str, now: datetime) -> dict:
    return {"source": source.name, "path": rel, "reason": code, "message": message, "ingested_at": now}


def _iter_skill_files(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for filename in sorted(filenames):
            if filename.lower() == SKILL_FILE_NAME:
                yield Path(dirpath) / filename


def read_skill_file(path: Path, source: SkillSource, max_bytes: int, now: datetime) -> dict:
    """Read and parse one file; raise SkillParseError with a reason code on bad input."""
    root = source.root.resolve()
    if path.is_symlink() and not path.resolve().is_relative_to(root):
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
    rel_dir = path.parent.relative_to(source.root).as_posix()
    skill_id = f"{source.name}/{rel_dir}" if rel_dir != "." else source.name
    language = detect_language(parsed.description + "\n" + parsed.body)
    return {
        "skill_id": skill_id,
        "source": source.name,
        "path": path.relative_to(source.root).as_posix(),
        "name": parsed.name,
        "description": parsed.description,
        "body": parsed.body,
        "language": language,
        "name_language": detect_language(parsed.name),
        "description_language": detect_language(parsed.description),
        "body_language": detect_language(parsed.body),
        "file_hash": digest(data),
        "name_hash": digest(normalise_name(parsed.name)),
        "content_hash": content_hash(parsed.description, parsed.body),
        "n_bytes": size,
        "extra_front_matter": json.dumps(parsed.extra, default=str, ensure_ascii=False, sort_keys=True),
        "ingested_at": now,
    }


def ingest_sources(sources: list[SkillSource], max_bytes: int = DEFAULT_MAX_BYTES) -> IngestResult:
    """Ingest every source; an unreadable source becomes a reject row naming it, others still ingest."""
    now = datetime.now(timezone.utc)
    raw: list[dict] = []
    rejects: list[dict] = []
    seen = 0
    for source in sources:
        if not source.root.is_dir():
            rejects.append(_reject(source, str(source.root), "source_unreadable",
                                   f"source {source.name!r} is not a readable directory: {source.root}", now))
            continue
        for path in _iter_skill_files(source.root):
            seen += 1
            rel = path.relative_to(source.root).as_posix()
            try:
                raw.append(read_skill_file(path, source, max_bytes, now))
            except SkillParseError as exc:
                rejects.append(_reject(source, rel, exc.code, exc.message, now))
            except OSError as exc:
                rejects.append(_reject(source, rel, "unreadable", f"{type(exc).__name__}: {exc}", now))
    return IngestResult(raw_skills=raw, rejects=rejects, files_seen=seen)
