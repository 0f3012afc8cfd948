"""Trained models that earn their place: the router a fresh install gets, against the one shipped before it.

    .venv/bin/python bench/trained_router.py [--before-rev REV] [--test]

Pool: every SKILL.md of the shared GitHub corpus. Systems: BM25, USE multilingual (``multilingual:document``, each
skill's document alone, as ``router:before`` reads it; ``multilingual:shipped``, as the shipped router reads it: the
mean of the document and the description cosines), the bundled MiniLM
(``dense:base``) and the shipped fine-tuned one (``dense:tuned``) alone; ``router:before``, the shipped
router of ``--before-rev`` (its fusion and cut over BM25, the bundled MiniLM and USE);
``router:before+tuned``, the same fusion and cut with the tuned MiniLM as its dense signal;
``router:shipped``, what ``Router.from_store`` gives with no store. Sets: the meaning-only dev split, the curated dev split,
the styles dev set, and the demo benchmark (82 hand-written requests over the 57 demo skills, its own pool).
Every figure is a mean over requests with a 95 % bootstrap interval of the paired difference against
``router:before``; ``--test`` scores the meaning-only and curated test splits once, at the end of the
work. Writes its section of docs/RESULTS.md and ends with one JSON line.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from results_doc import write_section  # noqa: E402
from shared_corpus import CORPUS  # noqa: E402

from skill_assets.lib.retrieval.engine_config import FittedRouting
from skill_assets.defs.resources import DEMO_SKILLS  # noqa: E402
from skill_assets.lib.models.bundled_models import bundled_minilm  # noqa: E402
from skill_assets.lib.common.significance import bootstrap_interval  # noqa: E402
from skill_assets.lib.evaluation.curated_benchmark import load_requests  # noqa: E402
from skill_assets.lib.retrieval.defaults import shipped_embedder, tuned_embedder  # noqa: E402
from skill_assets.lib.retrieval.engine import Engine  # noqa: E402
from skill_assets.lib.retrieval.fusion_training import load_router_model  # noqa: E402
from skill_assets.lib.retrieval.pools import Skill, load_pool  # noqa: E402
from skill_assets.lib.core.metrics import per_query_metrics  # noqa: E402
from skill_assets.lib.core.runs import Ranking  # noqa: E402
from skill_assets.lib.retrieval.requests import Request, qrels, run_of  # noqa: E402
from skill_assets.lib.retrieval.signals import SIGNALS  # noqa: E402
from skill_assets.router.routing import Router, stderr_log  # noqa: E402
from skill_assets.router.shipped_embedder import CURATED_REQUESTS, MEANING_REQUESTS  # noqa: E402
from skill_assets.router.shipped_router import STYLES_REQUESTS  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
METRICS = ("hit@1", "ndcg@10", "set_compat")
DEMO_REQUESTS = DEMO_SKILLS.parent / "benchmark" / "requests.jsonl"
BEFORE_REV = "c5cab5b"
SHIPPED_PATH = "skill_assets/lib/retrieval/shipped"


def router_at(rev: str, into: Path) -> Path:
    """The shipped router folder as committed at ``rev`` (fusion, cut, lexical path), extracted under ``into``."""
    data = subprocess.run(["git", "archive", rev, SHIPPED_PATH], cwd=REPO, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into / SHIPPED_PATH


def split(path: Path, name: str) -> list[Request]:
    return [r for r in load_requests(path) if r.split == name]


def per_request(rankings: list[Ranking], requests: list[Request]) -> dict[str, np.ndarray]:
    out = per_query_metrics(run_of(requests, rankings), qrels(requests))
    return {m: out[m] for m in METRICS}


def summary(values: dict[str, np.ndarray], before: dict[str, np.ndarray] | None) -> dict:
    row = {}
    for m in METRICS:
        v = values[m]
        keep = ~np.isnan(v)
        row[m] = round(100 * float(v[keep].mean()), 1) if keep.any() else None
        if before is not None and keep.any():
            lo, hi = bootstrap_interval(v[keep] - before[m][keep])
            row[f"{m}_delta"] = [round(100 * float((v[keep] - before[m][keep]).mean()), 1),
                                 round(100 * lo, 1), round(100 * hi, 1)]
    return row


def routed(engine: Engine | Router, requests: list[Request]) -> list[Ranking]:
    return [r.pairs for r in engine.route([q.query for q in requests], top_k=10)]


def signal_rankings(engine: Engine, requests: list[Request], signal: str) -> list[Ranking]:
    scores = engine.signal_scores([r.query for r in requests])[signal]
    order = np.argsort(-scores, axis=1, kind="stable")[:, :10]
    return [[(engine.ids[j], float(row_scores[j])) for j in row] for row, row_scores in zip(order, scores)]


def score_set(name: str, requests: list[Request], engines: dict[str, Engine | Router], log) -> dict:
    """Every system on one request set: means, intervals against router:before, and by direction."""
    runs = {"bm25": signal_rankings(engines["before"], requests, "bm25"),
            "multilingual:document": signal_rankings(engines["before"], requests, "multilingual"),
            "multilingual:shipped": signal_rankings(engines["shipped"].engine, requests, "multilingual"),
            "dense:base": signal_rankings(engines["before"], requests, "dense"),
            "dense:tuned": signal_rankings(engines["tuned"], requests, "dense"),
            "router:before": routed(engines["before"], requests),
            "router:before+tuned": routed(engines["tuned"], requests),
            "router:shipped": routed(engines["shipped"], requests)}
    values = {k: per_request(v, requests) for k, v in runs.items()}
    before = values["router:before"]
    out = {"n": len(requests), "systems": {k: summary(v, None if k == "router:before" else before)
                                           for k, v in values.items()}}
    directions = sorted({r.direction for r in requests if r.direction})
    if len(directions) > 1:
        out["by_direction"] = {}
        for d in directions:
            idx = np.array([r.direction == d for r in requests])
            out["by_direction"][d] = {k: {"n": int(idx.sum()), **summary({m: v[m][idx] for m in METRICS},
                                                                           None if k == "router:before" else
                                                                           {m: before[m][idx] for m in METRICS})}
                                      for k, v in values.items() if k in ("bm25", "router:before", "router:shipped")}
    log(f"{name}: " + ", ".join(f"{k} {v['hit@1']}/{v['ndcg@10']}" for k, v in out["systems"].items()))
    return out


def engines_over(skills: list[Skill], before_dir: Path, cache: Path, log) -> dict[str, Engine | Router]:
    fusion, cut = load_router_model(before_dir)
    before = Engine(bundled_minilm(), cache_dir=cache, fitted=FittedRouting(fusion, cut), signals=SIGNALS, log=log)
    before.index(skills)
    tuned = Engine(tuned_embedder(), cache_dir=cache, fitted=FittedRouting(fusion, cut), signals=SIGNALS, log=log)
    tuned.index(skills)
    shipped = Router.from_store(db_path=cache / "no-store.duckdb", cache_dir=cache, log=log)
    shipped.index(skills)
    return {"before": before, "tuned": tuned, "shipped": shipped}


def demo_pool() -> list[Skill]:
    """The demo skills under the ids the demo benchmark uses (``demo/<folder>``)."""
    return [dataclasses.replace(s, id=f"demo/{s.id}") for s in load_pool(DEMO_SKILLS).skills]


def table(results: dict, against: str = "router:before") -> str:
    lines = []
    for name, res in results.items():
        lines += [f"**{name}** ({res['n']} requests): Hit@1 / NDCG@10 / Set-Compat in %, and the paired difference "
                  f"against {against} [95 % interval]", "",
                  "| system | Hit@1 | NDCG@10 | Set-Compat | Δ Hit@1 | Δ NDCG@10 |", "|---|---|---|---|---|---|"]
        for system, row in res["systems"].items():
            d1, d2 = row.get("hit@1_delta"), row.get("ndcg@10_delta")
            fmt = lambda d: f"{d[0]:+.1f} [{d[1]:+.1f}, {d[2]:+.1f}]" if d else "—"  # noqa: E731
            lines.append(f"| {system} | {row['hit@1']} | {row['ndcg@10']} | {row['set_compat']} | {fmt(d1)} | "
                         f"{fmt(d2)} |")
        for d, systems in res.get("by_direction", {}).items():
            lines.append(f"| {d} (n={systems['bm25']['n']}): bm25 / before / shipped Hit@1 | "
                         f"{systems['bm25']['hit@1']} / {systems['router:before']['hit@1']} / "
                         f"{systems['router:shipped']['hit@1']} | | | | |")
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(CORPUS))
    ap.add_argument("--before-rev", default=BEFORE_REV, help="commit whose shipped router is the baseline")
    ap.add_argument("--cache-dir", default=str(Path("~/.cache/skill-assets/bench-index").expanduser()))
    ap.add_argument("--test", action="store_true", help="also score the meaning-only and curated test splits (once)")
    ap.add_argument("--no-doc", action="store_true", help="do not write docs/RESULTS.md")
    args = ap.parse_args()
    cache = Path(args.cache_dir)
    with tempfile.TemporaryDirectory() as tmp:
        before_dir = router_at(args.before_rev, Path(tmp))
        skills = load_pool(args.corpus).skills
        engines = engines_over(skills, before_dir, cache, stderr_log)
        results = {"meaning dev": score_set("meaning dev", split(MEANING_REQUESTS, "dev"), engines, stderr_log),
                   "curated dev": score_set("curated dev", split(CURATED_REQUESTS, "dev"), engines, stderr_log),
                   "styles dev": score_set("styles dev", split(STYLES_REQUESTS, "dev"), engines, stderr_log)}
        if args.test:
            results["meaning test"] = score_set("meaning test", split(MEANING_REQUESTS, "test"), engines, stderr_log)
            results["curated test"] = score_set("curated test", split(CURATED_REQUESTS, "test"), engines, stderr_log)
        demo = engines_over(demo_pool(), before_dir, cache, stderr_log)
        results["demo benchmark"] = score_set("demo", load_requests(DEMO_REQUESTS), demo, stderr_log)
    figures = {"default_embedder_tuned": shipped_embedder() != bundled_minilm(), "before_rev": args.before_rev,
               **{name: {k: v["systems"][k] for k in ("bm25", "dense:base", "dense:tuned", "router:before",
                                                        "router:before+tuned", "router:shipped")}
                  for name, v in results.items()}}
    if not args.no_doc:
        write_section("trained-router", f"`bench/trained_router.py{' --test' if args.test else ''}`; pool: "
                      f"{len(skills)} corpus skills (demo: its own 57).\n\n" + table(results))
    print(json.dumps(figures, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
