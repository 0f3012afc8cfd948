"""Versions stamped on every reported number, so a figure can be traced to its code and data."""
from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

import polars as pl

from skill_assets import __version__
from skill_assets.lib.common.hashing import digest


@lru_cache(maxsize=1)
def code_version() -> str:
    """Package version plus the git commit of the checkout (and '+dirty' for local edits), when there is one."""
    root = Path(__file__).resolve().parents[3]
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return __version__
    return f"{__version__}+{sha}{'.dirty' if dirty else ''}" if sha else __version__


def release_version(queries: pl.DataFrame) -> str:
    """Export date plus a hash of (query id, split) pairs: equal benchmarks share it, changed ones never do."""
    key = digest("\n".join(f"{q}\t{s}" for q, s in zip(queries["query_id"].to_list(), queries["split"].to_list())))
    return f"{datetime.now(UTC):%Y%m%d}-{key[:8]}"
