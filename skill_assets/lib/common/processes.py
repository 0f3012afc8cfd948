"""Whether the process that left something behind (a temp folder, a STARTED run) is still alive.

A pid alone is not enough: pids are reused, and in a container the same small pid comes back
at every start, so a killed run's leftovers would look like the current process's own. A
token is the pid plus the process's start time (from ``/proc``, where there is one), which no
later process shares.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def read_stat(pid: int) -> tuple[str, list[str]] | None:
    """(command name, the fields after it) of ``/proc/<pid>/stat``, or None once the process has ended (or where
    there is no /proc). The fields start with the state, ppid and pgrp (``man 5 proc`` fields 3, 4, 5); the name
    sits in parentheses and may itself hold spaces or ')', so the fields are split after its last ')'."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name, rest = text.split("(", 1)[1].rsplit(")", 1)
    return name, rest.split()


def live_stats() -> dict[int, tuple[str, list[str]]]:
    """``read_stat`` of every process in ``/proc`` that is not a zombie, by pid."""
    stats = {}
    for entry in Path("/proc").glob("[0-9]*"):
        stat = read_stat(int(entry.name))
        if stat is not None and stat[1][0] != "Z":
            stats[int(entry.name)] = stat
    return stats


def _start_time(pid: int) -> str | None:
    stat = read_stat(pid)
    return stat[1][19] if stat else None  # field 22 (starttime), counted after the command name


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


def group_members(pgid: int) -> list[int]:
    """Pids of the live (not zombie) processes in process group ``pgid``, read from ``/proc``."""
    return [pid for pid, (_, fields) in live_stats().items() if int(fields[2]) == pgid]


def stop_process_group(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """SIGTERM the process group that ``proc`` leads (started with ``start_new_session=True``), SIGKILL what is
    left after ``grace_s``, and return only once no process of the group is alive.

    Stopping the leader alone is not enough for a multi-process program such as Chromium: its
    renderer and utility children go on writing into the profile folder for a moment, and a caller
    that removes that folder next fails with "Directory not empty".
    """
    pgid = proc.pid
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 30.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + wait_s
        while True:
            proc.poll()  # reap the leader; other members are reaped by their own parents or by init
            if not group_members(pgid):
                return
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
    raise RuntimeError(f"process group {pgid} still has {group_members(pgid)} after SIGKILL")
