"""Evaluation stage: every system ranks the skills for the test queries; metrics and a report follow."""

import json
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import polars as pl

from skill_assets.lib.retrieval.engine_config import EngineSettings, FittedRouting
from skill_assets.defs.metadata import table_metadata
from skill_assets.defs.resources import DUCKDB_WRITER_TAG, DuckDBStore, ModelSettings
from skill_assets.lib.models import model_registry as registry
from skill_assets.lib.common.provenance import code_version, release_version
from skill_assets.lib.core.runs import Ranking, Run, ranking_of
from skill_assets.lib.common.tables import frame
from skill_assets.lib.evaluation.metric_tables import metric_rows, query_slices, run_rows
from skill_assets.lib.evaluation.report import (
    external_mteb_results,
    html_document,
    inline_images,
    markdown_document,
    mteb_results,
    training_data_table,
)
from skill_assets.lib.evaluation.report_outline import REPORT_TITLE, report_plots, report_sections, version_stamp
from skill_assets.lib.retrieval.defaults import default_engine
from skill_assets.lib.retrieval.engine import Engine
from skill_assets.lib.retrieval.fusion_training import load_router_model
from skill_assets.lib.retrieval.pools import Skill
from skill_assets.lib.retrieval.requests import from_benchmark_queries, qrels
from skill_assets.lib.retrieval.reranking import Reranker
from skill_assets.lib.retrieval.signals import SIGNALS
from skill_assets.lib.retrieval.store_skills import store_skills
from skill_assets.lib.retrieval.systems import run_systems

GROUP = "evaluation"


class SystemSettings(dg.Config):
    top_k: int = 50
    rerank_depth: int = 20
    first_stage_variant: str = registry.DEFAULT_VARIANT


class RetrievalSettings(SystemSettings):
    splits: list[str] = ["test"]


def model_cards(store: DuckDBStore) -> dict[str, dict]:
    """``skill_assets_card.json`` of every registered model, by system name (``embedder:r3``)."""
    cards = {}
    for kind in (registry.EMBEDDER, registry.RERANKER):
        for row in registry.listed(store.path, kind):
            card = Path(row["path"]) / "skill_assets_card.json"
            if card.is_file():
                cards[f"{kind}:{row['variant']}"] = json.loads(card.read_text())
    return cards


def evaluate_systems(skills: list[Skill], queries: dict[str, str], store: DuckDBStore, models: ModelSettings,
                     config: SystemSettings) -> dict[str, Run]:
    """Every system of the store's registry on one pool and query set (query id → text;
    ``lib.retrieval.systems.run_systems``):
    the base and each registered bi-encoder, each reranker, the store's newest fusion, and the user's default."""
    embedders = dict([("base", models.embedder)] + [(r["variant"], r["path"])
                                                    for r in registry.listed(store.path, registry.EMBEDDER)])
    first = config.first_stage_variant if config.first_stage_variant in embedders else "base"
    fusion_dir = registry.newest_path(store.path, registry.FUSION)
    fusion, cut = load_router_model(fusion_dir) if fusion_dir else (None, None)
    cache = store.artifacts_dir / "index_cache"
    engine = Engine(embedders[first], cache_dir=cache, settings=EngineSettings(query_prompt=models.query_prompt),
                    signals=SIGNALS, fitted=FittedRouting(fusion, cut))
    engine.index(skills)
    # the evaluation scores each cross-encoder as it is (fp32), never a faster copy a speed gate picked
    rerankers = [(r["variant"], Reranker(r["path"], cache, backend="torch"))
                 for r in registry.listed(store.path, registry.RERANKER)]
    default = default_engine(db_path=store.path, cache_dir=cache)
    default.index(skills)
    return run_systems(engine, queries, first, [(v, p) for v, p in embedders.items() if v != first], rerankers,
                       config.top_k, config.rerank_depth, fusion_dir, default)


@dg.asset(group_name=GROUP, kinds={"duckdb"}, op_tags=DUCKDB_WRITER_TAG,
          deps=["benchmark_queries", "skills", dg.AssetDep("embedder", partition_mapping=dg.AllPartitionMapping()),
                dg.AssetDep("reranker", partition_mapping=dg.AllPartitionMapping()), "router_fusion"])
def retrieval_runs(context: dg.AssetExecutionContext, config: RetrievalSettings, store: DuckDBStore,
                   models: ModelSettings):
    """Rankings of the whole skill library for every evaluated query, by every available system."""
    skills = store_skills(store.path)
    queries = store.query("SELECT query_id, query, split FROM benchmark_queries WHERE split IN (SELECT unnest(?)) "
                          "ORDER BY split, query_id", [config.splits]).to_dicts()
    for split in sorted(set(config.splits) - {q["split"] for q in queries}):
        context.log.warning(f"no {split} queries: nothing to evaluate on that split")
    rows = []
    if queries:  # one pass over all splits: the library is embedded once per model, not once per split
        runs = evaluate_systems(skills, {q["query_id"]: q["query"] for q in queries}, store, models, config)
        split_of = {q["query_id"]: q["split"] for q in queries}
        rows = [{**row, "split": split_of[row["query_id"]]} for row in run_rows(runs)]
    df = frame("retrieval_runs", rows)
    store.write("retrieval_runs", df)
    run_dir = write_trec_runs(df, store.artifacts_dir / "reports" / "runs")
    return dg.MaterializeResult(metadata=table_metadata("retrieval_runs", df,
                                                        systems=", ".join(sorted(set(df["system"].to_list()))),
                                                        splits=", ".join(sorted(set(df["split"].to_list()))),
                                                        trec_runs=dg.MetadataValue.path(str(run_dir))))


def write_trec_runs(runs: pl.DataFrame, out_dir: Path) -> Path:
    """One TREC run file per system (``qid Q0 docid rank score system``) for trec_eval / ranx."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for (system,), part in runs.group_by(["system"]):
        lines = [f"{q} Q0 {d} {r} {s:.6f} {system}" for q, d, r, s in
                 part.sort("query_id", "rank").select("query_id", "skill_id", "rank", "score").iter_rows()]
        (out_dir / f"{system.replace(':', '_')}.trec").write_text("\n".join(lines) + "\n")
    return out_dir


@dg.asset(group_name=GROUP, kinds={"duckdb"}, deps=["retrieval_runs", "benchmark_queries"], op_tags=DUCKDB_WRITER_TAG)
def benchmark_metrics(store: DuckDBStore):
    """Every metric per system, overall and by direction and k, with paired significance against the base embedder."""
    queries_df = store.read("benchmark_queries")
    queries = {q["query_id"]: q for q in queries_df.to_dicts()}
    data_version, code = release_version(queries_df), code_version()
    rows = []
    for split, runs in runs_by_system(store, "retrieval_runs", "split"):
        qids = sorted({qid for run in runs.values() for qid in run.rankings})
        split_queries = [queries[q] for q in qids]
        for row in metric_rows(runs, qrels(from_benchmark_queries(split_queries)),
                               query_slices(split_queries, ("direction", "k"))):
            rows.append({**row, "split": split, "data_version": data_version, "code_version": code,
                         "model_version": runs[row["system"]].version})
    df = frame("benchmark_metrics", rows)
    store.write("benchmark_metrics", df)
    return dg.MaterializeResult(metadata=table_metadata("benchmark_metrics", df, data_version=data_version,
                                                        code_version=code))


def runs_by_system(store: DuckDBStore, table: str, group: str, where: str = "", params: list | None = None):
    """Per value of ``group``: ``{system: Run}`` from a runs table (its rows become runs here, and only here)."""
    rows = store.query(f"SELECT {group}, system, query_id, list(skill_id ORDER BY rank) AS ranking, "
                       f"list(score ORDER BY rank) AS scores, any_value(model_version) AS model_version "
                       f"FROM {table} {where} GROUP BY ALL ORDER BY ALL", params).to_dicts()
    for value in sorted({r[group] for r in rows}):
        rankings: dict[str, dict[str, Ranking]] = {}
        versions: dict[str, str] = {}
        for r in rows:
            if r[group] == value:
                rankings.setdefault(r["system"], {})[r["query_id"]] = ranking_of(r["ranking"], r["scores"])
                versions[r["system"]] = r["model_version"]
        yield value, {system: Run(by_query, versions[system]) for system, by_query in rankings.items()}


@dg.asset(group_name=GROUP, kinds={"duckdb"},
          deps=["benchmark_metrics", "skip_taxonomy", "llm_records", "external_metrics"], op_tags=DUCKDB_WRITER_TAG)
def benchmark_report(store: DuckDBStore):
    """The benchmark report: Markdown in the UI, a standalone HTML file, PNG plots and MTEB-shaped JSON.

    External benchmarks are included when their partitions have been materialized; the report
    does not wait for them (``schedules.OPTIONAL_PARENTS``). The outline is ``lib.evaluation.report_outline``'s
    and every section ``lib.evaluation.report``'s, testable without Dagster: this reads the tables and writes the files.
    """
    metrics = store.read("benchmark_metrics")
    external = store.read("external_metrics") if store.exists("external_metrics") else pl.DataFrame()
    taxonomy = store.query("SELECT label, count(*) AS n, count(*) FILTER (WHERE method = 'rule') AS by_rule, "
                           "count(*) FILTER (WHERE method = 'model') AS by_model FROM skip_taxonomy WHERE k >= 2 "
                           "GROUP BY 1 ORDER BY n DESC")
    plots = report_plots(metrics, taxonomy)
    reports = store.artifacts_dir / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    for name, png in plots.items():
        (reports / name).write_bytes(png)
    decisions = store.query("""SELECT direction, k, count(*) FILTER (decision = 'WRITE') AS "WRITE",
                                      count(*) FILTER (decision = 'SKIP') AS "SKIP",
                                      count(*) FILTER (decision IN ('INVALID', 'FAILED')) AS "INVALID or FAILED",
                                      printf('%.1f', 100 * count(*) FILTER (decision = 'SKIP')
                                             / nullif(count(*) FILTER (decision IN ('WRITE', 'SKIP')), 0))
                                        AS "SKIP %"
                               FROM llm_records GROUP BY ALL ORDER BY ALL""")
    splits = store.query("SELECT split, count(*) AS n FROM benchmark_queries GROUP BY 1 ORDER BY 1")
    stamp = version_stamp(metrics)
    sections = report_sections(metrics, external, taxonomy, decisions, splits, training_data_table(model_cards(store)),
                               stamp, datetime.now(UTC))
    body = markdown_document(REPORT_TITLE, sections)
    report_path, html_path, mteb_path = reports / "benchmark_report.md", reports / "benchmark_report.html", \
        reports / "mteb_results.json"
    report_path.write_text(body)
    html_path.write_text(html_document(REPORT_TITLE, sections, plots))
    mteb_path.write_text(json.dumps(mteb_results(metrics, stamp["data_version"], stamp["code_version"]), indent=2))
    (reports / "mteb_external_results.json").write_text(
        json.dumps(external_mteb_results(external, stamp["code_version"]), indent=2))
    store.write("benchmark_report", [{"markdown": body, "report_path": str(report_path),
                                      "plot_path": str(reports / "metrics_by_system.png"), "html_path": str(html_path),
                                      "mteb_path": str(mteb_path), "created_at": datetime.now(UTC)}])
    return dg.MaterializeResult(metadata={"report": dg.MetadataValue.md(inline_images(body, plots)),
                                          "html": dg.MetadataValue.path(str(html_path)),
                                          "report_path": dg.MetadataValue.path(str(report_path)),
                                          "mteb_results": dg.MetadataValue.path(str(mteb_path))})
