"""Evaluation stage: every system ranks the skills for the test queries; metrics and a report follow."""

import base64
from datetime import datetime, timezone

import dagster as dg
import numpy as np
import polars as pl

from skill_assets.defs.metadata import table_metadata
from skill_assets.defs.resources import DUCKDB_WRITER_TAG, DuckDBStore, ModelSettings
from skill_assets.lib.metrics import mean_metrics, per_query_metrics
from skill_assets.lib.report import metric_plot, metrics_table, to_markdown
from skill_assets.lib.retrieval import bm25_rank, dense_rank, rerank
from skill_assets.lib.skill_text import ENCODER_CAPS, RERANKER_CAPS, skill_document
from skill_assets.lib.tables import frame

GROUP = "evaluation"


class RetrievalSettings(dg.Config):
    split: str = "test"
    top_k: int = 50
    rerank_depth: int = 20
    first_stage_variant: str = "r3"


def _embed_rank(models: ModelSettings, path: str, ids: list[str], docs: list[str], queries: list[str], k: int):
    model = models.load_embedder(path)
    return dense_rank(ids, model.encode(docs, normalize_embeddings=True),
                      model.encode([models.query_prompt + q for q in queries], normalize_embeddings=True), k)


@dg.asset(group_name=GROUP, kinds={"duckdb"}, op_tags=DUCKDB_WRITER_TAG,
          deps=["benchmark_queries", "skills", dg.AssetDep("embedder", partition_mapping=dg.AllPartitionMapping()),
                dg.AssetDep("reranker", partition_mapping=dg.AllPartitionMapping())])
def retrieval_runs(context: dg.AssetExecutionContext, config: RetrievalSettings, store: DuckDBStore,
                   models: ModelSettings):
    """Rankings of the whole skill library for every evaluated query, by every available system."""
    from sentence_transformers import CrossEncoder

    queries = store.query("SELECT query_id, query FROM benchmark_queries WHERE split = ? ORDER BY query_id",
                          [config.split]).to_dicts()
    skills = store.query("SELECT skill_id, name, description, body FROM skills ORDER BY skill_id").to_dicts()
    ids = [s["skill_id"] for s in skills]
    docs = [skill_document(s["name"], s["description"], s["body"], ENCODER_CAPS) for s in skills]
    qtext = [q["query"] for q in queries]
    runs: dict[str, list] = {}
    if queries:
        runs["bm25"] = bm25_rank(ids, docs, qtext, config.top_k)
        runs["embedder:base"] = _embed_rank(models, models.embedder, ids, docs, qtext, config.top_k)
        trained = store.query("SELECT variant, path FROM embedder ORDER BY variant") if store.exists("embedder") else None
        for row in (trained.to_dicts() if trained is not None else []):
            runs[f"embedder:{row['variant']}"] = _embed_rank(models, row["path"], ids, docs, qtext, config.top_k)
        first = runs.get(f"embedder:{config.first_stage_variant}", runs["embedder:base"])
        rr_text = {s["skill_id"]: skill_document(s["name"], s["description"], s["body"], RERANKER_CAPS) for s in skills}
        rerankers = store.query("SELECT variant, path FROM reranker ORDER BY variant") if store.exists("reranker") else None
        for row in (rerankers.to_dicts() if rerankers is not None else []):
            ce = CrossEncoder(row["path"])
            runs[f"reranker:{row['variant']}"] = rerank(qtext, first, rr_text,
                                                        lambda pairs: np.asarray(ce.predict(pairs, batch_size=32)),
                                                        config.rerank_depth)
            context.log.info(f"reranked with {row['variant']}")
    rows = [{"system": system, "split": config.split, "query_id": q["query_id"], "rank": r + 1, "skill_id": sid,
             "score": score}
            for system, rankings in runs.items() for q, ranking in zip(queries, rankings)
            for r, (sid, score) in enumerate(ranking)]
    df = frame("retrieval_runs", rows)
    store.write("retrieval_runs", df)
    return dg.MaterializeResult(metadata=table_metadata("retrieval_runs", df, systems=", ".join(runs),
                                                        queries=len(queries)))


@dg.asset(group_name=GROUP, kinds={"duckdb"}, deps=["retrieval_runs", "benchmark_queries"], op_tags=DUCKDB_WRITER_TAG)
def benchmark_metrics(store: DuckDBStore):
    """Hit@1, MRR@10, NDCG@K, Recall@K, fc@K, comp@K and Set-Compat per system, overall and by direction and k."""
    runs = store.query("SELECT system, split, query_id, list(skill_id ORDER BY rank) AS ranking FROM retrieval_runs "
                       "GROUP BY ALL").to_dicts()
    queries = {q["query_id"]: q for q in store.read("benchmark_queries").to_dicts()}
    rows = []
    by_system: dict[tuple, list[dict]] = {}
    for r in runs:
        by_system.setdefault((r["system"], r["split"]), []).append(r)
    for (system, split), items in sorted(by_system.items()):
        per_query = per_query_metrics([i["ranking"] for i in items], [set(queries[i["query_id"]]["skill_ids"]) for i in items])
        slices = {"all": np.ones(len(items), dtype=bool)}
        for field in ("direction", "k"):
            for value in sorted({queries[i["query_id"]][field] for i in items}):
                slices[f"{field}={value}"] = np.array([queries[i["query_id"]][field] == value for i in items])
        for name, mask in slices.items():
            means = mean_metrics({m: v[mask] for m, v in per_query.items()})
            rows += [{"system": system, "split": split, "slice": name, "metric": m, "value": v,
                      "n_queries": int(mask.sum())} for m, v in means.items()]
    df = frame("benchmark_metrics", rows)
    store.write("benchmark_metrics", df)
    return dg.MaterializeResult(metadata=table_metadata("benchmark_metrics", df))


@dg.asset(group_name=GROUP, kinds={"duckdb"}, deps=["benchmark_metrics", "skip_taxonomy", "llm_records"],
          op_tags=DUCKDB_WRITER_TAG)
def benchmark_report(store: DuckDBStore):
    """The benchmark report in Markdown with a metric plot, shown in the UI and written beside the store."""
    metrics = store.read("benchmark_metrics")
    overall = metrics_table(metrics)
    png = metric_plot(overall)
    reports = store.artifacts_dir / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    plot_path = reports / "metrics_by_system.png"
    plot_path.write_bytes(png)
    decisions = store.query("SELECT direction, k, decision, count(*) AS n FROM llm_records GROUP BY ALL ORDER BY ALL")
    taxonomy = store.query("SELECT label, count(*) AS n FROM skip_taxonomy WHERE k >= 2 GROUP BY 1 ORDER BY n DESC")
    splits = store.query("SELECT split, count(*) AS n FROM benchmark_queries GROUP BY 1 ORDER BY 1")
    by_direction = [f"### {s}\n\n{to_markdown(metrics_table(metrics, s))}"
                    for s in sorted(metrics["slice"].unique().to_list()) if s != "all"]
    body = "\n\n".join([
        "# skill-assets benchmark report",
        f"Generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}. Metrics in %, over the whole skill library; "
        "`fc@K` is SkillRouter's full coverage, `comp@K` R3-Skill's released definition, "
        "`set_compat` counts multi-skill queries only.",
        "## Overall", to_markdown(overall),
        "![metrics by system](metrics_by_system.png)",
        "## Breakdowns", *by_direction,
        "## Benchmark queries", splits.to_pandas().to_markdown(index=False),
        "## Generator decisions", decisions.to_pandas().to_markdown(index=False),
        "## Rejection taxonomy (k ≥ 2 SKIPs)", taxonomy.to_pandas().to_markdown(index=False) if taxonomy.height else "_none_",
    ])
    report_path = reports / "benchmark_report.md"
    report_path.write_text(body)
    store.write("benchmark_report", [{"markdown": body, "report_path": str(report_path), "plot_path": str(plot_path),
                                      "created_at": datetime.now(timezone.utc)}])
    inline = body.replace("(metrics_by_system.png)", f"(data:image/png;base64,{base64.b64encode(png).decode()})")
    return dg.MaterializeResult(metadata={"report": dg.MetadataValue.md(inline),
                                          "report_path": dg.MetadataValue.path(str(report_path)),
                                          "plot_path": dg.MetadataValue.path(str(plot_path))})
