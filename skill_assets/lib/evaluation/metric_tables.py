"""The evaluation tables of a set of runs: long run rows, query slices, and metrics with intervals.

The generated benchmark (``retrieval_runs`` → ``benchmark_metrics``) and every external benchmark
(``external_runs`` → ``external_metrics``) go through these functions over runs of the one system
runner (``lib.retrieval.systems``), so a number on an external benchmark means exactly what the same
number means on ours: same documents, same systems, same metrics, same significance test.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from skill_assets.lib.common.significance import bootstrap_interval, paired_bootstrap
from skill_assets.lib.core.metrics import mean_metrics, per_query_metrics
from skill_assets.lib.core.runs import Qrels, Run

BASE_SYSTEM = "embedder:base"


def run_rows(runs: dict[str, Run], **fixed) -> list[dict]:
    """Long rows (system, query_id, rank, skill_id, score, model_version) plus ``fixed`` columns: each system's
    run as a runs table holds it (``defs.evaluation.assets.runs_by_system`` reads it back)."""
    return [{**fixed, "system": system, "query_id": qid, "rank": r + 1, "skill_id": sid, "score": score,
             "model_version": run.version}
            for system, run in runs.items() for qid, ranking in run.rankings.items()
            for r, (sid, score) in enumerate(ranking)]


def query_slices(queries: Sequence[dict], fields: Sequence[str]) -> dict[str, np.ndarray]:
    """Boolean masks over ``queries``: ``all`` plus ``<field>=<value>`` for every value of each field
    (null values, a field the benchmark does not record, make no slice)."""
    slices = {"all": np.ones(len(queries), dtype=bool)}
    for field in fields:
        for value in sorted({q[field] for q in queries} - {None}):
            slices[f"{field}={value}"] = np.array([q[field] == value for q in queries])
    return slices


def metric_rows(runs: dict[str, Run], qrels: Qrels, slices: dict[str, np.ndarray],
                base_system: str = BASE_SYSTEM) -> list[dict]:
    """Mean of every metric per system and slice, its 95% bootstrap interval, and the paired-bootstrap
    difference to ``base_system``.

    Every system's run is scored against ``qrels`` (each query's ground truth as groups of
    interchangeable skills; ``singleton_groups`` where a benchmark names no copies), over the qrels'
    queries in their order, which ``slices`` mask; rankings are collapsed onto the groups first
    (``skill_groups``). A query a system did not answer scores zero. Rows: system, slice, metric,
    value, ci_low, ci_high, n_queries, delta_vs_base, p_value_vs_base.
    """
    per_query = {system: per_query_metrics(run, qrels) for system, run in runs.items()}
    base = per_query.get(base_system)
    rows = []
    for system in sorted(per_query):
        for name, mask in slices.items():
            values = {m: v[mask] for m, v in per_query[system].items()}
            for metric, mean in mean_metrics(values).items():
                delta, p = (paired_bootstrap(values[metric], base[metric][mask])
                            if base is not None and system != base_system else (None, None))
                low, high = bootstrap_interval(values[metric])
                rows.append({"system": system, "slice": name, "metric": metric, "value": mean, "ci_low": low,
                             "ci_high": high, "n_queries": int(mask.sum()),
                             "delta_vs_base": delta, "p_value_vs_base": p})
    return rows
