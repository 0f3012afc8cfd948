"""``router_fusion`` and the router's systems in the evaluation tables, on a tmp DuckDB file with real models.

The toy bilingual pool is the ``skills`` table and its requests are ``benchmark_queries`` (train,
dev, test); the registries name the bundled MiniLM as the ``r3`` embedder and a saved MiniLM
cross-encoder as the ``r3`` reranker, so every router system runs.
"""
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from bilingual_pool import REQUESTS, SKILLS

from skill_assets.definitions import defs
from skill_assets.defs.resources import DuckDBStore, default_resources
from skill_assets.lib.common import store as store_lib
from skill_assets.lib.models.bundled_models import bundled_minilm
from skill_assets.lib.common.tables import frame
from skill_assets.lib.evaluation.report import signal_ablation_table
from skill_assets.router import Router, Skill

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROUTER_SYSTEMS = {"bm25", "multilingual", "gloss", "rrf:bm25+dense", "rrf:bm25+multilingual",
                  "rrf:dense+multilingual", "fusion", "fusion+reranker:r3", "router:default"}


def _materialize(db: Path, selection: list[str]) -> dg.ExecuteInProcessResult:
    return dg.materialize(list(defs.assets or []), selection=selection, raise_on_error=False,
                          resources={**default_resources(), "store": DuckDBStore(database=str(db))})


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    from sentence_transformers import CrossEncoder

    db = tmp_path_factory.mktemp("router") / "store.duckdb"
    store_lib.replace_table(db, "skills", frame("skills", [
        {"skill_id": sid, "name": name, "description": desc, "body": body, "language": "zh" if sid[:3] == "zh/" else "en"}
        for sid, (name, desc, body) in SKILLS.items()]))
    # the toy's dev requests double as test requests here, so the evaluation has every direction
    store_lib.replace_table(db, "benchmark_queries", frame("benchmark_queries", [
        {"query_id": f"{split}:{rid}", "split": split, "query": query, "skill_ids": [sid], "direction": rid.split("-")[0],
         "k": 1, "style": "task_direct", "generator_model": "hand-written", "skip_partners": []}
        for rid, query, sid, split0 in REQUESTS if split0 != "test"
        for split in ([split0] if split0 == "train" else ["dev", "test"])]))
    minilm = bundled_minilm()
    cross_encoder = db.parent / "reranker-r3"
    CrossEncoder(minilm).save(str(cross_encoder))
    for table, path in (("embedder", minilm), ("reranker", str(cross_encoder))):
        store_lib.replace_table(db, table, frame(table, [{
            "variant": "r3", "path": path, "base_model": minilm, "loss": "test", "train_queries": 0, "steps": 0,
            "final_loss": 0.0, "wall_s": 0.0, "trained_at": datetime.now(UTC)}]))
    assert _materialize(db, ["router_fusion"]).success
    assert _materialize(db, ["retrieval_runs", "benchmark_metrics"]).success
    return db


def test_router_fusion_registers_a_model_with_its_card(db):
    (row,) = store_lib.read_table(db, "router_fusion").to_dicts()
    assert row["data_source"] == "benchmark_queries"
    assert (row["train_requests"], row["dev_requests"]) == tuple(sum(r[3] == split for r in REQUESTS)
                                                                 for split in ("train", "dev"))
    card = json.loads((Path(row["path"]) / "skill_assets_card.json").read_text())
    assert card["data"]["test_requests_read"] == 0 and card["data"]["pool_skills"] == len(SKILLS)
    assert card["dev"]["hit@1"] == row["dev_hit_at_1"]
    assert not row["adopted"] and f"fitted on {row['train_requests']} requests, needs 100" in row["adoption_reason"]
    assert not row["reranker_adopted"] and "needs 100" in row["reranker_reason"]
    router = Router.from_store(db, reranker="none", fusion=row["path"])
    assert router.engine.fusion is not None and router.engine.fusion.kind == row["kind"] and router.engine.selection.as_dict() == card["selection"]
    router.index([Skill(sid, *fields) for sid, fields in SKILLS.items()])
    (routed,) = router.route(["帮我写一封应聘数据分析师岗位的求职信"], top_k=3)
    assert set(routed.ranking[0].signals) == {"bm25", "dense", "multilingual", "gloss", "fused"}


def test_every_router_system_has_runs_and_metrics(db):
    runs = store_lib.read_table(db, "retrieval_runs")
    assert ROUTER_SYSTEMS <= set(runs["system"])
    per_query = runs.filter(pl.col("system").is_in(ROUTER_SYSTEMS)).group_by("system", "split", "query_id").len()
    assert per_query["len"].max() <= len(SKILLS) and per_query.height == len(ROUTER_SYSTEMS) * sum(r[3] == "dev" for r in REQUESTS)  # test split only
    versions = dict(runs.select("system", "model_version").unique().iter_rows())
    assert versions["fusion+reranker:r3"].split(" over ")[1].startswith("fusion@")
    metrics = store_lib.read_table(db, "benchmark_metrics")
    hit = {r["system"]: r["value"] for r in metrics.filter((pl.col("split") == "test") & (pl.col("slice") == "all")
                                                            & (pl.col("metric") == "hit@1")).to_dicts()}
    assert ROUTER_SYSTEMS <= set(hit)
    assert hit["fusion"] >= hit["bm25"]
    table = signal_ablation_table(metrics, "test")
    assert set(table["system"]) == ROUTER_SYSTEMS | {s for s in hit if s.startswith("embedder:")}
    assert table.columns == ["system", "all", "en2en", "en2zh", "zh2en", "zh2zh"]
