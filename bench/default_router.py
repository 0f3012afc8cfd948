"""The shipped default router: does it carry past the writing it was fitted on, and what does a user get on test?

    .venv/bin/python bench/default_router.py [--corpus DIR] [--test] [--db STORE]

Pool: every SKILL.md of the shared GitHub corpus, indexed with the shipped router's signals (BM25,
bundled MiniLM, USE multilingual). Folds over the curated train + dev requests, each refitting the
shipped recipe (its kind and hyper-parameters, from the card) on the requests outside the fold and
scoring the fold: leave-one-writer-out, and leave-one-repository-out (a request belongs to the
repositories of its ground-truth skills; repositories with fewer than ``MIN_FOLD`` requests form one
fold together). Each fold compares the refitted fusion with BM25 and the best RRF pair on Hit@1 and
NDCG@10. The styles dev set is scored by the shipped model as is (it chose the hyper-parameters).
``--test`` also scores what ``Router.from_store`` gives on the curated test split — with no store, and
with ``--db`` (e.g. the demo's store) — once, at the end of the work. Ends with one JSON line; writes
its tables into docs/RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from results_doc import write_section  # noqa: E402
from shared_corpus import CORPUS  # noqa: E402

from skill_assets.lib.retrieval.engine import Engine  # noqa: E402
from skill_assets.lib.retrieval.engine_config import FittedRouting
from skill_assets.lib.models.bundled_models import bundled_minilm  # noqa: E402
from skill_assets.lib.evaluation.curated_benchmark import load_requests  # noqa: E402
from skill_assets.lib.retrieval.defaults import shipped_router  # noqa: E402
from skill_assets.lib.retrieval.fusion import fit  # noqa: E402
from skill_assets.lib.retrieval.fusion_training import labels  # noqa: E402
from skill_assets.lib.retrieval.pools import load_pool  # noqa: E402
from skill_assets.lib.retrieval.ranking import top_k_rankings  # noqa: E402
from skill_assets.lib.core.metrics import per_query_metrics  # noqa: E402
from skill_assets.lib.core.runs import Ranking  # noqa: E402
from skill_assets.lib.retrieval.requests import Request, qrels, run_of  # noqa: E402
from skill_assets.lib.retrieval.systems import run_systems  # noqa: E402
from skill_assets.router.routing import Router, stderr_log  # noqa: E402
from skill_assets.router.shipped_router import CURATED_REQUESTS, STYLES_REQUESTS  # noqa: E402

MIN_FOLD = 15
METRICS = ("hit@1", "ndcg@10")


def scored(rankings: list[Ranking], requests: list[Request]) -> dict[str, float]:
    per = per_query_metrics(run_of(requests, rankings), qrels(requests))
    return {m: round(float(np.nanmean(per[m])), 4) for m in METRICS}


def systems_on(router: Engine, model, requests: list[Request]) -> dict[str, dict[str, float]]:
    """BM25, each RRF pair and the fusion ``model`` on ``requests``, from the one system runner."""
    shipped, router.fusion = router.fusion, model
    try:
        runs = run_systems(router, {r.id: r.query for r in requests}, "base", top_k=50)
    finally:
        router.fusion = shipped
    return {name: scored(list(run.rankings.values()), requests) for name, run in runs.items()
            if name in ("bm25", "fusion") or name.startswith("rrf:")}


def bm25_hit1(router: Engine, requests: list[Request]) -> float:
    rankings = top_k_rankings(router.signal_scores([q.query for q in requests])["bm25"], router.ids, 50)
    return round(float(np.nanmean(per_query_metrics(run_of(requests, rankings), qrels(requests))["hit@1"])), 4)


def verdict(systems: dict[str, dict[str, float]]) -> dict[str, bool]:
    best_rrf = {m: max(v[m] for k, v in systems.items() if k.startswith("rrf:")) for m in METRICS}
    return {f"{m}_ge_bm25": systems["fusion"][m] >= systems["bm25"][m] for m in METRICS} | {
        f"{m}_ge_best_rrf": systems["fusion"][m] >= best_rrf[m] for m in METRICS}


def folds(requests: list[Request]) -> dict[str, list[int]]:
    """Fold name → indices of the held-out requests (writer folds, then repository folds)."""
    out: dict[str, list[int]] = {}
    for i, r in enumerate(requests):
        out.setdefault(f"writer={r.id.split('-')[0]}", []).append(i)
    repos = [{sid.split("/")[0] for g in r.groups for sid in g} for r in requests]
    sizes = Counter(repo for rs in repos for repo in rs)
    for repo in sorted(sizes):
        if sizes[repo] >= MIN_FOLD:
            out[f"repo={repo}"] = [i for i, rs in enumerate(repos) if repo in rs]
    small = [i for i, rs in enumerate(repos) if rs and all(sizes[x] < MIN_FOLD for x in rs)]
    if small:
        out["repo=<smaller repositories>"] = small
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(CORPUS))
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--test", action="store_true", help="also score the curated test split (once)")
    ap.add_argument("--db", help="a store to route through Router.from_store on test (e.g. the demo's)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    skills, _ = load_pool(args.corpus)
    shipped, _ = shipped_router()
    card = shipped.card
    router = Engine(bundled_minilm(), cache_dir=args.cache_dir, signals=shipped.signals, fitted=FittedRouting(shipped),
                    log=stderr_log)
    router.index(skills)
    curated = load_requests(CURATED_REQUESTS)
    fitting = [r for r in curated if r.split in ("train", "dev")]
    cands = router.candidates([r.query for r in fitting], signals=shipped.signals)
    y = labels(cands, fitting, router.ids)
    fold_rows = {}
    for name, held in folds(fitting).items():
        inside = sorted(set(range(len(fitting))) - set(held))
        model = fit(card["kind"], card["params"], [cands[i] for i in inside], [y[i] for i in inside],
                    shipped.signals, shipped.depth)
        systems = systems_on(router, model, [fitting[i] for i in held])
        fold_rows[name] = {"n": len(held), "systems": systems, "passes": verdict(systems)}
        stderr_log(f"{name} (n={len(held)}): " + json.dumps(systems))
    styles = [r for r in load_requests(STYLES_REQUESTS) if r.split == "dev"] if STYLES_REQUESTS.is_file() else []
    out = {"pool": len(skills), "kind": card["kind"], "params": card["params"], "folds": fold_rows,
           "all_folds_pass": all(all(f["passes"].values()) for f in fold_rows.values()),
           "styles_dev": systems_on(router, shipped, styles) if styles else None}
    if args.test:
        test = [r for r in curated if r.split == "test"]
        out["test"] = {}
        for label, db in (("no store", Path(args.cache_dir or ".") / "missing.duckdb"), ("--db", args.db)):
            if db is None:
                continue
            user = Router.from_store(db_path=db, cache_dir=args.cache_dir, log=stderr_log)
            user.index(skills)
            routed = user.route([r.query for r in test], top_k=50)
            rankings = [one.pairs for one in routed]
            per = per_query_metrics(run_of(test, rankings), qrels(test))
            by_dir = {d: round(float(np.nanmean(per["hit@1"][[r.direction == d for r in test]])), 4)
                      for d in ("en2en", "en2zh", "zh2en", "zh2zh")}
            out["test"][label] = {**scored(rankings, test), "hit@1_by_direction": by_dir,
                                  "bm25_hit@1_by_direction": {d: bm25_hit1(user, [q for q in test if q.direction == d])
                                                              for d in by_dir}}
    out["seconds"] = round(time.perf_counter() - t0, 1)
    write_section("default-router", table(out))
    print(json.dumps(out, ensure_ascii=False))
    return 0


def table(out: dict) -> str:
    """The RESULTS.md section: every fold, the styles dev set, and test where scored."""
    lines = [f"Shipped router ({out['kind']} {out['params']}), pool of {out['pool']} skills. Folds refit the "
             "shipped recipe outside the fold; Hit@1 / NDCG@10 in %.", "",
             "| fold | n | fusion | BM25 | best RRF pair | fusion ≥ both |", "|---|---|---|---|---|---|"]
    for name, f in out["folds"].items():
        s = f["systems"]
        best = max((k for k in s if k.startswith("rrf:")), key=lambda k: s[k]["ndcg@10"])
        pct = lambda d: f"{100 * d['hit@1']:.1f} / {100 * d['ndcg@10']:.1f}"  # noqa: E731
        lines.append(f"| {name} | {f['n']} | {pct(s['fusion'])} | {pct(s['bm25'])} | {pct(s[best])} ({best}) | "
                     f"{'yes' if all(f['passes'].values()) else 'no'} |")
    if out.get("styles_dev"):
        s = out["styles_dev"]
        lines += ["", "Styles dev set (shipped model as is): " + ", ".join(
            f"{k} {100 * v['hit@1']:.1f} / {100 * v['ndcg@10']:.1f}" for k, v in s.items())]
    for label, t in (out.get("test") or {}).items():
        lines += ["", f"Curated test split, `Router.from_store` with {label}: Hit@1 {100 * t['hit@1']:.1f}, "
                      f"NDCG@10 {100 * t['ndcg@10']:.1f}; Hit@1 by direction " + ", ".join(
                          f"{d} {100 * v:.1f} (BM25 {100 * t['bm25_hit@1_by_direction'][d]:.1f})"
                          for d, v in t["hit@1_by_direction"].items())]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
