"""Judging a store's learned part against the shipped default on dev: the scoring half of the adoption rule.

The rule itself (the counts, the dev win, and re-checking a stored verdict from its evidence) is in
``adoption_rule``; this module scores a freshly fitted fusion and the store's reranker over the dev
split, against the shipped router indexed over the same pool, where the ``router_fusion`` asset fits them.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from skill_assets.lib.retrieval.engine_config import FittedRouting
from skill_assets.lib.retrieval.adoption_rule import DEV_METRIC, Verdict, judge
from skill_assets.lib.retrieval.defaults import shipped_embedder, shipped_router
from skill_assets.lib.retrieval.engine import Engine
from skill_assets.lib.retrieval.pools import Skill
from skill_assets.lib.core.metrics import per_query_metrics
from skill_assets.lib.retrieval.requests import Request, qrels, run_of


def routed_metric(engine: Engine, requests: Sequence[Request], use_reranker: bool) -> np.ndarray:
    """Per-request ``DEV_METRIC`` of what ``engine.route`` ranks (copies collapsed onto their groups)."""
    routed = engine.route([r.query for r in requests], top_k=10, use_reranker=use_reranker)
    return per_query_metrics(run_of(requests, [one.pairs for one in routed]), qrels(requests))[DEV_METRIC]


def adoption_verdicts(requests: Sequence[Request], fitted: Engine, skills: Sequence[Skill],
                      reranker: tuple[str, int] | None = None) -> dict[str, Verdict]:
    """The rule's verdicts on a fusion just fitted (``fitted``, indexed over ``skills``) and on a store's reranker
    (``(path, train requests)``), both on the fusion's dev split. The shipped router (its tuned MiniLM) is indexed
    over the same pool only when a comparison is due."""
    train, dev = ({r.id for r in requests if r.split == s} for s in ("train", "dev"))
    dev_requests = [r for r in requests if r.split == "dev"]
    disjoint = bool(dev) and not train & dev
    shipped: list[Engine] = []

    def shipped_engine() -> Engine:
        if not shipped:
            fusion, cut = shipped_router()
            shipped.append(Engine(shipped_embedder(), cache_dir=fitted.cache_dir, fitted=FittedRouting(fusion, cut),
                                  log=fitted.log))
            shipped[0].index(list(skills))
        return shipped[0]

    verdicts = {"fusion": judge("the store's fusion", len(train), len(dev), disjoint,
                                lambda: (routed_metric(fitted, dev_requests, False),
                                         routed_metric(shipped_engine(), dev_requests, False)))}
    if reranker:
        path, trained = reranker

        def with_reranker() -> tuple:
            used = fitted if verdicts["fusion"].adopt else shipped_engine()
            used.reranker_path = path
            return routed_metric(used, dev_requests, True), routed_metric(used, dev_requests, False)

        verdicts["reranker"] = judge("the store's reranker", trained, len(dev), disjoint, with_reranker)
    return verdicts
