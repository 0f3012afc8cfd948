"""Materialize one external benchmark partition into a tmp DuckDB with the real bundled MiniLM.

The registries name MiniLM as a trained ``r3`` embedder and reranker, so every kind of system runs.
The same pool and queries, loaded as *our* benchmark, must give the same metrics through
``retrieval_runs`` → ``benchmark_metrics``: both paths share one implementation.
"""
import os
from datetime import UTC, datetime

import dagster as dg
import polars as pl
import pytest

from skill_assets.definitions import defs
from skill_assets.defs.resources import DuckDBStore, default_resources
from skill_assets.lib.common import store as store_lib
from skill_assets.lib.models.bundled_models import bundled_minilm
from skill_assets.lib.common.tables import frame

os.environ.setdefault("HF_HUB_OFFLINE", "1")
#: the router's signals alone and RRF of each pair join them (no router_fusion here, so no fusion systems), and the
#: router a user of this store gets (the shipped one)
SYSTEMS = {"bm25", "embedder:base", "embedder:r3", "reranker:r3", "multilingual", "gloss",
           "rrf:bm25+dense", "rrf:bm25+multilingual", "rrf:dense+multilingual", "router:default"}


def _materialize(db, selection: list[str], partition: str | None = None) -> dg.ExecuteInProcessResult:
    assets = list(defs.assets or [])
    return dg.materialize(assets, selection=selection, partition_key=partition, raise_on_error=False,
                          resources={**default_resources(), "store": DuckDBStore(database=str(db))})


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    db = tmp_path_factory.mktemp("external") / "store.duckdb"
    from sentence_transformers import CrossEncoder

    minilm = bundled_minilm()
    cross_encoder = db.parent / "reranker-r3"  # saved once: a fresh classification head is random on every load
    CrossEncoder(minilm).save(str(cross_encoder))
    for table, path in (("embedder", minilm), ("reranker", str(cross_encoder))):
        store_lib.replace_table(db, table, frame(table, [{
            "variant": "r3", "path": path, "base_model": minilm, "loss": "test", "train_queries": 0, "steps": 0,
            "final_loss": 0.0, "wall_s": 0.0, "trained_at": datetime.now(UTC)}]))
    for partition in ("demo-skillret", "demo-r3"):
        result = _materialize(db, ["external_skills", "external_queries", "external_runs", "external_metrics"],
                              partition)
        assert result.success
    return db


def test_partition_is_imported_ranked_and_scored(db):
    queries = store_lib.read_table(db, "external_queries", "WHERE benchmark = 'demo-skillret'")
    assert queries.height == 6 and queries["evaluated"].all()
    assert queries.filter(pl.col("query_id") == "q6")["unknown_skill_ids"].to_list() == [["newsletter-ab-testing"]]
    runs = store_lib.read_table(db, "external_runs", "WHERE benchmark = 'demo-skillret'")
    assert set(runs["system"]) == SYSTEMS
    assert runs.group_by("system", "query_id").len()["len"].to_list() == [8] * 6 * len(SYSTEMS)  # pool of 8, 6 queries
    trec = (db.parent / "reports" / "external" / "demo-skillret" / "runs" / "reranker_r3.trec").read_text().splitlines()
    assert len(trec) == 48 and trec[0].split()[1:2] == ["Q0"] and trec[0].split()[-1] == "reranker:r3"
    metrics = store_lib.read_table(db, "external_metrics", "WHERE benchmark = 'demo-skillret'")
    overall = {(r["system"], r["metric"]): r for r in metrics.filter(pl.col("slice") == "all").to_dicts()}
    # the r3 embedder *is* MiniLM here: same numbers as the base, no significant difference
    assert overall["embedder:r3", "ndcg@10"]["value"] == overall["embedder:base", "ndcg@10"]["value"]
    assert overall["embedder:r3", "ndcg@10"]["p_value_vs_base"] == 1.0
    # 8 skills: everything is retrieved by rank 8, so recall@10 is 1 for every system
    assert all(overall[s, "recall@10"]["value"] == 1.0 for s in SYSTEMS)
    assert overall["embedder:base", "hit@1"]["value"] >= 0.5  # MiniLM finds most of these hand-written queries
    assert set(metrics["slice"]) == {"all", "k=1", "k=2"}
    assert metrics["data_version"].n_unique() == 1 and metrics["model_version"].null_count() == 0


def test_partitions_replace_only_their_own_rows(db):
    before = store_lib.read_table(db, "external_metrics", "WHERE benchmark = 'demo-r3'")
    assert _materialize(db, ["external_metrics"], "demo-skillret").success
    after = store_lib.read_table(db, "external_metrics", "ORDER BY ALL")
    assert after.filter(pl.col("benchmark") == "demo-r3").sort(pl.all()).equals(before.sort(pl.all()))
    assert after.group_by("benchmark").len().sort("benchmark")["len"].to_list() == [before.height] * 2


def test_same_data_as_our_benchmark_gives_the_same_metrics(db, tmp_path):
    ours = tmp_path / "ours.duckdb"
    for table in ("embedder", "reranker"):
        store_lib.replace_table(ours, table, store_lib.read_table(db, table))
    skills = store_lib.read_table(db, "external_skills", "WHERE benchmark = 'demo-skillret'")
    store_lib.replace_table(ours, "skills", frame("skills", skills.to_dicts()))
    queries = store_lib.read_table(db, "external_queries", "WHERE benchmark = 'demo-skillret'")
    store_lib.replace_table(ours, "benchmark_queries", frame("benchmark_queries", [
        {**q, "split": "test", "direction": "en2en"} for q in queries.to_dicts()]))
    assert _materialize(ours, ["retrieval_runs", "benchmark_metrics"]).success
    key = ["system", "slice", "metric"]
    theirs = store_lib.read_table(db, "external_metrics", "WHERE benchmark = 'demo-skillret'").select(
        *key, "value", "p_value_vs_base").sort(key)
    mine = store_lib.read_table(ours, "benchmark_metrics", "WHERE slice <> 'direction=en2en'").select(
        *key, "value", "p_value_vs_base").sort(key)
    assert mine.equals(theirs)

