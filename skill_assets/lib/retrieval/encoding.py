"""The bi-encoder's and the multilingual encoder's document indexes built side by side on the cores there are.

Both encoders release the GIL inside torch and numpy, so two threads keep two cores busy; one intra-op
pool over both cores gains little on a single document batch and only spins on busy cores. Kept apart
from the engine: this is how the first index spends its minutes, the engine only asks for the result.
"""
from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from skill_assets.lib.retrieval.dense import DenseIndex
from skill_assets.lib.retrieval.multilingual import MultilingualEncoder, MultilingualIndex
from skill_assets.lib.retrieval.pool_index import IndexStopped
from skill_assets.lib.retrieval.threads import SMALL_BATCH


def encode_side_by_side(dense: DenseIndex, dense_docs: list[str], encoder: MultilingualEncoder,
                        multilingual_docs: list[str], descriptions: list[str], reading: str, cache_dir: Path,
                        log: Callable[[str], None], shard_size: int, checkpoint: Callable[[], None]
                        ) -> tuple[np.ndarray, MultilingualIndex, int, int]:
    """(dense matrix, multilingual index, dense documents cached, documents encoded by either side).

    With two cores or more each encoder gets half of them, and whichever side finishes first hands its cores
    to the other. One core, or fewer than ``SMALL_BATCH`` documents (a ``serve --watch`` re-index's changed
    skills, which the caller encodes on one thread: ``IndexBuilder._encode_documents``): one after the other, with
    no thread counts handed between the sides. A failure on
    either side stops the other at its next chunk and is raised here (the first failure, not the other
    side's stop)."""
    cores = encoder.threads
    if cores < 2 or len(dense_docs) < SMALL_BATCH:
        matrix, cached, encoded = dense.embed(dense_docs, shard_size, checkpoint)
        multilingual, more = MultilingualIndex.build_or_load(multilingual_docs, descriptions, cache_dir, encoder,
                                                             reading, log, shard_size, checkpoint)
        return matrix, multilingual, cached, encoded + more
    dense_threads = cores // 2
    dense_done, failed = threading.Event(), threading.Event()
    side: dict[str, object] = {}

    def stop_if_failed() -> None:
        checkpoint()
        if failed.is_set():
            raise IndexStopped("the other encoder failed")

    def multilingual_side() -> None:
        try:
            side["index"] = MultilingualIndex.build_or_load(
                multilingual_docs, descriptions, cache_dir, encoder, reading, log, shard_size, stop_if_failed,
                threads=lambda: cores if dense_done.is_set() else cores - dense_threads)
        except BaseException as exc:  # noqa: BLE001 -- re-raised in the building thread below
            side["error"] = exc
            failed.set()

    #: torch's own thread count, read where the dense side first encodes: a pool whose dense vectors are all cached
    #: encodes nothing there and never imports torch (its model is loaded with its first miss; the backend probe
    #: before that chunk, once per model and CPU, runs on torch's own count)
    torch_before: list[int] = []

    def dense_checkpoint() -> None:
        """Before each dense chunk: half the cores while the multilingual side runs, every core once it is done."""
        stop_if_failed()
        import torch

        if not torch_before:
            torch_before.append(torch.get_num_threads())
        torch.set_num_threads(dense_threads if worker.is_alive() else torch_before[0])

    worker = threading.Thread(target=multilingual_side, name="skill-assets-multilingual-index", daemon=True)
    worker.start()
    dense_error: BaseException | None = None
    try:
        matrix, cached, encoded = dense.embed(dense_docs, shard_size, dense_checkpoint)
    except BaseException as exc:  # noqa: BLE001 -- raised below, after the other side has stopped
        failed.set()
        dense_error = exc
    finally:
        dense_done.set()
        if torch_before:
            sys.modules["torch"].set_num_threads(torch_before[0])
        worker.join()
    if "error" in side:
        raise side["error"] if dense_error is None or isinstance(dense_error, IndexStopped) else dense_error
    if dense_error is not None:
        raise dense_error
    multilingual, more = side["index"]
    return matrix, multilingual, cached, encoded + more
