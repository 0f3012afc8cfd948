"""The query adapter: a fit lowers the project's InfoNCE loss and repeats exactly; the saved map loads back exactly;
a damaged or foreign file is refused in one line."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from skill_assets.lib.common.cache_files import file_checksum
from skill_assets.lib.retrieval.model_files import ModelFileError
from skill_assets.lib.retrieval.query_adapter import (
    CARD_FILE,
    WEIGHTS_FILE,
    AdapterRecipe,
    QueryAdapter,
    TrainingRows,
    fit,
)
from skill_assets.lib.training.losses import MultiPositiveInfoNCELoss

@pytest.fixture(autouse=True)
def one_torch_thread():
    """Torch on one thread: a toy fit's products are too small to share, and on a busy machine (load average 10 on
    2 cores) torch's second thread only spins against other work: one fit took 20 s on 2 threads, 0.9 s on 1."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


RECIPE = AdapterRecipe(rank=8, steps=150, batch_size=32, learning_rate=3e-3, weight_decay=0.0)


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def toy_set(d: int = 24, pool: int = 120, per_skill: int = 2) -> tuple[TrainingRows, np.ndarray]:
    """Queries that point at their skill through a fixed distortion (the asymmetry a map can learn): q = M·doc."""
    rng = np.random.default_rng(7)
    docs = _unit(rng.normal(size=(pool, d)))
    distortion = rng.normal(size=(d, d)) + 0.3 * np.eye(d)
    positive = np.repeat(np.arange(pool), per_skill)
    queries = _unit(docs[positive] @ distortion.T + 0.05 * rng.normal(size=(len(positive), d)))
    return TrainingRows(queries, positive, [np.array([p]) for p in positive]), docs


def full_loss(adapter: QueryAdapter | None, rows: TrainingRows, docs: np.ndarray) -> float:
    q = rows.queries if adapter is None else adapter.apply(rows.queries)
    mask = torch.zeros(len(q), len(docs), dtype=torch.bool)
    for i, gt in enumerate(rows.ground_truth):
        mask[i, torch.from_numpy(gt)] = True
    loss = MultiPositiveInfoNCELoss(temperature=RECIPE.temperature)
    return float(loss(torch.from_numpy(q), torch.from_numpy(docs), torch.from_numpy(rows.positive), mask))


def fitted() -> tuple[QueryAdapter, TrainingRows, np.ndarray]:
    rows, docs = toy_set()
    return fit(rows, docs, RECIPE, MultiPositiveInfoNCELoss(temperature=RECIPE.temperature)), rows, docs


def test_fit_lowers_the_loss_and_repeats_exactly():
    adapter, rows, docs = fitted()
    before, after = full_loss(None, rows, docs), full_loss(adapter, rows, docs)
    assert after < 0.7 * before, (before, after)
    again, _, _ = fitted()
    assert np.array_equal(adapter.a, again.a) and np.array_equal(adapter.b, again.b)
    assert adapter.card["loss_last_tenth"] < adapter.card["loss_first_tenth"]
    checkpoints = []
    fit(rows, docs, RECIPE, MultiPositiveInfoNCELoss(temperature=RECIPE.temperature), (50, 150),
        lambda step, a: checkpoints.append((step, a)))
    assert [s for s, _ in checkpoints] == [50, 150]
    assert np.array_equal(checkpoints[-1][1].a, adapter.a)


def test_untrained_map_is_the_identity():
    rows, _ = toy_set()
    d = rows.queries.shape[1]
    rng = np.random.default_rng(1)
    adapter = QueryAdapter(np.zeros((d, 4), np.float32), rng.normal(size=(d, 4)).astype(np.float32))
    assert np.allclose(adapter.apply(rows.queries), rows.queries, atol=1e-6)
    with pytest.raises(ValueError, match=r"queries must be \(n, 24\)"):
        adapter.apply(rows.queries[:, :10])


def test_save_and_load_round_trip_exactly(tmp_path: Path):
    adapter, rows, _ = fitted()
    adapter.card["data"] = {"train_hash": "abc"}
    card = adapter.save(tmp_path)
    loaded = QueryAdapter.load(tmp_path)
    assert np.array_equal(loaded.a, adapter.a) and np.array_equal(loaded.b, adapter.b)
    assert np.array_equal(loaded.apply(rows.queries), adapter.apply(rows.queries))
    assert loaded.card == card and card["data"] == {"train_hash": "abc"} and card["rank"] == RECIPE.rank
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([CARD_FILE, WEIGHTS_FILE])


def _flip_byte(folder: Path) -> None:
    data = bytearray((folder / WEIGHTS_FILE).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (folder / WEIGHTS_FILE).write_bytes(bytes(data))


def _truncate_card(folder: Path) -> None:
    text = (folder / CARD_FILE).read_text()
    (folder / CARD_FILE).write_text(text[: len(text) // 2])


def _remove_weights(folder: Path) -> None:
    (folder / WEIGHTS_FILE).unlink()


def _pickled_weights(folder: Path) -> None:
    """Object arrays (which only pickle can read) under a card whose checksum was updated to match."""
    np.savez(folder / WEIGHTS_FILE, a=np.array([{"x": 1}], dtype=object), b=np.array([{"x": 1}], dtype=object))
    card = json.loads((folder / CARD_FILE).read_text())
    card["weights_sha256"] = file_checksum(folder / WEIGHTS_FILE)
    (folder / CARD_FILE).write_text(json.dumps(card))


def _wrong_shape(folder: Path) -> None:
    card = json.loads((folder / CARD_FILE).read_text())
    card["rank"] = 3
    (folder / CARD_FILE).write_text(json.dumps(card))


@pytest.mark.parametrize("damage, says", [(_flip_byte, "does not match its card"), (_truncate_card, "not valid JSON"),
                                          (_remove_weights, "missing"), (_pickled_weights, "unreadable"),
                                          (_wrong_shape, "the card says")])
def test_a_damaged_adapter_is_refused_in_one_line(tmp_path: Path, damage, says):
    adapter, _, _ = fitted()
    adapter.save(tmp_path)
    damage(tmp_path)
    with pytest.raises(ModelFileError) as err:
        QueryAdapter.load(tmp_path)
    message = str(err.value)
    assert says in message and "\n" not in message and str(tmp_path) in message
