"""``IndexBuilder``: a re-index of a pool in which one skill changed redoes that skill alone (``serve --watch``).

Real components: the bundled MiniLM, USE multilingual and BM25 over a few skills built in memory. Work is counted,
not timed: the calls that make a skill's documents, digests and embedding-cache look-ups during the re-index.
"""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from skill_assets.lib.models.bundled_models import bundled_minilm  # noqa: E402
from skill_assets.lib.retrieval import document_cache, index_builder  # noqa: E402
from skill_assets.lib.retrieval.engine import Engine  # noqa: E402
from skill_assets.lib.retrieval.pool_index import PoolIndex  # noqa: E402
from skill_assets.lib.retrieval.pools import Skill  # noqa: E402
from skill_assets.lib.retrieval.signals import SIGNALS  # noqa: E402

pytestmark = pytest.mark.timeout(600)

POOL = [
    Skill("docker-networking", "docker-networking", "Fix Docker Compose services that cannot reach each other.",
          "Check the compose network, service names as hostnames and published ports."),
    Skill("pdf-forms", "pdf-forms", "Fill in and extract fields from PDF forms.",
          "Read AcroForm fields with pypdf, fill them and flatten the form."),
    Skill("git-bisect", "git-bisect", "Find the commit that introduced a bug with git bisect.",
          "Mark a good and a bad commit, test each step, then reset."),
    Skill("excel-pivot", "excel-pivot", "用透视表汇总 Excel 表格中的销售数据。", "插入透视表，拖动字段到行和值。"),
    Skill("pdf-forms-copy", "pdf-forms", "Fill in and extract fields from PDF forms.",
          "Read AcroForm fields with pypdf, fill them and flatten the form."),
]
QUERIES = ["merge PDF files into one", "docker compose network", "汇总销售数据", "find the bad commit"]


def reread(skill: Skill) -> Skill:
    """The skill as a reload parses its unchanged file again: equal text in new string objects."""
    def fresh(text: str) -> str:
        return text.encode().decode()

    return Skill(fresh(skill.id), fresh(skill.name), fresh(skill.description), fresh(skill.body), skill.source)


def edited(pool: list[Skill]) -> list[Skill]:
    """``pool`` reloaded after one skill was edited: the others reread, unchanged."""
    return [replace(s, description="Merge several PDF files into one.") if s.id == "pdf-forms" else reread(s)
            for s in pool]


def engine(cache: Path) -> Engine:
    return Engine(bundled_minilm(), cache_dir=cache, signals=SIGNALS)


def assert_same_index(a: PoolIndex, b: PoolIndex) -> None:
    assert a.ids == b.ids and a.copy_keys == b.copy_keys
    assert np.array_equal(a.skill_zh, b.skill_zh)
    assert np.array_equal(a.lexical.scores(QUERIES), b.lexical.scores(QUERIES))
    assert a.dense.dtype == b.dense.dtype and a.dense.tobytes() == b.dense.tobytes()
    for reading in ("matrix", "descriptions"):  # the document and the description alone, row for row
        x, y = getattr(a.multilingual, reading), getattr(b.multilingual, reading)
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes()
    assert a.multilingual.reading == b.multilingual.reading


def test_a_reindex_after_one_edit_is_the_index_of_the_edited_pool_built_from_scratch(tmp_path):
    watched = engine(tmp_path / "cache")
    watched.start_index(POOL, encoders="now")
    watched.start_index(edited(POOL), encoders="now")
    # from scratch: a new engine (a restarted server) over the same embedding cache. A cache of its own would encode
    # the edited skill in a batch with the others, and an encoder's floats depend on the batch a text is in
    scratch = engine(tmp_path / "cache")
    scratch.start_index(edited(POOL), encoders="now")
    assert_same_index(watched.pool, scratch.pool)
    # a deletion and an addition alone encode nothing new, and still agree with a build from scratch
    pool = [*edited(POOL)[1:], replace(POOL[0], id="docker-networking-2")]
    stats = watched.start_index(pool, encoders="now").wait()
    assert (stats.cached, stats.encoded) == (len(pool), 0)
    scratch.start_index(pool, encoders="now")
    assert_same_index(watched.pool, scratch.pool)


def test_a_reindex_of_a_pool_whose_bm25_index_was_loaded_from_the_cache_is_the_index_built_from_scratch(tmp_path):
    engine(tmp_path / "cache").start_index(POOL, encoders="now")  # the index cache a restarted server finds
    watched = engine(tmp_path / "cache")
    watched.start_index(POOL, encoders="now")
    watched.keep_lexical_tokens()  # what ``serve --watch`` does before it follows the pool
    watched.start_index(edited(POOL), encoders="now")
    scratch = engine(tmp_path / "scratch-cache")
    scratch.start_index(edited(POOL), encoders="now")
    assert np.array_equal(watched.pool.lexical.scores(QUERIES), scratch.pool.lexical.scores(QUERIES))
    assert watched.pool.copy_keys == scratch.pool.copy_keys


def test_a_reindex_after_one_edit_reads_hashes_and_looks_up_that_skill_alone(tmp_path, monkeypatch):
    watched = engine(tmp_path / "cache")
    watched.start_index(POOL, encoders="now")
    calls: dict[str, list[str]] = {"lexical_document": [], "digest": [], "dense_document": [],
                                   "multilingual_document": [], "multilingual_description": [], "cache lookups": []}

    def counted(module, name: str) -> None:
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a: calls[name].append(a[0]) or real(*a))

    for name in ("lexical_document", "digest", "dense_document", "multilingual_document", "multilingual_description"):
        counted(index_builder, name)
    real_lookup = document_cache.EmbeddingStore.lookup
    monkeypatch.setattr(document_cache.EmbeddingStore, "lookup",
                        lambda store, hashes: calls["cache lookups"].extend(hashes) or real_lookup(store, hashes))
    stats = watched.start_index(edited(POOL), encoders="now").wait()
    # one look-up in the dense cache, two in the multilingual one (the skill's document and its description alone)
    assert [len(v) for v in calls.values()] == [1, 1, 1, 1, 1, 3], calls
    assert calls["lexical_document"][0].description == "Merge several PDF files into one."
    assert (stats.cached, stats.encoded) == (len(POOL) - 1, 3)


def test_a_reindex_beside_the_full_index_does_not_warm_the_request_path_again(tmp_path):
    """Warming covers the lexical answers of a first build; a re-index's answers go on over the full index it
    replaces, so it would only encode the warm-up requests again beside them."""
    watched = engine(tmp_path / "cache")
    warmed, warm = [], watched.indexes._warm
    watched.indexes._warm = lambda: warmed.append(len(warmed)) or warm()
    watched.start_index(POOL).wait()
    assert warmed == [0]
    stats = watched.start_index(edited(POOL)).wait()
    assert warmed == [0] and (stats.cached, stats.encoded) == (len(POOL) - 1, 3)
    assert watched.pool.skills == tuple(edited(POOL)) and watched.indexes.complete
