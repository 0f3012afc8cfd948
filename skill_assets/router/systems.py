"""The router's systems for the evaluation tables: every signal alone, RRF of each pair, the fusion, fusion + reranker.

One ``Router`` scores the pool once per signal for all queries; the systems are read off those
score matrices, so the numbers in ``retrieval_runs`` / ``benchmark_metrics`` / ``external_metrics``
are the router's own, not a re-implementation. Names: ``signal:<s>``, ``rrf:<a>+<b>``, ``fusion`` (the store's
newest), ``fusion+reranker:<variant>``, and ``router:default`` (what ``Router.from_store`` gives a user).
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import polars as pl

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.common.retrieval import Ranking, rerank
from skill_assets.lib.common.skill_text import QUERY_CHARS
from skill_assets.lib.evaluation.systems import SystemRun
from skill_assets.router.fusion import MODEL_FILE, FusionModel
from skill_assets.router.routing import Router
from skill_assets.router.search import top_k_rows
from skill_assets.router.signals import SIGNALS

RRF_K = 60
#: the system name of the learned fusion in the evaluation tables; a reranker over it is ``fusion+reranker:<v>``
FUSED_SYSTEM = "fusion"
#: the router ``Router.from_store`` gives a user of the store (the shipped one unless a store part was adopted)
DEFAULT_SYSTEM = "router:default"


def rrf(lists: Sequence[Ranking], top_k: int, k: int = RRF_K) -> Ranking:
    """Reciprocal-rank fusion (Cormack et al. 2009): sum of 1 / (k + rank) over the lists that hold a skill."""
    fused: dict[str, float] = {}
    for ranking in lists:
        for rank, (sid, _) in enumerate(ranking, 1):
            fused[sid] = fused.get(sid, 0.0) + 1.0 / (k + rank)
    return sorted(fused.items(), key=lambda t: (-t[1], t[0]))[:top_k]


def fusion_version(model: FusionModel, directory: str | None) -> str:
    if directory:
        return digest((Path(directory) / MODEL_FILE).read_bytes())
    return digest(repr((model.kind, model.params, model.coef)))


def router_runs(router: Router, queries: Sequence[str], top_k: int = 50, rerank_depth: int = 20,
                rerankers: Sequence[tuple[str, str, Callable[[list[tuple[str, str]]], np.ndarray]]] = (),
                fusion_dir: str | None = None) -> dict[str, SystemRun]:
    """Every router system over an indexed ``router`` (all its signals indexed; ``router.fusion`` optional).

    ``rerankers`` are ``(variant, weights fingerprint, score_pairs)``; each reranks the fused top ``rerank_depth``.
    """
    queries = list(queries)
    scores = router.signal_scores(queries)
    ids = router.ids
    versions = router.signal_versions()
    runs = {f"signal:{s}": SystemRun(top_k_rows(scores[s], ids, top_k), versions[s])
            for s in SIGNALS if s in scores}
    for a, b in itertools.combinations([s for s in SIGNALS if s in scores], 2):
        pair = [runs[f"signal:{a}"].rankings, runs[f"signal:{b}"].rankings]
        runs[f"rrf:{a}+{b}"] = SystemRun([rrf(lists, top_k) for lists in zip(*pair)],
                                         f"rrf{RRF_K}({versions[a]}, {versions[b]})")
    if router.fusion is None:
        return runs
    version = fusion_version(router.fusion, fusion_dir)
    fused = []
    for c in router.candidates(queries, scores=scores):
        s = router.fusion.score(c)
        order = np.argsort(-s, kind="stable")[:top_k]
        fused.append([(ids[c.rows[j]], float(s[j])) for j in order])
    runs[FUSED_SYSTEM] = SystemRun(fused, version)
    texts = router._rerank_texts()
    for variant, fingerprint, score_pairs in rerankers:
        runs[f"{FUSED_SYSTEM}+reranker:{variant}"] = SystemRun(
            rerank([q[:QUERY_CHARS] for q in queries], fused, texts, score_pairs, rerank_depth),
            f"{fingerprint} over {FUSED_SYSTEM}@{version}")
    return runs


def is_router_system(system: str) -> bool:
    return system.startswith(("signal:", "rrf:", FUSED_SYSTEM, DEFAULT_SYSTEM))


def ablation_table(metrics: pl.DataFrame, split: str, metric: str = "hit@1") -> pl.DataFrame:
    """``metric`` of each router system by query direction on ``split``: which signal adds what, where."""
    part = metrics.filter((pl.col("split") == split) & (pl.col("metric") == metric)
                          & pl.col("system").map_elements(is_router_system, return_dtype=pl.Boolean)
                          & (pl.col("slice").is_in(["all"]) | pl.col("slice").str.starts_with("direction=")))
    if not part.height:
        return pl.DataFrame({"system": []}, schema={"system": pl.Utf8})
    wide = part.with_columns(pl.col("slice").str.replace("direction=", "")).pivot(
        on="slice", index="system", values="value").sort("system")
    return wide.select("system", *[c for c in ("all", "en2en", "en2zh", "zh2en", "zh2zh") if c in wide.columns])


def store_router_runs(skills: Sequence[dict], queries: Sequence[str], db_path: str | Path, embedder: str,
                      rerankers: Sequence[tuple[str, str]], query_prompt: str = "", top_k: int = 50,
                      rerank_depth: int = 20) -> dict[str, SystemRun]:
    """The router systems over one pool (``skills`` dicts as in ``lib.evaluation.run_systems``), with the store's
    newest fusion (when one is registered) and each ``(variant, path)`` reranker over the fused head."""
    from sentence_transformers import CrossEncoder

    from skill_assets.lib.common.embedding_cache import model_fingerprint
    from skill_assets.router.pools import Skill
    from skill_assets.router.registry import load_fusion, registered_fusion

    fusion_dir = registered_fusion(db_path)
    fusion, cut = load_fusion(fusion_dir) if fusion_dir else (None, None)
    router = Router(embedder, cache_dir=Path(db_path).resolve().parent / "index_cache", query_prompt=query_prompt,
                    signals=SIGNALS, fusion=fusion, selection=cut)
    router.index([Skill(s["skill_id"], s["name"], s["description"], s["body"]) for s in skills])
    def pair_scorer(path: str) -> Callable[[list[tuple[str, str]]], np.ndarray]:
        predict = CrossEncoder(path).predict
        return lambda pairs: np.asarray(predict(pairs, batch_size=32))

    scorers = [(variant, model_fingerprint(path), pair_scorer(path)) for variant, path in rerankers] if fusion else []
    runs = router_runs(router, queries, top_k, rerank_depth, scorers, fusion_dir)
    runs[DEFAULT_SYSTEM] = default_router_run(skills, queries, db_path, top_k, rerank_depth)
    return runs


def default_router_run(skills: Sequence[dict], queries: Sequence[str], db_path: str | Path, top_k: int = 50,
                       rerank_depth: int = 20) -> SystemRun:
    """What a user of this store gets from ``Router.from_store``: the shipped router unless a store part passed the
    adoption rule. Scored beside the store's own models, so the report shows the default a user actually meets."""
    from skill_assets.router.pools import Skill

    router = Router.from_store(db_path=db_path, cache_dir=Path(db_path).resolve().parent / "index_cache")
    router.index([Skill(s["skill_id"], s["name"], s["description"], s["body"]) for s in skills])
    routed = router.route_requests(list(queries), top_k=top_k, rerank_depth=rerank_depth)
    parts = f"{fusion_version(router.fusion, None)} over {router.signals}" + (
        f" + reranker {router.reranker_path}" if router.reranker_path else "")
    return SystemRun([[(r.skill_id, r.score) for r in one.ranking] for one in routed], parts)
