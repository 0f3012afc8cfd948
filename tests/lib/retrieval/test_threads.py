"""Thread limits for a request (``threads.request_threads``)."""
from __future__ import annotations

import sys
import types

from skill_assets.lib.retrieval.threads import request_threads


def test_a_request_routed_while_another_thread_imports_torch_is_not_limited_and_does_not_fail(monkeypatch):
    """``serve --watch`` loads the document encoder (torch) beside the answers: a request that finds torch in
    ``sys.modules`` before its functions exist runs nothing on torch, and must not fail on the half-made module."""
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))  # as an import in progress leaves it
    with request_threads(1):
        pass
