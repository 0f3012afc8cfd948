"""Thread limits for a request (``threads.request_threads``)."""
from __future__ import annotations

import sys
import types

from skill_assets.lib.retrieval.threads import SMALL_BATCH, request_threads


def test_a_request_routed_while_another_thread_imports_torch_is_not_limited_and_does_not_fail(monkeypatch):
    """``serve --watch`` loads the document encoder (torch) beside the answers: a request that finds torch in
    ``sys.modules`` before its functions exist runs nothing on torch, and must not fail on the half-made module."""
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))  # as an import in progress leaves it
    with request_threads(1):
        pass


class FakeTorch(types.ModuleType):
    """torch's process-wide intra-op thread count, as ``set_num_threads`` / ``get_num_threads`` keep it."""

    def __init__(self, threads: int) -> None:
        super().__init__("torch")
        self.threads = threads

    def get_num_threads(self) -> int:
        return self.threads

    def set_num_threads(self, n: int) -> None:
        self.threads = n


def test_one_thread_holds_until_the_last_overlapping_section_ends(monkeypatch):
    """Sections of two threads overlap (a ``serve --watch`` re-index encoding beside an answer): the first to end
    must not put torch back on its pool of threads while the other still encodes; the last restores it."""
    torch = FakeTorch(2)
    monkeypatch.setitem(sys.modules, "torch", torch)
    first, second = request_threads(1), request_threads(1)
    first.__enter__()
    second.__enter__()
    assert torch.threads == 1
    first.__exit__(None, None, None)
    assert torch.threads == 1, "the other section still encodes"
    second.__exit__(None, None, None)
    assert torch.threads == 2


def test_torch_imported_during_a_section_is_limited_by_a_later_one_and_restored(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))  # an import in progress
    with request_threads(1):
        torch = FakeTorch(2)
        monkeypatch.setitem(sys.modules, "torch", torch)  # the import done
        with request_threads(1):
            assert torch.threads == 1
        assert torch.threads == 1
    assert torch.threads == 2


def test_a_large_batch_is_not_limited(monkeypatch):
    torch = FakeTorch(2)
    monkeypatch.setitem(sys.modules, "torch", torch)
    with request_threads(SMALL_BATCH):
        assert torch.threads == 2
