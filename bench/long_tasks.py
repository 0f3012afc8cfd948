"""Long task statements routed by their parts: BM25 alone, the default router, and part-wise routing.

    .venv/bin/python bench/long_tasks.py [--choose] [--test] [--no-doc]

Pool: every SKILL.md of the shared GitHub corpus. Systems: ``bm25`` (BM25 alone over the whole request);
``router``, what ``Router.from_store`` gives with no store, routing the whole request (``Engine.route``; the
router's own ``route`` takes the part-wise path for long requests);
``parts``, the same router through ``part_routing.route_by_parts`` (the whole and each need part, merged);
``parts+setup``, the same keeping the parts a section label marks as setting. Sets: the long-task dev split
(``skill_assets/benchmarks/long_tasks/``), by direction, and the short dev sets (meaning-only, curated, styles),
which part-wise routing must not make worse: their requests of one part route exactly as the router does
(``tests/lib/retrieval/test_part_routing.py``), so only those of several parts are routed again here. Figures: Hit@1,
Set-Compat (every needed skill in the top m, m the skills the request needs) and FC@10 (every needed skill in the
top 10), means over requests in %, with the 95 % bootstrap interval of the paired difference against BM25 for
``parts``. Both read the ranking at a fixed depth, so how many skills are loaded does not move them: the selected
set is scored on its own (precision, recall, F1 and exact match of ``selected`` against the needed skills, and how
many are loaded), for the router's whole-request selection, the part-wise one (``SelectionCut.select_by_parts``) and
the part-wise ranking with the cut's selection alone (at most its cap of 3: what was loaded before).

``--choose`` adds the grids the settings were chosen on (dev only): the merge's (the whole's candidates the parts
may lift, setup parts kept or left out) and the selection's (the most skills loaded, the probability a part's best
skill needs). ``--test`` also scores the long-task test split, once, at the end of the work.
The latency of a long request is ``bench/long_request_latency.py``'s. Writes its section of docs/RESULTS.md and ends
with one JSON line.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from results_doc import write_section  # noqa: E402
from shared_corpus import CORPUS  # noqa: E402

from skill_assets.lib.common.significance import bootstrap_interval  # noqa: E402
from skill_assets.lib.evaluation.curated_benchmark import (  # noqa: E402
    LONG_TASK_MAX_GROUPS,
    LONG_TASK_REQUESTS,
    load_requests,
)
from skill_assets.lib.retrieval.engine import Engine  # noqa: E402
from skill_assets.lib.retrieval.part_routing import CANDIDATES, route_by_parts  # noqa: E402
from skill_assets.lib.retrieval.pools import load_pool  # noqa: E402
from skill_assets.lib.retrieval.ranking import top_k_rankings  # noqa: E402
from skill_assets.lib.core.metrics import per_query_metrics  # noqa: E402
from skill_assets.lib.core.runs import Ranking  # noqa: E402
from skill_assets.lib.retrieval.requests import Request, qrels, run_of  # noqa: E402
from skill_assets.lib.retrieval.results import RoutedRequest  # noqa: E402
from skill_assets.lib.retrieval.selection import (  # noqa: E402
    DEFAULT_CAP,
    PART_PROBABILITY,
    PARTS_MOST,
    set_precision_recall,
    set_scores,
)
from skill_assets.lib.retrieval.task_parts import task_parts  # noqa: E402
from skill_assets.router.routing import Router, stderr_log  # noqa: E402
from skill_assets.router.shipped_embedder import CURATED_REQUESTS, MEANING_REQUESTS  # noqa: E402
from skill_assets.router.shipped_router import STYLES_REQUESTS  # noqa: E402

METRICS = ("hit@1", "set_compat", "fc@10")
TOP_K = 20
#: the grid ``--choose`` scores: (the whole's skills the parts may lift, keep the setup parts)
GRID = [(d, setup) for d in (10, 20, 50, 100) for setup in (False, True)]
#: the selection grid ``--choose`` scores: (the most skills loaded, the probability a part's best skill needs); a
#: probability of 1 adds none (the cut alone), 0 every part's best up to the most
SELECTION_GRID = [(most, p) for most in (3, 4, 5, 6) for p in (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)]
#: the cut alone on the part-wise ranking: at most its cap, no part's best added (what was loaded before)
CUT_ALONE = {"most": DEFAULT_CAP, "part_probability": 1.0}


def long_split(split: str) -> list[Request]:
    return [r for r in load_requests(LONG_TASK_REQUESTS, max_groups=LONG_TASK_MAX_GROUPS) if r.split == split]


def short_dev_sets() -> dict[str, list[Request]]:
    return {name: [r for r in load_requests(path) if r.split == "dev"]
            for name, path in (("meaning dev", MEANING_REQUESTS), ("curated dev", CURATED_REQUESTS),
                               ("styles dev", STYLES_REQUESTS))}


def bm25_rankings(engine: Engine, requests: list[Request]) -> list[Ranking]:
    scores = engine.signal_scores([r.query for r in requests], signals=("bm25",))["bm25"]
    return top_k_rankings(scores, engine.ids, TOP_K)


def fuse_once(engine: Engine) -> None:
    """Make ``engine.fused`` compute each batch of texts once: the grids route the same requests and parts again
    with other merge and selection settings, and the encoders are nearly all the cost (long dev by parts: about
    2 minutes on 2 busy cores). Only calls without precomputed scores (``route_by_parts``, ``Engine.route``)."""
    fused, memo = engine.fused, {}

    def once(queries: list[str], **kwargs) -> list:
        if "scores" in kwargs:
            return fused(queries, **kwargs)
        key = tuple(queries)
        if key not in memo:
            memo[key] = fused(queries, **kwargs)
        return memo[key]

    engine.fused = once


def routed(routes: list[RoutedRequest]) -> list[Ranking]:
    return [r.pairs for r in routes]


def part_routes(engine: Engine, requests: list[Request], whole: list[RoutedRequest], **settings
                ) -> list[RoutedRequest]:
    """Part-wise routes: the requests of several parts routed by parts, the others' whole-request routes reused
    (``route_by_parts`` routes a request of one part by ``Engine.route`` itself)."""
    several = [i for i, r in enumerate(requests) if len(task_parts(r.query)) > 1]
    out = list(whole)
    for i, route in zip(several, route_by_parts(engine, [requests[i].query for i in several], top_k=TOP_K,
                                                **settings)):
        out[i] = route
    return out


def whole_routes(engine: Engine, requests: list[Request]) -> list[RoutedRequest]:
    return engine.route([r.query for r in requests], top_k=TOP_K)


def selection_summary(routes: list[RoutedRequest], requests: list[Request]) -> dict:
    """The selected sets against the needed skills: means in % of precision, recall, F1 and exact match, and the
    mean number loaded."""
    pr = np.array([set_precision_recall(r.selected, q.groups) for r, q in zip(routes, requests)])
    f1_exact = np.array([set_scores(r.selected, q.groups) for r, q in zip(routes, requests)])
    return {"loaded": round(float(np.mean([len(r.selected) for r in routes])), 2),
            "precision": round(100 * float(pr[:, 0].mean()), 1), "recall": round(100 * float(pr[:, 1].mean()), 1),
            "f1": round(100 * float(f1_exact[:, 1].mean()), 1), "exact": round(100 * float(f1_exact[:, 0].mean()), 1)}


def summary(rankings: list[Ranking], requests: list[Request], baseline: list[Ranking] | None = None) -> dict:
    """Means in % and, against ``baseline``, the paired difference with its 95 % bootstrap interval."""
    truth = qrels(requests)
    values = per_query_metrics(run_of(requests, rankings), truth)
    row: dict = {"n": len(requests)}
    base = per_query_metrics(run_of(requests, baseline), truth) if baseline is not None else None
    for m in METRICS:
        v = values[m]
        keep = np.isfinite(v)
        row[m] = round(100 * float(v[keep].mean()), 1) if keep.any() else None
        if base is not None and keep.any():
            diff = v[keep] - base[m][keep]
            lo, hi = bootstrap_interval(diff)
            row[f"{m}_vs_bm25"] = [round(100 * float(diff.mean()), 1), round(100 * lo, 1), round(100 * hi, 1)]
    return row


def score_long(engine: Engine, requests: list[Request]) -> dict:
    """Every system on a long-task split, overall and by direction."""
    whole = whole_routes(engine, requests)
    parts = part_routes(engine, requests, whole)
    runs = {"bm25": bm25_rankings(engine, requests), "router": routed(whole), "parts": routed(parts),
            "parts+setup": routed(part_routes(engine, requests, whole, setup_parts=True))}
    out = {"all": {k: summary(v, requests, runs["bm25"] if k == "parts" else None) for k, v in runs.items()},
           "selected": {"router": selection_summary(whole, requests),
                        "parts, cut alone": selection_summary(part_routes(engine, requests, whole, **CUT_ALONE),
                                                              requests),
                        "parts": selection_summary(parts, requests)}}
    for d in sorted({r.direction for r in requests}):
        idx = [i for i, r in enumerate(requests) if r.direction == d]
        sub = [requests[i] for i in idx]
        out[d] = {k: summary([v[i] for i in idx], sub, [runs["bm25"][i] for i in idx] if k == "parts" else None)
                  for k, v in runs.items()}
    return out


def score_short(engine: Engine, requests: list[Request]) -> dict:
    """BM25, the router and part-wise routing on a short dev set (Set-Compat over its multi-skill requests)."""
    whole = whole_routes(engine, requests)
    several = sum(len(task_parts(r.query)) > 1 for r in requests)
    return {"several_parts": several, "bm25": summary(bm25_rankings(engine, requests), requests),
            "router": summary(routed(whole), requests),
            "parts": summary(routed(part_routes(engine, requests, whole)), requests)}


def choose(engine: Engine, sets: dict[str, list[Request]]) -> list[dict]:
    """The grid on the dev sets: each setting's figures on every set (the short sets' requests of several parts)."""
    whole = {name: whole_routes(engine, rs) for name, rs in sets.items()}
    rows = []
    for candidates, setup in GRID:
        row = {"candidates": candidates, "setup_parts": setup}
        for name, rs in sets.items():
            row[name] = summary(routed(part_routes(engine, rs, whole[name], candidates=candidates,
                                                   setup_parts=setup)), rs)
        rows.append(row)
        stderr_log(f"grid {candidates} {setup}: " + ", ".join(f"{k} {v['hit@1']}/{v['set_compat']}/{v['fc@10']}"
                                                              for k, v in row.items() if isinstance(v, dict)))
    return rows


def choose_selection(engine: Engine, sets: dict[str, list[Request]]) -> list[dict]:
    """The selection grid on the dev sets: each setting's selected-set figures on every set (a short set's requests
    of one part select as before, so only its requests of several parts can move)."""
    whole = {name: whole_routes(engine, rs) for name, rs in sets.items()}
    rows = []
    for most, probability in SELECTION_GRID:
        row = {"most": most, "part_probability": probability}
        for name, rs in sets.items():
            row[name] = selection_summary(part_routes(engine, rs, whole[name], most=most,
                                                      part_probability=probability), rs)
        rows.append(row)
        stderr_log(f"selection {most} {probability}: " + ", ".join(
            f"{k} {v['loaded']} {v['precision']}/{v['recall']}/{v['f1']}" for k, v in row.items()
            if isinstance(v, dict)))
    return rows


def fmt(row: dict, m: str) -> str:
    d = row.get(f"{m}_vs_bm25")
    return f"{row[m]}" + (f" ({d[0]:+.1f} [{d[1]:+.1f}, {d[2]:+.1f}])" if d else "")


def tables(results: dict) -> str:
    lines = []
    for name in [n for n in results if n.startswith("long")]:
        res = results[name]
        lines += [f"**{name}** ({res['all']['bm25']['n']} tasks): Hit@1 / Set-Compat / FC@10 in %; for parts, the "
                  "paired difference against BM25 [95 % interval]", "",
                  "| set | system | Hit@1 | Set-Compat | FC@10 |", "|---|---|---|---|---|"]
        for part, systems in res.items():
            if part == "selected":
                continue
            label = part if part == "all" else f"{part} (n={systems['bm25']['n']})"
            for system, row in systems.items():
                lines.append(f"| {label} | {system} | {fmt(row, 'hit@1')} | {fmt(row, 'set_compat')} | "
                             f"{fmt(row, 'fc@10')} |")
        lines += ["", f"Selected sets on {name}: skills loaded (mean), precision / recall / F1 / exact match in %; "
                  "`parts, cut alone` is the part-wise ranking with the cut's own selection (at most its cap of 3: "
                  "what was loaded before the parts' best skills were added), `parts` what the router loads now", "",
                  "| system | loaded | precision | recall | F1 | exact |", "|---|---|---|---|---|---|"]
        for system, row in res["selected"].items():
            lines.append(f"| {system} | {row['loaded']} | {row['precision']} | {row['recall']} | {row['f1']} | "
                         f"{row['exact']} |")
        lines.append("")
    short = {n: v for n, v in results.items() if not n.startswith("long") and "grid" not in n}
    lines += ["**Short dev sets** (a request of one part routes as the router does): Hit@1 / Set-Compat / FC@10 in %",
              "", "| set | requests of several parts | bm25 | router | parts |", "|---|---|---|---|---|"]
    for name, res in short.items():
        cell = lambda r: f"{r['hit@1']} / {r['set_compat']} / {r['fc@10']}"  # noqa: E731
        lines.append(f"| {name} (n={res['router']['n']}) | {res['several_parts']} | {cell(res['bm25'])} | "
                     f"{cell(res['router'])} | {cell(res['parts'])} |")
    if "grid" in results:
        names = [k for k in results["grid"][0] if isinstance(results["grid"][0][k], dict)]
        lines += ["", "**Grid** (`--choose`, dev): Hit@1 / Set-Compat / FC@10 in % per set", "",
                  "| candidates | setup parts | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
        for row in results["grid"]:
            lines.append(f"| {row['candidates']} | {'kept' if row['setup_parts'] else 'left out'} | " + " | ".join(
                f"{row[n]['hit@1']} / {row[n]['set_compat']} / {row[n]['fc@10']}" for n in names) + " |")
    if "selection grid" in results:
        names = [k for k in results["selection grid"][0] if isinstance(results["selection grid"][0][k], dict)]
        lines += ["", "**Selection grid** (`--choose`, dev): skills loaded (mean), precision / recall / F1 of the "
                  "selected set in % per set; a probability of 1 adds no part's best skill (the cut alone)", "",
                  "| most | part probability | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
        for row in results["selection grid"]:
            lines.append(f"| {row['most']} | {row['part_probability']} | " + " | ".join(
                f"{row[n]['loaded']}: {row[n]['precision']} / {row[n]['recall']} / {row[n]['f1']}" for n in names)
                + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(CORPUS), help="folder of SKILL.md files (default: the shared corpus)")
    ap.add_argument("--cache-dir", default=str(Path("~/.cache/skill-assets/bench-index").expanduser()))
    ap.add_argument("--choose", action="store_true", help="also score the grid the merge's settings were chosen on")
    ap.add_argument("--test", action="store_true", help="also score the long-task test split (once)")
    ap.add_argument("--no-doc", action="store_true", help="do not write docs/RESULTS.md")
    args = ap.parse_args()
    cache = Path(args.cache_dir)
    skills = load_pool(args.corpus).skills
    router = Router.from_store(db_path=cache / "no-store.duckdb", cache_dir=cache, log=stderr_log).engine
    router.index(skills)
    fuse_once(router)
    dev = long_split("dev")
    results = {"long dev": score_long(router, dev)}
    shorts = short_dev_sets()
    results.update({name: score_short(router, rs) for name, rs in shorts.items()})
    if args.choose:
        results["grid"] = choose(router, {"long dev": dev, **shorts})
        results["selection grid"] = choose_selection(router, {"long dev": dev, **shorts})
    if args.test:
        results["long test"] = score_long(router, long_split("test"))
    if not args.no_doc:
        flags = "".join(f" {f}" for f, on in (("--choose", args.choose), ("--test", args.test)) if on)
        write_section("long-tasks", f"`bench/long_tasks.py{flags}`; pool: {len(skills)} corpus skills; part-wise "
                      f"routing lifts among the whole's first {CANDIDATES} skills and, for a task of more need parts "
                      f"than the cut's cap, loads up to {PARTS_MOST}: each need part's best skill where the cut reads "
                      f"it as at least {PART_PROBABILITY} likely."
                      "\n\n" + tables(results))
    print(json.dumps(results, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
