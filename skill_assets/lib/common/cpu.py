"""What this machine's CPU is, read from ``/proc/cpuinfo``: one reader for the backend choice and the benches.

Nothing here times anything: a CPU's model and flags are the same on a busy machine and a quiet one.
Where ``/proc/cpuinfo`` is missing (macOS, Windows) the lines are empty and ``platform`` names the CPU.
"""
from __future__ import annotations

import functools
import platform
from pathlib import Path


@functools.cache
def cpuinfo() -> tuple[str, ...]:
    """The lines of ``/proc/cpuinfo`` (none where it is missing)."""
    try:
        return tuple(Path("/proc/cpuinfo").read_text().splitlines())
    except OSError:
        return ()


def cpu_flags() -> set[str]:
    """The CPU's feature flags: x86 ``flags`` lines and Arm ``Features`` lines."""
    return {flag for line in cpuinfo() if line.startswith(("flags", "Features")) for flag in line.split(":", 1)[-1].split()}


def cpu_model() -> str:
    """The CPU's model name, as a results page quotes it."""
    names = [line.split(":", 1)[1].strip() for line in cpuinfo() if line.startswith("model name")]
    return names[0] if names else platform.processor() or platform.machine()
