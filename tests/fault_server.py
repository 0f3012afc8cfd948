"""The ``fault_server`` fixture: a fresh fault-injecting OpenAI-compatible server per test."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from skill_assets.lib.generation.fault_server import FaultServer


@pytest.fixture
def fault_server() -> Iterator[FaultServer]:
    with FaultServer() as fs:
        yield fs
