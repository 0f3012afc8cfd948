import os

import numpy as np
import pytest

from skill_assets.lib.common import store
from skill_assets.lib.models.embedding_cache import refresh_embeddings
from skill_assets.lib.models.encoder_backends import torch_encode

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def minilm():
    from skill_assets.lib.models.bundled_models import bundled_minilm
    from skill_assets.lib.training.model_training import load_bi_encoder

    return load_bi_encoder(bundled_minilm())


def _texts():
    return {"a": "docker | compose services | networking between containers",
            "b": "pdf | extract tables | read tables from PDF files",
            "c": "kubernetes | helm charts | deploy a release with helm",
            "d": "git | rebase | rewrite history interactively"}


class CountingEncoder:
    def __init__(self, model):
        self.encode, self.seen, self.loads = torch_encode(model, 8), [], 0

    def load(self, missing):
        self.loads += 1

        def encode(texts):
            self.seen.extend(texts)
            return self.encode(texts)
        return encode


def _table(db):
    df = store.query(db, "SELECT skill_id, text_hash, embedding FROM skill_embeddings ORDER BY skill_id")
    return {r["skill_id"]: np.asarray(r["embedding"], dtype=np.float32) for r in df.to_dicts()}


def test_only_changed_or_new_texts_are_embedded(tmp_path, minilm):
    db, texts = tmp_path / "s.duckdb", _texts()
    enc = CountingEncoder(minilm)
    first = refresh_embeddings(db, list(texts), list(texts.values()), "minilm", "fp", enc.load, chunk_size=3)
    assert first == {"skills": 4, "cache_hits": 0, "embedded_now": 4}
    before = _table(db)
    assert all(abs(np.linalg.norm(v) - 1) < 1e-4 for v in before.values())

    texts["b"] = "pdf | extract tables | a changed body"
    texts["e"] = "sql | window functions | rank rows per group"
    del texts["d"]
    enc2 = CountingEncoder(minilm)
    second = refresh_embeddings(db, list(texts), list(texts.values()), "minilm", "fp", enc2.load, chunk_size=3)
    assert second == {"skills": 4, "cache_hits": 2, "embedded_now": 2}
    assert sorted(enc2.seen) == sorted([texts["b"], texts["e"]])
    after = _table(db)
    assert sorted(after) == ["a", "b", "c", "e"]
    assert np.array_equal(after["a"], before["a"]) and np.array_equal(after["c"], before["c"])
    assert float(after["b"] @ before["b"]) < 0.99


def test_warm_run_loads_no_model_and_other_fingerprint_misses(tmp_path, minilm):
    db, texts = tmp_path / "s.duckdb", _texts()
    refresh_embeddings(db, list(texts), list(texts.values()), "minilm", "fp", CountingEncoder(minilm).load)

    def must_not_load(missing):
        raise AssertionError("a warm run must not load the model")

    assert refresh_embeddings(db, list(texts), list(texts.values()), "minilm", "fp", must_not_load)["cache_hits"] == 4
    enc = CountingEncoder(minilm)
    other = refresh_embeddings(db, list(texts), list(texts.values()), "minilm", "fp/other-backend", enc.load)
    assert other["embedded_now"] == 4 and enc.loads == 1


def test_progress_is_reported_per_chunk(tmp_path, minilm):
    db, texts = tmp_path / "s.duckdb", _texts()
    calls = []
    refresh_embeddings(db, list(texts), list(texts.values()), "minilm", "fp", CountingEncoder(minilm).load,
                       chunk_size=3, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(3, 4), (4, 4)]
    assert not store.table_exists(db, "skill_embeddings__staging")
