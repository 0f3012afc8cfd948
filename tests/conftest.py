"""Shared fixtures: repository paths and the shared real-skill corpus (when present)."""
import os
from pathlib import Path

import pytest

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
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name, rest = text.split(" (", 1)[1].rsplit(")", 1)
        state, ppid = rest.split()[:2]
        if state != "Z":
            children.setdefault(int(ppid), []).append(int(stat.parent.name))
            names[int(stat.parent.name)] = name
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(f"{pid} {names[pid]}")
        todo += children.get(pid, [])
    return found


def pytest_sessionfinish(session, exitstatus) -> None:
    """No test leaves a process behind: a server, browser or worker still running at the end fails the run."""
    if not Path("/proc/self/stat").exists():
        return
    if left := _live_descendants(os.getpid()):
        print(f"\nprocesses left running by the tests: {left}")
        session.exitstatus = 1
