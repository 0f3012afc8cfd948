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
    """Export date plus a hash of (query id, split, ground truth): equal benchmarks share it, changed ones never do.

    The ground truth is part of it because a review can correct a label without moving a query.
    """
    labels = queries["skill_ids"].to_list() if "skill_ids" in queries.columns else [None] * queries.height
    key = digest("\n".join(f"{q}\t{s}" + (f"\t{','.join(sorted(ids))}" if ids is not None else "")
                           for q, s, ids in zip(queries["query_id"].to_list(), queries["split"].to_list(), labels)))
    return f"{datetime.now(UTC):%Y%m%d}-{key[:8]}"
