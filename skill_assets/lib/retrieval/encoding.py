"""The bi-encoder's and the multilingual encoder's document indexes built side by side on the cores there are.

Both encoders release the GIL inside torch and numpy, so two threads keep two cores busy; one intra-op
pool over both cores gains little on a single document batch and only spins on busy cores. Kept apart
from the engine: this is how the first index spends its minutes, the engine only asks for the result.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from skill_assets.lib.retrieval.dense import DenseIndex
from skill_assets.lib.retrieval.multilingual import MultilingualEncoder, MultilingualIndex
from skill_assets.lib.retrieval.pool_index import IndexStopped


def encode_side_by_side(dense: DenseIndex, dense_docs: list[str], encoder: MultilingualEncoder,
                        multilingual_docs: list[str], cache_dir: Path, log: Callable[[str], None], shard_size: int,
                        checkpoint: Callable[[], None]) -> tuple[np.ndarray, MultilingualIndex, int, int]:
    """(dense matrix, multilingual index, dense documents cached, documents encoded by either side).

    With two cores or more each encoder gets half of them, and whichever side finishes first hands its cores
    to the other. One core: one after the other. A failure on
    either side stops the other at its next chunk and is raised here (the first failure, not the other
    side's stop)."""
    cores = encoder.threads
    if cores < 2:
        matrix, cached, encoded = dense.embed(dense_docs, shard_size, checkpoint)
        multilingual, more = MultilingualIndex.build_or_load(multilingual_docs, cache_dir, encoder, log,
                                                             shard_size, checkpoint)
        return matrix, multilingual, cached, encoded + more
    import torch

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
                multilingual_docs, cache_dir, encoder, log, shard_size, stop_if_failed,
                threads=lambda: cores if dense_done.is_set() else cores - dense_threads)
        except BaseException as exc:  # noqa: BLE001 -- re-raised in the building thread below
            side["error"] = exc
            failed.set()

    before = torch.get_num_threads()

    def dense_checkpoint() -> None:
        stop_if_failed()
        if not worker.is_alive():  # the multilingual side is done: the dense side takes every core
            torch.set_num_threads(before)

    torch.set_num_threads(dense_threads)
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
        torch.set_num_threads(before)
        worker.join()
    if "error" in side:
        raise side["error"] if dense_error is None or isinstance(dense_error, IndexStopped) else dense_error
    if dense_error is not None:
        raise dense_error
    multilingual, more = side["index"]
    return matrix, multilingual, cached, encoded + more
