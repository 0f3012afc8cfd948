"""Skill sources: local directories, git repositories at a pinned commit, and archives.

Each source is brought to a local directory tree before ingest, with its provenance (repo,
commit, license). Archives are extracted member by member into a private temporary directory;
a member with an absolute path, a ``..`` component or a link is never written and becomes a
reject row instead.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO

import yaml

LICENSE_FILES = ("LICENSE", "LICENSE.md", "LICENSE.txt", "LICENCE", "COPYING", "LICENSE-MIT", "LICENSE-APACHE")
_LICENSE_HINTS = (
    ("Apache-2.0", r"apache license,?\s+version 2\.0"),
    ("MIT", r"\bmit license\b|permission is hereby granted, free of charge"),
    ("BSD-3-Clause", r"redistribution and use in source and binary forms.*neither the name"),
    ("BSD-2-Clause", r"redistribution and use in source and binary forms"),
    ("GPL-3.0", r"gnu general public license\s+version 3"),
    ("MPL-2.0", r"mozilla public license,?\s+(version|v\.?)\s*2\.0"),
    ("CC-BY-4.0", r"creative commons attribution 4\.0"),
    ("Unlicense", r"this is free and unencumbered software"),
)


class SourceError(RuntimeError):
    """A source that cannot be read at all; the message names it."""


@dataclass(frozen=True)
class SourceSpec:
    """One configured source. ``kind`` is ``dir``, ``git`` or ``archive``."""

    name: str
    kind: str
    location: str
    commit: str | None = None
    repo: str | None = None


@dataclass
class PreparedSource:
    spec: SourceSpec
    root: Path
    commit: str | None
    license: str | None
    member_rejects: list[dict] = field(default_factory=list)


def detect_license(text: str) -> str | None:
    head = re.sub(r"\s+", " ", text[:4000].lower())
    for spdx, pattern in _LICENSE_HINTS:
        if re.search(pattern, head, re.S):
            return spdx
    return "other" if head.strip() else None


def license_in(directory: Path) -> str | None:
    for name in LICENSE_FILES:
        f = directory / name
        if f.is_file():
            return detect_license(f.read_text(errors="replace"))
    return None


def load_source_specs(path: str | Path) -> list[SourceSpec]:
    """Read a sources YAML: ``sources: [{name, kind, location, commit?, repo?, subfolders?}, ...]``."""
    data = yaml.safe_load(Path(path).read_text()) or {}
    specs = []
    for i, entry in enumerate(data.get("sources", [])):
        if not isinstance(entry, dict) or "location" not in entry:
            raise SourceError(f"{path}: source #{i + 1} needs at least a 'location'")
        location = str(entry["location"])
        if entry.get("subfolders"):
            specs += subfolder_specs(location)
            continue
        kind = entry.get("kind") or guess_kind(location)
        name = entry.get("name") or default_name(location)
        specs.append(SourceSpec(name, kind, location, entry.get("commit"), entry.get("repo")))
    return specs


def subfolder_specs(location: str) -> list[SourceSpec]:
    """One ``dir`` source per immediate subfolder of ``location``, named like the folder, in name order.

    A folder of repository snapshots named ``<owner>__<repo>`` then yields the skill ids
    ``<owner>__<repo>/<skill folder>``, the same as git sources of those repositories named alike."""
    root = Path(location).expanduser()
    if not root.is_dir():
        raise SourceError(f"{location} is not a readable directory (subfolders: true)")
    return [SourceSpec(d.name, "dir", str(d)) for d in sorted(root.iterdir())
            if d.is_dir() and not d.name.startswith(".")]


def guess_kind(location: str) -> str:
    if location.endswith((".tar.gz", ".tgz", ".tar", ".zip")):
        return "archive"
    if location.endswith(".git") or location.startswith(("http://", "https://", "git@", "file://")):
        return "git"
    return "dir"


def default_name(location: str) -> str:
    base = re.sub(r"(\.git|\.tar\.gz|\.tgz|\.tar|\.zip)$", "", location.rstrip("/").split("/")[-1])
    return base or "source"


def _git(*args: str, cwd: Path | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SourceError(f"git {' '.join(args)} failed: {proc.stderr.strip()[:300]}")
    return proc.stdout.strip()


def _safe_member_path(name: str) -> PurePosixPath | None:
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or ".." in p.parts or re.match(r"^[a-zA-Z]:", name):
        return None
    return p


@dataclass(frozen=True)
class _Member:
    """One archive entry, whatever the archive format."""

    name: str
    is_dir: bool
    is_regular_file: bool
    open: Callable[[], IO[bytes] | None]


def _archive_members(archive: Path, stack: ExitStack) -> Iterator[_Member]:
    if zipfile.is_zipfile(archive):
        zf = stack.enter_context(zipfile.ZipFile(archive))
        for info in zf.infolist():
            is_link = (info.external_attr >> 16) & 0o170000 == 0o120000
            yield _Member(info.filename, info.is_dir(), not is_link, lambda info=info: zf.open(info))
        return
    try:
        tf = stack.enter_context(tarfile.open(archive))
    except tarfile.TarError as exc:
        raise SourceError(f"archive {archive} cannot be opened: {exc}") from exc
    for member in tf.getmembers():
        yield _Member(member.name, member.isdir(), member.isfile(), lambda m=member: tf.extractfile(m))


def extract_archive(archive: Path, dest: Path, source_name: str) -> list[dict]:
    """Extract regular files only; return reject rows for unsafe or link members."""
    rejects: list[dict] = []
    with ExitStack() as stack:
        for member in _archive_members(archive, stack):
            if member.is_dir:
                continue
            rel = _safe_member_path(member.name)
            problem = (("unsafe_archive_path", "absolute or '..' path in archive; not extracted") if rel is None
                       else ("archive_link", "link or special member in archive; not extracted")
                       if not member.is_regular_file else None)
            if problem:
                rejects.append({"source": source_name, "path": member.name, "reason": problem[0],
                                "message": problem[1]})
                continue
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            src = member.open()
            if src is not None:
                with src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out)
    return rejects


def prepare_source(spec: SourceSpec, workdir: Path) -> PreparedSource:
    """Bring a source to a local tree (cloning or extracting under ``workdir``); raise SourceError naming it."""
    try:
        if spec.kind == "dir":
            root = Path(spec.location).expanduser()
            if not root.is_dir():
                raise SourceError(f"source {spec.name!r}: {root} is not a readable directory")
            commit = None
            if (root / ".git").exists():
                commit = _git("rev-parse", "HEAD", cwd=root)
            return PreparedSource(spec, root, commit, license_in(root))
        if spec.kind == "git":
            root = workdir / f"git-{spec.name}"
            _git("clone", "--quiet", spec.location, str(root))
            if spec.commit:
                _git("checkout", "--quiet", spec.commit, cwd=root)
            return PreparedSource(spec, root, _git("rev-parse", "HEAD", cwd=root), license_in(root))
        if spec.kind == "archive":
            archive = Path(spec.location).expanduser()
            if not archive.is_file():
                raise SourceError(f"source {spec.name!r}: archive {archive} does not exist")
            root = Path(tempfile.mkdtemp(prefix=f"archive-{spec.name}-", dir=workdir))
            rejects = extract_archive(archive, root, spec.name)
            return PreparedSource(spec, root, spec.commit, license_in(root), rejects)
    except SourceError:
        raise
    except OSError as exc:
        raise SourceError(f"source {spec.name!r} ({spec.location}): {exc}") from exc
    raise SourceError(f"source {spec.name!r}: unknown kind {spec.kind!r} (dir, git or archive)")
