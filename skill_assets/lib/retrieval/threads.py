"""Thread limits for per-request work: BLAS for similarity products, torch and BLAS while a few queries are encoded."""
from __future__ import annotations

import contextlib
import functools
import sys
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


@contextlib.contextmanager
def request_threads(n_queries: int) -> Iterator[None]:
    """Torch and BLAS on one thread while a few queries are encoded, then back. A single request is too small to
    split, and on a busy machine an intra-op pool only spins against other work: measured on 2 cores under load
    (load average 5), MiniLM + USE for one request took 374 + 133 ms with torch's 2 threads, 11 + 3 ms with 1; the
    numpy MiniLM (``numpy_bert``) runs on BLAS. Torch is limited only where something has imported it: importing
    it here would cost a request over a cached pool the second the numpy request encoder saves."""
    if n_queries >= SMALL_BATCH:
        yield
        return
    torch = sys.modules.get("torch")
    # a torch another thread is still importing (``serve --watch`` loads the document encoder beside the answers)
    # has no functions yet: it runs nothing of this request, so there is nothing to limit
    before = torch.get_num_threads() if hasattr(torch, "set_num_threads") else 1
    with _blas().limit(limits=1, user_api="blas"):
        if before == 1:
            yield
            return
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(before)
