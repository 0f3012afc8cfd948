"""Write one bench's section of docs/RESULTS.md: measured figures live there, written by the benches themselves.

Each section sits between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->`` and is replaced whole on
the next run, with the date, the commit and the CPU model it was measured on (never a machine path).
"""
from __future__ import annotations

import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from skill_assets.lib.common.cpu import cpu_model

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "RESULTS.md"
HEADER = "# Measured results\n\nEach section is written by the bench it names; rerun the bench to refresh it.\n"


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=RESULTS.parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write_section(name: str, body: str, path: Path = RESULTS) -> None:
    """Replace (or append) the section ``name`` of ``path`` with ``body`` and a line saying when and where."""
    stamp = f"_Measured {datetime.now(UTC):%Y-%m-%d} on commit {_commit()}, {cpu_model()}, `bench/{name.replace('-', '_')}.py`._"
    block = f"<!-- bench:{name} -->\n## {name}\n\n{stamp}\n\n{body.strip()}\n<!-- /bench:{name} -->"
    text = path.read_text(encoding="utf-8") if path.is_file() else HEADER
    pattern = re.compile(rf"<!-- bench:{re.escape(name)} -->.*?<!-- /bench:{re.escape(name)} -->", re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")
