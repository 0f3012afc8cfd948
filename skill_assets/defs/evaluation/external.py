"""External benchmarks: import another release's skill pool and queries, then score every system on it.

Partitioned by benchmark name (``partitions.py``). Each partition replaces only its own rows of
``external_skills``, ``external_queries``, ``external_runs`` and ``external_metrics``. Runs and
metrics come from the same functions as ``retrieval_runs`` and ``benchmark_metrics``.
"""
import dagster as dg

from skill_assets.defs.evaluation.assets import GROUP, SystemSettings, evaluate_systems, runs_by_system, write_trec_runs
from skill_assets.defs.evaluation.partitions import external_benchmark_specs, external_benchmarks
from skill_assets.defs.metadata import table_metadata
from skill_assets.defs.resources import DUCKDB_WRITER_TAG, DuckDBStore, ModelSettings
from skill_assets.lib.common import store as store_lib
from skill_assets.lib.common.provenance import code_version
from skill_assets.lib.common.tables import frame
from skill_assets.lib.evaluation.external_benchmarks import BenchmarkFormatError, load_benchmark
from skill_assets.lib.evaluation.metric_tables import metric_rows, query_slices, run_rows
from skill_assets.lib.retrieval.requests import from_external_queries, qrels
from skill_assets.lib.retrieval.store_skills import store_skills

MODELS = [dg.AssetDep("embedder", partition_mapping=dg.AllPartitionMapping()),
          dg.AssetDep("reranker", partition_mapping=dg.AllPartitionMapping()), "router_fusion"]


def _write(store: DuckDBStore, table: str, benchmark: str, rows: list[dict]):
    df = frame(table, rows)
    store_lib.replace_partition(store.path, table, df, "benchmark", benchmark)
    return df


@dg.multi_asset(
    specs=[
        dg.AssetSpec("external_skills", group_name=GROUP, kinds={"duckdb"},
                     description="The skill pool of an external benchmark."),
        dg.AssetSpec("external_queries", group_name=GROUP, kinds={"duckdb"},
                     description="Queries and ground truth of an external benchmark; ids the pool lacks listed."),
    ],
    partitions_def=external_benchmarks, op_tags=DUCKDB_WRITER_TAG,
)
def external_benchmark(context: dg.AssetExecutionContext, store: DuckDBStore):
    name = context.partition_key
    spec = external_benchmark_specs()[name]
    try:
        bench = load_benchmark(spec)
    except (BenchmarkFormatError, FileNotFoundError) as exc:
        raise dg.Failure(f"benchmark {name!r} ({spec.path}) cannot be imported: {exc}") from exc
    skills = _write(store, "external_skills", name, [
        {"benchmark": name, "skill_id": s.id, "name": s.name, "description": s.description, "body": s.body}
        for s in bench.skills])
    queries = _write(store, "external_queries", name, [
        {"benchmark": name, "layout": bench.layout, "query_id": q.id, "query": q.query, "skill_ids": list(q.skill_ids),
         "skill_groups": [list(g) for g in q.groups], "unknown_skill_ids": list(q.unknown_skill_ids),
         "k": len(q.groups), "direction": q.direction, "evaluated": bool(q.skill_ids),
         "data_version": bench.version} for q in bench.queries])
    unknown = sorted({s for q in bench.queries for s in q.unknown_skill_ids})
    if unknown:
        context.log.warning(f"{name}: {len(unknown)} ground-truth skill ids are not in the pool: {unknown[:20]}")
    yield dg.MaterializeResult(asset_key="external_skills", metadata=table_metadata(
        "external_skills", skills, path=dg.MetadataValue.path(str(spec.path)), layout=bench.layout))
    yield dg.MaterializeResult(asset_key="external_queries", metadata=table_metadata(
        "external_queries", queries, layout=bench.layout, data_version=bench.version,
        unknown_skill_ids=len(unknown), queries_not_evaluated=sum(not q.skill_ids for q in bench.queries)))


@dg.asset(group_name=GROUP, kinds={"duckdb"}, partitions_def=external_benchmarks, op_tags=DUCKDB_WRITER_TAG,
          deps=["external_skills", "external_queries", *MODELS])
def external_runs(context: dg.AssetExecutionContext, config: SystemSettings, store: DuckDBStore,
                  models: ModelSettings):
    """Rankings of an external pool by every system, exactly as ``retrieval_runs`` ranks ours."""
    name = context.partition_key
    skills = store_skills(store.path, benchmark=name)
    queries = store.query("SELECT query_id, query FROM external_queries WHERE benchmark = ? AND evaluated "
                          "ORDER BY query_id", [name]).to_dicts()
    rows = []
    if skills and queries:
        runs = evaluate_systems(skills, {q["query_id"]: q["query"] for q in queries}, store, models, config)
        rows = run_rows(runs, benchmark=name)
    else:
        context.log.warning(f"{name}: {len(skills)} skills and {len(queries)} scorable queries: nothing to rank")
    df = _write(store, "external_runs", name, rows)
    run_dir = write_trec_runs(df, store.artifacts_dir / "reports" / "external" / name / "runs")
    return dg.MaterializeResult(metadata=table_metadata("external_runs", df,
                                                        systems=", ".join(sorted(set(df["system"].to_list()))),
                                                        trec_runs=dg.MetadataValue.path(str(run_dir))))


@dg.asset(group_name=GROUP, kinds={"duckdb"}, partitions_def=external_benchmarks, op_tags=DUCKDB_WRITER_TAG,
          deps=["external_runs", "external_queries"])
def external_metrics(context: dg.AssetExecutionContext, store: DuckDBStore):
    """Every metric per system on an external benchmark, overall, by k and by direction (where recorded), with
    95% intervals and significance against the base; a ranked copy counts as its ground-truth group."""
    name = context.partition_key
    queries = {q["query_id"]: q for q in store.query(
        "SELECT * FROM external_queries WHERE benchmark = ? AND evaluated", [name]).to_dicts()}
    data_version = next(iter(queries.values()))["data_version"] if queries else None
    code, rows = code_version(), []
    for _, runs in runs_by_system(store, "external_runs", "benchmark", "WHERE benchmark = ?", [name]):
        qids = sorted(queries)
        truth = qrels(from_external_queries([queries[q] for q in qids]))
        for row in metric_rows(runs, truth, query_slices([queries[q] for q in qids], ("k", "direction"))):
            rows.append({**row, "benchmark": name, "data_version": data_version, "code_version": code,
                         "model_version": runs[row["system"]].version})
    df = _write(store, "external_metrics", name, rows)
    headline = {f"{r['system']}/{r['metric']}": round(r["value"], 4) for r in rows
                if r["slice"] == "all" and r["metric"] in ("hit@1", "ndcg@10")}
    return dg.MaterializeResult(metadata=table_metadata("external_metrics", df, data_version=data_version,
                                                        code_version=code, **headline))
