"""Skill sources: local directories, git repositories at a pinned commit, and archives.

Each source is brought to a local directory tree before ingest, with its provenance (repo,
commit, license). Archives are extracted into a private temporary directory by ``archives``
(skill and license members only, under limits; every member not extracted is a reject row);
clones and extractions are ``owned`` by the ingest and removed as soon as it has read them.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from skill_assets.lib.corpus.archives import DEFAULT_LIMITS as DEFAULT_ARCHIVE_LIMITS
from skill_assets.lib.corpus.archives import ArchiveError, ArchiveLimits, extract_skill_members

#: license text read to guess its SPDX id (``detect_license`` looks at the first 4,000 characters)
LICENSE_HEAD_BYTES = 16_000
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
    #: the tree is a clone or an extraction made for this ingest (removed after it), not the user's folder
    owned: bool = False

    def cleanup(self) -> None:
        if self.owned:
            shutil.rmtree(self.root, ignore_errors=True)


def detect_license(text: str) -> str | None:
    head = re.sub(r"\s+", " ", text[:4000].lower())
    for spdx, pattern in _LICENSE_HINTS:
        if re.search(pattern, head, re.S):
            return spdx
    return "other" if head.strip() else None


class LicenseUnreadable(OSError):
    """A license file beside skills that cannot be read; ``path`` names it."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path, self.why = path, why


def license_in(directory: Path) -> str | None:
    """SPDX id of the first license file in ``directory``; raise LicenseUnreadable if it is there but unreadable.

    Only regular files are read, never opened blocking (a FIFO named LICENSE), and only their head.
    """
    for name in LICENSE_FILES:
        f = directory / name
        try:
            st = os.stat(f)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise LicenseUnreadable(f, exc.strerror or str(exc)) from exc
        if stat.S_ISDIR(st.st_mode):
            continue
        if not stat.S_ISREG(st.st_mode):
            raise LicenseUnreadable(f, "not a regular file; not opened")
        try:
            fd = os.open(f, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            with os.fdopen(fd, "rb") as fh:
                head = fh.read(LICENSE_HEAD_BYTES)
        except OSError as exc:
            raise LicenseUnreadable(f, f"{type(exc).__name__}: {exc.strerror or exc}") from exc
        return detect_license(head.decode("utf-8", errors="replace"))
    return None


def redact_url_credentials(text: str) -> str:
    """``https://user:token@host`` → ``https://[REDACTED]@host``: git echoes remote URLs in its errors."""
    return re.sub(r"(\w+://)[^/@\s]+@", r"\1[REDACTED]@", text)


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
        # redact before truncating: a cut can leave part of a token that redaction no longer matches
        message = redact_url_credentials(f"git {' '.join(args)} failed: {proc.stderr.strip()}")
        raise SourceError(message[:400])
    return proc.stdout.strip()


def _root_license(root: Path, spec: SourceSpec, rejects: list[dict]) -> str | None:
    """The source-wide license; an unreadable one is a ``license_unreadable`` row, not an unreadable source."""
    try:
        return license_in(root)
    except LicenseUnreadable as exc:
        rejects.append({"source": spec.name, "path": exc.path.relative_to(root).as_posix(),
                        "reason": "license_unreadable", "message": exc.why})
        return None


def prepare_source(spec: SourceSpec, workdir: Path, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS) -> PreparedSource:
    """Bring a source to a local tree (cloning or extracting under ``workdir``); raise SourceError naming it.

    A clone or extraction that fails half-way is removed before the error is raised.
    """
    owned: Path | None = None
    rejects: list[dict] = []
    try:
        if spec.kind == "dir":
            root = Path(spec.location).expanduser()
            if not root.is_dir():
                raise SourceError(f"source {spec.name!r}: {root} is not a readable directory")
            commit = None
            if (root / ".git").exists():
                commit = _git("rev-parse", "HEAD", cwd=root)
            return PreparedSource(spec, root, commit, _root_license(root, spec, rejects), rejects)
        Path(workdir).mkdir(parents=True, exist_ok=True)  # clones and extractions go under it
        if spec.kind == "git":
            owned = root = Path(tempfile.mkdtemp(prefix=f"git-{spec.name}-", dir=workdir))
            _git("clone", "--quiet", spec.location, str(root))
            if spec.commit:
                _git("checkout", "--quiet", spec.commit, cwd=root)
            commit = _git("rev-parse", "HEAD", cwd=root)
            return PreparedSource(spec, root, commit, _root_license(root, spec, rejects), rejects, owned=True)
        if spec.kind == "archive":
            archive = Path(spec.location).expanduser()
            if not archive.is_file():
                raise SourceError(f"source {spec.name!r}: archive {archive} does not exist")
            owned = root = Path(tempfile.mkdtemp(prefix=f"archive-{spec.name}-", dir=workdir))
            rejects = extract_skill_members(archive, root, spec.name, limits)
            return PreparedSource(spec, root, spec.commit, _root_license(root, spec, rejects), rejects, owned=True)
    except BaseException as exc:
        if owned is not None:
            shutil.rmtree(owned, ignore_errors=True)
        if isinstance(exc, (ArchiveError, OSError)):
            raise SourceError(f"source {spec.name!r} ({spec.location}): {exc}") from exc
        raise
    raise SourceError(f"source {spec.name!r}: unknown kind {spec.kind!r} (dir, git or archive)")
