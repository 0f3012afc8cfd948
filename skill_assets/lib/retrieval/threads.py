"""Thread limits for per-request work: BLAS for similarity products, torch and BLAS while a few queries are encoded."""
from __future__ import annotations

import contextlib
import functools
import sys
import threading
from collections.abc import Iterator

from threadpoolctl import ThreadpoolController

#: queries per search below which the similarity product runs single-threaded
SMALL_BATCH = 64


@functools.cache
def _blas() -> ThreadpoolController:
    """Built once: inspecting the loaded BLAS libraries costs milliseconds, a per-request budget."""
    return ThreadpoolController()


def search_threads(n_queries: int):
    """BLAS thread limit for a similarity product over ``n_queries``: a few queries make a product too small to
    share, and BLAS threads would only spin against torch's (measured on 2 cores: p50 36 -> 25 ms, p95 107 -> 34 ms
    for one query)."""
    return _blas().limit(limits=1 if n_queries < SMALL_BATCH else None, user_api="blas")


class _OneThread:
    """Torch's and BLAS' thread counts, which are the whole process's, held at one while any thread needs them so.

    Each user saving the counts it found and putting them back on leaving lets one thread undo another's limit
    mid-encode: ``serve --watch`` encodes a re-index's changed documents beside the answers, and an answer whose
    limit a finished re-index had lifted ran its query encoders on a pool of threads spinning on busy cores. So the
    first thread in saves the counts and the last one out restores them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._blas = None                      # the BLAS limit the first holder set (threadpoolctl's limiter)
        self._torch_before: int | None = None  # torch's count where it was lowered, to restore

    def enter(self) -> None:
        with self._lock:
            self._holders += 1
            if self._holders == 1:
                self._blas = _blas().limit(limits=1, user_api="blas")
            torch = sys.modules.get("torch")
            # a torch another thread is still importing (``serve --watch`` loads the document encoder beside the
            # answers) has no functions yet: it runs nothing of this section, and a later holder limits it
            if self._torch_before is None and hasattr(torch, "set_num_threads") and torch.get_num_threads() != 1:
                self._torch_before = torch.get_num_threads()
                torch.set_num_threads(1)

    def leave(self) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders:
                return
            self._blas.restore_original_limits()
            self._blas = None
            if self._torch_before is not None:
                sys.modules["torch"].set_num_threads(self._torch_before)
                self._torch_before = None


_one_thread = _OneThread()


@contextlib.contextmanager
def request_threads(n_queries: int) -> Iterator[None]:
    """Torch and BLAS on one thread while a few queries (or a re-index's few documents) are encoded, then back once
    no thread encodes a few any more (``_OneThread``). A single request is too small to split, and on a busy machine
    an intra-op pool only spins against other work: measured on 2 cores under load (load average 5), MiniLM + USE
    for one request took 374 + 133 ms with torch's 2 threads, 11 + 3 ms with 1; the numpy MiniLM (``numpy_bert``)
    runs on BLAS. Torch is limited only where something has imported it: importing it here would cost a request over
    a cached pool the second the numpy request encoder saves."""
    if n_queries >= SMALL_BATCH:
        yield
        return
    _one_thread.enter()
    try:
        yield
    finally:
        _one_thread.leave()
