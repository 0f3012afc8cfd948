"""Whether the process that left something behind (a temp folder, a STARTED run) is still alive.

A pid alone is not enough: pids are reused, and in a container the same small pid comes back
at every start, so a killed run's leftovers would look like the current process's own. A
token is the pid plus the process's start time (from ``/proc``, where there is one), which no
later process shares.
"""
from __future__ import annotations

import os
from pathlib import Path


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22 (starttime), counted after the command name


def process_token(pid: int | None = None) -> str:
    """``<pid>.<start time>`` of ``pid`` (default: this process); ``<pid>.0`` where /proc is absent."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}.{_start_time(pid) or 0}"


def token_alive(token: str) -> bool:
    """True if the process that ``token`` names is running (a malformed token counts as alive: never reap it)."""
    pid_text, _, start = token.partition(".")
    if not pid_text.isdigit():
        return True
    pid = int(pid_text)
    if Path("/proc").is_dir() and Path("/proc/self/stat").exists():
        return _start_time(pid) == start
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
