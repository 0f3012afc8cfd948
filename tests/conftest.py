"""Shared fixtures: repository paths and the shared real-skill corpus (when present)."""
import os
from pathlib import Path

import pytest

from skill_assets.lib.common.processes import live_stats

pytest_plugins = ["fault_server"]  # the fault-injecting OpenAI-compatible server fixture

REPO = Path(__file__).resolve().parent.parent
SHARED_CORPUS = REPO.parent / "shared" / "corpus" / "github-skills" / "repos"


@pytest.fixture
def shared_corpus() -> Path:
    if not SHARED_CORPUS.is_dir():
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):  # CI has ../shared: a missing one is a failure
            pytest.fail(f"{SHARED_CORPUS} is missing under CI=true; CI checks out ../shared beside the clone")
        pytest.skip("../shared/corpus/github-skills is not beside this checkout")
    return SHARED_CORPUS


def _live_descendants(root: int) -> list[str]:
    """``pid command`` of every live process below ``root`` (children, grandchildren, ...), from ``/proc``."""
    stats = live_stats()
    children: dict[int, list[int]] = {}
    for pid, (_, fields) in stats.items():
        children.setdefault(int(fields[1]), []).append(pid)
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        if not _interpreter_helper(pid):
            found.append(f"{pid} {stats[pid][0]}")
    return found


#: helpers the interpreter and its libraries keep for the life of the process (multiprocessing's resource tracker and
#: fork server, joblib/loky's reusable workers): they end with pytest itself, no test started them
_HELPERS = (b"multiprocessing.resource_tracker", b"multiprocessing.forkserver", b"loky", b"joblib")


def _interpreter_helper(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # gone already
    return any(h in cmdline for h in _HELPERS)


def pytest_sessionfinish(session, exitstatus) -> None:
    """No test leaves a process behind: a server, browser or worker still running at the end fails the run."""
    if not Path("/proc/self/stat").exists():
        return
    if left := _live_descendants(os.getpid()):
        print(f"\nprocesses left running by the tests: {left}")
        session.exitstatus = 1
