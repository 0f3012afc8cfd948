"""The hybrid router on the curated benchmark: fit on train, choose on dev, score one split.

    .venv/bin/python bench/router_curated.py --requests REQUESTS.jsonl [--split dev|test] [--model-dir DIR]

Pool: every SKILL.md under the shared GitHub corpus (``router.pools.load_pool``: ids are the skill
folders, as the requests' ids). The fusion model and the selection cut are fitted on the train
requests and chosen on dev (``router.fusion_training``); so is one fusion per left-out signal
(the ablation). Then every system (each signal alone, RRF of each pair, the fusion, fusion +
reranker when the store has a trained reranker, the ablations) ranks the pool for the ``--split``
requests, scored with ground-truth groups as the relevant units (any copy of a skill serves).
Develop on ``--split dev``; the test split is meant to be scored once.

The last stdout line is one JSON object named after the targets: per system Hit@1 / NDCG@10 /
FC@10 / Set-Compat overall and by direction, paired-bootstrap p of the fusion against BM25, and
exact-set match and set F1 of ``selected`` against fixed k = 1, 2, 3 and the oracle k, overall
and by k.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from shared_corpus import CORPUS  # noqa: E402

from skill_assets.lib.retrieval.engine import Engine  # noqa: E402
from skill_assets.lib.retrieval.engine_config import EngineSettings
from skill_assets.lib.models import model_registry as registry  # noqa: E402
from skill_assets.lib.models.bundled_models import bundled_minilm
from skill_assets.lib.common.significance import paired_bootstrap  # noqa: E402
from skill_assets.lib.evaluation.curated_benchmark import load_requests  # noqa: E402
from skill_assets.lib.retrieval.fusion_training import fit_over, save_router_model  # noqa: E402
from skill_assets.lib.retrieval.pools import load_pool  # noqa: E402
from skill_assets.lib.core.metrics import per_query_metrics  # noqa: E402
from skill_assets.lib.core.runs import Ranking, Run  # noqa: E402
from skill_assets.lib.retrieval.requests import Request, qrels, run_of  # noqa: E402
from skill_assets.lib.retrieval.selection import set_scores  # noqa: E402
from skill_assets.lib.retrieval.signals import SIGNALS  # noqa: E402
from skill_assets.lib.retrieval.systems import run_systems  # noqa: E402
from skill_assets.router.routing import stderr_log  # noqa: E402

HEADLINE = ("hit@1", "ndcg@10", "fc@10", "set_compat")
DIRECTIONS = ("en2en", "en2zh", "zh2en", "zh2zh")


def summarise(per_query: dict[str, np.ndarray], requests: list[Request]) -> dict:
    """Headline metrics overall and by direction (set_compat over k ≥ 2 only)."""
    out = {}
    for name, mask in [("all", np.ones(len(requests), bool)),
                       *[(d, np.array([r.direction == d for r in requests])) for d in DIRECTIONS]]:
        if mask.any():
            out[name] = {m: (round(float(np.nanmean(per_query[m][mask])), 4)
                             if np.isfinite(per_query[m][mask]).any() else None) for m in HEADLINE}
            out[name]["n"] = int(mask.sum())
    return out


def selection_report(router: Engine, fused: Run, requests: list[Request]) -> dict:
    """Exact-set match and set F1 of ``selected`` (from the ``fused`` run's rankings) vs fixed k and the oracle k,
    overall and by ground-truth k."""
    cut = router.selection
    rankings = [fused.rankings.get(q.id, []) for q in requests]

    def first_k(ranking: Ranking, k: int) -> list[str]:
        """The first ``k`` distinct skills, copies passed over as ``selected`` passes them."""
        return [sid for sid, _ in cut.candidates(ranking, router.similarity, k)]

    picks = {"selected": [cut.select(r, router.similarity, q.query) for r, q in zip(rankings, requests)],
             **{f"fixed_k{k}": [first_k(r, k) for r in rankings] for k in (1, 2, 3)},
             "oracle_k": [first_k(r, q.k) for r, q in zip(rankings, requests)]}
    out = {}
    for name, chosen in picks.items():
        scores = np.array([set_scores(c, q.groups) for c, q in zip(chosen, requests)])
        row = {"all": {"exact": round(float(scores[:, 0].mean()), 4), "f1": round(float(scores[:, 1].mean()), 4),
                       "n": len(requests)}}
        for k in sorted({q.k for q in requests}):
            mask = np.array([q.k == k for q in requests])
            row[f"k={k}"] = {"exact": round(float(scores[mask, 0].mean()), 4),
                             "f1": round(float(scores[mask, 1].mean()), 4), "n": int(mask.sum())}
        row["mean_selected"] = round(float(np.mean([len(c) for c in chosen])), 3)
        out[name] = row
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", required=True, help="curated requests JSONL (with train/dev/test splits)")
    ap.add_argument("--split", default="dev", help="split to score (default dev; test once, at the end)")
    ap.add_argument("--corpus", default=str(CORPUS))
    ap.add_argument("--cache-dir", default=str(Path("~/.cache/skill-assets/index").expanduser()))
    ap.add_argument("--model-dir", help="save the fitted fusion model here (a folder Router(fusion=...) loads)")
    ap.add_argument("--embedder", help="bi-encoder (default: newest r3 in $SKILL_ASSETS_DB, else bundled MiniLM)")
    ap.add_argument("--reranker", help="cross-encoder for fusion+reranker (default: newest r3 in the store, else none)")
    ap.add_argument("--no-ablation", action="store_true", help="skip the leave-one-signal-out fusions")
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    requests = load_requests(args.requests)
    skills, rejected = load_pool(args.corpus)
    pool_ids = {s.id for s in skills}
    missing = sorted({sid for r in requests for g in r.groups for sid in g} - pool_ids)
    unscorable = [r.id for r in requests if not any(set(g) & pool_ids for g in r.groups)]
    stderr_log(f"pool {len(skills)} skills ({len(rejected)} rejected); {len(requests)} requests; "
               f"{len(missing)} ground-truth ids not in the pool; requests with a group wholly missing: "
               f"{sum(1 for r in requests if any(not set(g) & pool_ids for g in r.groups))}")
    embedder = args.embedder or registry.newest_path(None, registry.EMBEDDER) or bundled_minilm()
    reranker = args.reranker or registry.newest_path(None, registry.RERANKER)
    router = Engine(embedder, reranker, cache_dir=args.cache_dir, signals=SIGNALS,
                    settings=EngineSettings(num_threads=args.threads), log=stderr_log)
    stats = router.index(skills)
    stderr_log(f"indexed in {stats.seconds:.1f}s ({stats.encoded} encoded)")

    fitted = fit_fusion(router, requests, SIGNALS, args.requests)
    stderr_log(f"fusion: {fitted.card['kind']} {fitted.card['params']}; dev {fitted.card['dev']}")
    if args.model_dir:
        save_router_model(fitted, Path(args.model_dir))
    router.fusion, router.selection = fitted.model, fitted.cut

    evaluated = [r for r in requests if r.split == args.split]
    if not evaluated:
        print(f"no {args.split} requests", file=sys.stderr)
        return 2
    queries = [r.query for r in evaluated]
    rr = [("r3", router.reranker)] if router.reranker else []
    runs = run_systems(router, {r.id: r.query for r in evaluated}, "base" if embedder == bundled_minilm() else "r3",
                       top_k=50, rerankers=rr)
    for signals in ([] if args.no_ablation else [tuple(s for s in SIGNALS if s != drop) for drop in SIGNALS]):
        sub = fit_fusion(router, requests, signals, args.requests)
        ranked = []
        for c in router.candidates(queries, signals=signals):
            order, s = sub.model.rank(c)
            ranked.append([(router.ids[c.rows[j]], float(s[j])) for j in order[:50]])
        name = "fusion-" + "-".join(x for x in SIGNALS if x not in signals)
        runs[name] = run_of(evaluated, ranked, f"fusion over {'+'.join(signals)} (ablation)")
    truth = qrels(evaluated)
    per_query = {name: per_query_metrics(run, truth) for name, run in runs.items()}
    systems = {name: summarise(pq, evaluated) for name, pq in per_query.items()}
    base = per_query["bm25"]
    significance = {name: {m: dict(zip(("delta", "p"), map(lambda v: round(v, 4), paired_bootstrap(pq[m], base[m]))))
                           for m in HEADLINE} for name, pq in per_query.items() if name != "bm25"}
    selection = selection_report(router, runs["fusion"], evaluated)
    fusion_all = systems["fusion"]["all"]
    others = {n: s["all"] for n, s in systems.items() if n in ("bm25", "multilingual") or n.startswith(("embedder:", "rrf:"))}
    targets = {
        "fusion_ge_every_signal_and_pair": {m: all(fusion_all[m] is not None and (o[m] is None or fusion_all[m] >= o[m])
                                                   for o in others.values()) for m in HEADLINE},
        "crosslingual_hit@1": {d: systems["fusion"].get(d, {}).get("hit@1") for d in ("en2zh", "zh2en")},
        "within_language_hit@1_minus_bm25": {d: round(systems["fusion"][d]["hit@1"] - systems["bm25"][d]["hit@1"],
                                                      4) for d in ("en2en", "zh2zh") if d in systems["fusion"]},
        "selected_f1_minus_best_fixed_k": {
            key: round(selection["selected"][key]["f1"] - max(selection[f"fixed_k{k}"][key]["f1"] for k in (1, 2, 3)), 4)
            for key in selection["selected"] if key != "mean_selected"},
    }
    print(json.dumps({"split": args.split, "requests": len(evaluated), "pool": len(skills),
                      "missing_gt_ids": len(missing), "unscorable_requests": len(unscorable),
                      "embedder": embedder, "reranker": reranker, "fusion": {k: fitted.card[k] for k in
                                                                             ("kind", "params", "dev", "data")},
                      "systems": systems, "p_vs_bm25": significance, "selection": selection, "targets": targets,
                      "seconds": round(time.perf_counter() - t0, 1)}, ensure_ascii=False))
    return 0


def fit_fusion(router: Engine, requests: list[Request], signals: tuple[str, ...], source: str):
    """A fusion over ``signals`` fitted on train, chosen on dev (every signal, or one left out for the ablation), by
    the one recipe (``fusion_training.fit_over``)."""
    return fit_over(router, requests, signals, router.similarity, f"curated:{Path(source).name}", {}, log=stderr_log)


if __name__ == "__main__":
    raise SystemExit(main())
