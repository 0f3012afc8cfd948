"""Cache files that a crash cannot tear and a damaged copy cannot wedge: one way to write them, one way to drop them.

Every on-disk cache (embedding shards, BM25 arrays, gate verdicts, the int8 ONNX export) is
written through ``atomic_output``: the bytes go to a private temporary path beside the target,
named after this process, and reach the target in one ``os.replace``, so a reader sees the old
file or the whole new one, never part of either, and two writers never share a half-written file.
A ``kill -9`` can still leave a temporary path behind; the next writer in that folder removes the
ones whose process is gone. A reader that finds a cache file it cannot use calls ``discard_damaged``:
one log line, the file is removed, and the caller rebuilds it, instead of failing on every run.

A file that loads can still be wrong: a flipped byte, NaN written over a row, two ids swapped by
hand. So a cache's manifest records a checksum of each file it describes (``file_checksum``) and
of its own content (``sealed_json`` / ``unseal_json``), and a reader compares them before it uses
anything: a mismatch is a damaged file like any other.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

#: ``.<name>.<pid>.<8 hex>.tmp<suffix>``, and anything a writer derives from such a path (``….tmp.raw.onnx``)
_TEMPORARY = re.compile(r"^\..+\.(\d+)\.[0-9a-f]{8}\.tmp")


def _temporary_path(target: Path) -> Path:
    """A path beside ``target`` no other writer uses; it keeps the suffix, since some writers infer a format from it."""
    return target.with_name(f".{target.stem}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp{target.suffix}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def remove_orphans(directory: Path) -> None:
    """Remove temporary paths in ``directory`` left by writers that were killed (their process is gone)."""
    try:
        entries = list(directory.iterdir())
    except OSError:
        return
    for entry in entries:
        if (m := _TEMPORARY.match(entry.name)) and int(m.group(1)) != os.getpid() and not _alive(int(m.group(1))):
            _remove(entry)


def keep_newest(directory: Path, keep: int, used: Path) -> None:
    """Remove all but the ``keep`` most recently used entries of ``directory`` (by modification time; ``used``, the
    entry the caller has just written or read, is marked used now and never removed). A content-addressed cache
    that gains an entry for every version of its input (a watched pool's BM25 index after each edit, 15 MB at
    10,000 skills) would otherwise grow for as long as the server runs. A process still reading a removed entry
    keeps its open files; one that looks it up next rebuilds it."""
    try:
        os.utime(used)
        entries = [e for e in directory.iterdir() if not _TEMPORARY.match(e.name)]
    except OSError:  # a read-only cache (a prebuilt index in an image) is read as it is
        return
    for entry in sorted(entries, key=_used_at, reverse=True)[keep:]:
        if entry != used:
            _remove(entry)


def _used_at(entry: Path) -> float:
    try:
        return entry.stat().st_mtime
    except OSError:  # removed meanwhile by another process
        return 0.0


def _fsync_tree(path: Path) -> None:
    """Flush what was written, so a power cut after the rename cannot leave a renamed but empty file."""
    for f in ([path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]):
        with f.open("rb") as fh:
            os.fsync(fh.fileno())


@contextmanager
def atomic_output(target: Path) -> Iterator[Path]:
    """Yield a fresh temporary path beside ``target``; write a file or a folder there. On a clean exit it
    replaces ``target`` in one rename; on any error, or if the rename fails, it is removed and the error raised.

    A folder cannot replace a non-empty folder: the rename then raises ``OSError`` (another writer's
    complete copy is already in place), which a caller of a content-addressed cache may simply ignore.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_orphans(target.parent)
    tmp = _temporary_path(target)
    try:
        yield tmp
        _fsync_tree(tmp)
        os.replace(tmp, target)
    except BaseException:
        _remove(tmp)
        raise


def write_text_atomic(target: Path, text: str) -> None:
    with atomic_output(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


def checksum(data: bytes) -> str:
    """The checksum a cache records for ``data``: its SHA-256, hex."""
    return hashlib.sha256(data).hexdigest()


def file_checksum(path: Path) -> str:
    """``checksum`` of a file's bytes, read in chunks (a memory-mapped array is read once more, never held)."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _canonical(content: object) -> bytes:
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sealed_json(content: object) -> str:
    """``content`` as JSON beside the checksum of its canonical form: ``{"sha256": ..., "content": ...}``."""
    return json.dumps({"sha256": checksum(_canonical(content)), "content": content})


def unseal_json(text: str) -> object:
    """The content of a ``sealed_json`` text; ValueError when it is not JSON, not sealed, or was changed since."""
    sealed = json.loads(text)
    if not (isinstance(sealed, dict) and isinstance(sealed.get("sha256"), str) and "content" in sealed):
        raise ValueError("no checksum: not a sealed cache manifest")
    if checksum(_canonical(sealed["content"])) != sealed["sha256"]:
        raise ValueError("content does not match its checksum")
    return sealed["content"]


def discard_damaged(path: Path, why: str) -> None:
    """Log one line and remove ``path`` (a file or a folder), so the caller rebuilds it."""
    log.warning("damaged cache file %s (%s): removed, rebuilding it", path, why)
    _remove(path)
