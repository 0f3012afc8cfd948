"""The ingest's private temp folder: removed on every exit path, and a killed run's removed at the next start.

Clones and archive extractions live here while a source is read. ``try/finally`` covers errors
and Ctrl-C, but not ``kill -9``; so the folder's name carries its process's token, and each
ingest first removes the folders whose process is gone.
"""
from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from skill_assets.lib.common.processes import process_token, token_alive

PREFIX = "skill-assets-ingest-"


def remove_stale_workdirs(base: Path) -> list[Path]:
    """Remove the ingest folders under ``base`` left by processes that no longer run; return them."""
    removed = []
    for path in sorted(base.glob(PREFIX + "*")):
        token = path.name[len(PREFIX):].rsplit("-", 1)[0]
        if path.is_dir() and not path.is_symlink() and not token_alive(token):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


@contextmanager
def ingest_workdir(base: Path | None = None) -> Iterator[tuple[Path, list[Path]]]:
    """(a fresh private folder under ``base`` (default: the system temp dir), stale folders removed first)."""
    base = Path(base or tempfile.gettempdir())
    removed = remove_stale_workdirs(base)
    path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{process_token()}-", dir=base))
    try:
        yield path, removed
    finally:
        shutil.rmtree(path, ignore_errors=True)
