"""Versions stamped on every reported number, so a figure can be traced to its code and data."""
from __future__ import annotations

import subprocess
from functools import lru_cache
from pathlib import Path

from skill_assets import __version__


@lru_cache(maxsize=1)
def code_version() -> str:
    """Package version plus the git commit of the checkout (and '+dirty' for local edits), when there is one."""
    root = Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return __version__
    return f"{__version__}+{sha}{'.dirty' if dirty else ''}" if sha else __version__
