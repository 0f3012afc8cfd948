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
