"""The one rule that lets a store's learned part replace the shipped default: enough data, and a dev win.

A model fitted in a store (a fusion, a selection cut, a bi-encoder, a reranker) is the newest one,
not necessarily a good one: the demo fits its fusion on a handful of generated requests and
scores 1.0 on them. So a store's part replaces the shipped default only when

- it was fitted on at least ``MIN_TRAIN_REQUESTS`` train requests,
- it was chosen on a dev split of at least ``MIN_DEV_REQUESTS`` requests disjoint from train, and
- on that dev split, over the same pool, it beats the default: the paired mean difference of
  NDCG@10 is above zero (the bootstrap interval is reported beside it, so a reader can see how
  firm the win is).

Never decided from test figures. The verdict is computed where the part is fitted (the
``router_fusion`` asset) and stored with it; ``Router.from_store`` reads it and logs the reason
in one line when it keeps the default.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from skill_assets.lib.common.bundled_models import bundled_minilm
from skill_assets.lib.common.significance import bootstrap_interval, paired_bootstrap
from skill_assets.lib.retrieval.defaults import shipped_router
from skill_assets.lib.retrieval.engine import Engine
from skill_assets.lib.retrieval.pools import Skill
from skill_assets.lib.retrieval.requests import Request, group_metrics

MIN_TRAIN_REQUESTS = 100
MIN_DEV_REQUESTS = 50
#: the dev metric a candidate must beat the default on
DEV_METRIC = "ndcg@10"


@dataclass(frozen=True)
class Verdict:
    """Whether a store's part replaces the default, and the one line that says why."""

    adopt: bool
    reason: str
    delta: float | None = None          # candidate − default on dev, mean over requests
    interval: tuple[float, float] | None = None  # 95% bootstrap interval of that difference

    def as_row(self) -> dict:
        lo, hi = self.interval or (None, None)
        return {"adopted": self.adopt, "adoption_reason": self.reason, "dev_delta_vs_default": self.delta,
                "dev_delta_low": lo, "dev_delta_high": hi}


def judge(part: str, train_requests: int, dev_requests: int, disjoint: bool,
          paired: Callable[[], tuple[np.ndarray, np.ndarray]] | None = None) -> Verdict:
    """The verdict on one part from its data counts, then (only when those pass: scoring costs) ``paired()``:
    per-request dev ``DEV_METRIC`` of the candidate and of the default, over the same requests and pool."""
    if train_requests < MIN_TRAIN_REQUESTS:
        return Verdict(False, f"{part} fitted on {train_requests} requests, needs {MIN_TRAIN_REQUESTS}")
    if not disjoint:
        return Verdict(False, f"{part} has no dev split disjoint from its train requests")
    if dev_requests < MIN_DEV_REQUESTS:
        return Verdict(False, f"{part} chosen on {dev_requests} dev requests, needs {MIN_DEV_REQUESTS}")
    if paired is None:
        return Verdict(False, f"{part} has no paired dev figures against the shipped default")
    candidate, default = (np.asarray(a, dtype=float) for a in paired())
    delta, _ = paired_bootstrap(candidate, default)
    interval = bootstrap_interval(candidate - default)
    line = (f"dev {DEV_METRIC} {np.nanmean(candidate):.3f} vs default {np.nanmean(default):.3f} over {len(candidate)} "
            f"requests (difference {delta:+.3f}, 95% interval [{interval[0]:+.3f}, {interval[1]:+.3f}])")
    if not delta > 0:
        return Verdict(False, f"{part} does not beat the default: {line}", delta, interval)
    return Verdict(True, f"{part} beats the default: {line}", delta, interval)


def routed_metric(engine: Engine, requests: Sequence[Request], use_reranker: bool) -> np.ndarray:
    """Per-request ``DEV_METRIC`` of what ``engine.route`` ranks (copies collapsed onto their groups)."""
    routed = engine.route([r.query for r in requests], top_k=10, use_reranker=use_reranker)
    return group_metrics([[x.skill_id for x in one.ranking] for one in routed], requests)[DEV_METRIC]


def adoption_verdicts(requests: Sequence[Request], fitted: Engine, skills: Sequence[Skill],
                      reranker: tuple[str, int] | None = None) -> dict[str, Verdict]:
    """The rule's verdicts on a fusion just fitted (``fitted``, indexed over ``skills``) and on a store's reranker
    (``(path, train requests)``), both on the fusion's dev split. The shipped router (bundled MiniLM) is indexed
    over the same pool only when a comparison is due."""
    train, dev = ({r.id for r in requests if r.split == s} for s in ("train", "dev"))
    dev_requests = [r for r in requests if r.split == "dev"]
    disjoint = bool(dev) and not train & dev
    shipped: list[Engine] = []

    def shipped_engine() -> Engine:
        if not shipped:
            fusion, cut = shipped_router()
            shipped.append(Engine(bundled_minilm(), cache_dir=fitted.cache_dir, fusion=fusion, selection=cut,
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
