"""The rule that keeps a harmful reranker out of the default route: the store's own benchmark figures."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from skill_assets.lib.common.embedding_cache import model_fingerprint
from skill_assets.router.registry import resolve_db


@dataclass(frozen=True)
class RerankerEvidence:
    """What the store's own benchmarks say of a reranker against the first stage it reranked."""

    helps: bool | None  # None: the store holds no figures for these weights
    reason: str


#: the system name of the learned fusion in the evaluation tables; a reranker over it is ``fusion+reranker:<v>``
FUSED_SYSTEM = "fusion"
#: the benchmark rows a reranker is judged on: the test split, and every external benchmark
_EVIDENCE = {"benchmark_metrics": ("split", "AND r.split = 'test'"), "external_metrics": ("benchmark", "")}


def reranker_evidence(db_path: str | Path | None, reranker_path: str | Path,
                      first_stage: str | None = None) -> RerankerEvidence:
    """NDCG@10 of this reranker (matched by weight fingerprint) against its first stage, pooled over queries;
    only over ``first_stage`` (e.g. ``FUSED_SYSTEM``) when given: the head the router would rerank.

    A registered reranker is the newest one trained, not necessarily a good one (a few training
    queries from a tiny generator make it worse than no reranking); the evaluation assets have
    already scored it, so the router reads that verdict instead of guessing.
    """
    from skill_assets.lib.common import store

    db = resolve_db(db_path)
    fingerprint = model_fingerprint(reranker_path)
    rows = []
    for table, (key, where) in _EVIDENCE.items():
        if not db.is_file() or not store.table_exists(db, table):
            continue
        found = store.query(db, f"""SELECT r.{key} AS bench, r.value AS reranked, f.value AS first, r.n_queries AS n
            FROM "{table}" r JOIN "{table}" f ON f.{key} = r.{key} AND f.slice = 'all' AND f.metric = 'ndcg@10'
                 AND f.system = split_part(split_part(r.model_version, ' over ', 2), '@', 1)
            WHERE (r.system LIKE 'reranker:%' OR r.system LIKE '%+reranker:%') AND r.slice = 'all' AND r.metric = 'ndcg@10' AND r.n_queries > 0
                  AND starts_with(r.model_version, ?) {where}
                  AND (? IS NULL OR f.system = ?)""", [fingerprint + " ", first_stage, first_stage])
        rows.extend(found.iter_rows(named=True))
    n = sum(r["n"] for r in rows)
    if not n:
        return RerankerEvidence(None, "no benchmark figures for these weights in the store")
    reranked, first = (sum(r[k] * r["n"] for r in rows) / n for k in ("reranked", "first"))
    where = ", ".join(sorted({str(r["bench"]) for r in rows}))
    return RerankerEvidence(reranked >= first, f"NDCG@10 {reranked:.3f} reranked vs {first:.3f} first stage over "
                                               f"{n} queries ({where})")
