"""Abstention: how many should-not-trigger requests the shipped router answers with no skill, and what it costs.

    .venv/bin/python bench/abstention.py [--test] [--no-doc]

Pool: every SKILL.md of the shared GitHub corpus. Router: ``Router.from_store`` with no store (the shipped fusion,
cut and abstention, as a fresh install routes; the abstention loaded through the same checks). Sets: the
should-not-trigger dev split (``benchmarks/no_fit``), by kind and language; the answerable dev splits (meaning-only,
curated, styles), each routed with and without the abstention: the selected-set F1 of both, the share of requests
that abstained, and Hit@1 of both rankings (the abstention leaves the ranking as it is, so they must be equal).
``--test`` scores the no-fit, meaning-only and curated test splits once, at the end of the work (the issue's
target: ≥ 0.80 of no-fit test requests abstain, curated test set F1 drops by ≤ 0.02, Hit@1 unchanged). Writes its
section of docs/RESULTS.md and ends with one JSON line.
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

from skill_assets.lib.evaluation.curated_benchmark import load_requests  # noqa: E402
from skill_assets.lib.retrieval.pools import load_pool  # noqa: E402
from skill_assets.lib.core.metrics import run_means  # noqa: E402
from skill_assets.lib.retrieval.requests import Request, qrels, run_of  # noqa: E402
from skill_assets.lib.retrieval.selection import set_scores  # noqa: E402
from skill_assets.router.routing import Router, stderr_log  # noqa: E402
from skill_assets.router.shipped_abstention import NO_FIT_KINDS, NoFitRequest, load_no_fit  # noqa: E402
from skill_assets.router.shipped_embedder import CURATED_REQUESTS, MEANING_REQUESTS  # noqa: E402
from skill_assets.router.shipped_router import STYLES_REQUESTS  # noqa: E402

TOP_K = 10


def no_fit_figures(router: Router, requests: list[NoFitRequest]) -> dict:
    """Share of should-not-trigger requests answered with no skill, overall, by kind, by language and by writer (a
    writer whose requests abstain far less often than the others' shows how the decision carries to a new way of
    writing)."""
    abstained = np.array([not r.selected for r in router.route([q.query for q in requests], top_k=TOP_K)])

    def share(mask: np.ndarray) -> dict:
        return {"n": int(mask.sum()), "abstained": round(float(abstained[mask].mean()), 3)}

    return {**share(np.ones(len(requests), dtype=bool)),
            "by_kind": {k: share(np.array([q.kind == k for q in requests])) for k in NO_FIT_KINDS},
            "by_language": {lang: share(np.array([q.lang == lang for q in requests])) for lang in ("en", "zh")},
            "by_writer": {w: share(np.array([q.writer == w for q in requests]))
                          for w in sorted({q.writer for q in requests})}}


def answerable_figures(router: Router, requests: list[Request]) -> dict:
    """Selected-set F1 and Hit@1 with the abstention and without it (the same router, its abstention removed)."""
    queries = [q.query for q in requests]
    with_abstention = router.route(queries, top_k=TOP_K)
    model, router.engine.abstention = router.engine.abstention, None
    try:
        without = router.route(queries, top_k=TOP_K)
    finally:
        router.engine.abstention = model

    def figures(routed) -> dict:
        f1 = [set_scores(r.selected, q.groups)[1] for r, q in zip(routed, requests)]
        return {"selected_set_f1": round(float(np.mean(f1)), 4),
                "hit@1": round(run_means(run_of(requests, [r.pairs for r in routed]), qrels(requests))["hit@1"], 4)}

    on, off = figures(with_abstention), figures(without)
    return {"n": len(requests), "abstained": round(float(np.mean([not r.selected for r in with_abstention])), 3),
            "with": on, "without": off, "f1_drop": round(off["selected_set_f1"] - on["selected_set_f1"], 4),
            "rankings_unchanged": [r.ranking for r in with_abstention] == [r.ranking for r in without]}


def split(path: Path, name: str) -> list[Request]:
    return [r for r in load_requests(path) if r.split == name]


def table(no_fit: dict[str, dict], answerable: dict[str, dict]) -> str:
    writers = sorted({w for f in no_fit.values() for w in f["by_writer"]})
    lines = ["**Should-not-trigger requests answered with no skill** (share abstained)", "",
             "| split | n | all | " + " | ".join([*NO_FIT_KINDS, "en", "zh", *writers]) + " |",
             "|---" * (5 + len(NO_FIT_KINDS) + len(writers)) + "|"]
    for name, f in no_fit.items():
        cells = [f"{f['by_kind'][k]['abstained']:.2f} ({f['by_kind'][k]['n']})" for k in NO_FIT_KINDS]
        cells += [f"{f['by_language'][lang]['abstained']:.2f} ({f['by_language'][lang]['n']})" for lang in ("en", "zh")]
        cells += [f"{f['by_writer'][w]['abstained']:.2f} ({f['by_writer'][w]['n']})" if w in f["by_writer"] else "–"
                  for w in writers]
        lines.append(f"| {name} | {f['n']} | {f['abstained']:.3f} | " + " | ".join(cells) + " |")
    lines += ["", "**Answerable requests**: selected-set F1 and Hit@1 without → with the abstention", "",
              "| set | n | abstained | set F1 without | set F1 with | F1 drop | Hit@1 without | Hit@1 with | "
              "rankings unchanged |", "|---|---|---|---|---|---|---|---|---|"]
    for name, f in answerable.items():
        lines.append(f"| {name} | {f['n']} | {f['abstained']:.3f} | {f['without']['selected_set_f1']:.4f} | "
                     f"{f['with']['selected_set_f1']:.4f} | {f['f1_drop']:.4f} | {f['without']['hit@1']:.4f} | "
                     f"{f['with']['hit@1']:.4f} | {f['rankings_unchanged']} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(CORPUS))
    ap.add_argument("--cache-dir", default=str(Path("~/.cache/skill-assets/bench-index").expanduser()))
    ap.add_argument("--test", action="store_true", help="also score the test splits (once, at the end of the work)")
    ap.add_argument("--no-doc", action="store_true", help="do not write docs/RESULTS.md")
    args = ap.parse_args()
    cache = Path(args.cache_dir)
    router = Router.from_store(db_path=cache / "no-store.duckdb", cache_dir=cache, log=stderr_log)
    if router.engine.abstention is None:
        raise SystemExit("the shipped router has no abstention it can use (see the log line above): refit it with "
                         "skill-assets build-default-router --pool DIR --abstention-only")
    skills = load_pool(args.corpus).skills
    router.index(skills)
    splits = ("dev", "test") if args.test else ("dev",)
    no_fit = {f"no-fit {s}": no_fit_figures(router, [r for r in load_no_fit() if r.split == s]) for s in splits}
    dev = {"meaning dev": split(MEANING_REQUESTS, "dev"), "curated dev": split(CURATED_REQUESTS, "dev"),
           "styles dev": split(STYLES_REQUESTS, "dev")}
    dev["all answerable dev (the threshold's rule)"] = [r for requests in dev.values() for r in requests]
    answerable = {name: answerable_figures(router, requests) for name, requests in dev.items()}
    if args.test:
        answerable["meaning test"] = answerable_figures(router, split(MEANING_REQUESTS, "test"))
        answerable["curated test"] = answerable_figures(router, split(CURATED_REQUESTS, "test"))
    for name, f in {**no_fit, **answerable}.items():
        stderr_log(f"{name}: abstained {f['abstained']}" + (f", set F1 drop {f['f1_drop']}" if "f1_drop" in f else ""))
    if not args.no_doc:
        write_section("abstention", f"`bench/abstention.py{' --test' if args.test else ''}`; pool: {len(skills)} "
                      f"corpus skills; threshold {router.engine.abstention.threshold:.3f} (`shipped/abstention.json`: "
                      f"{router.engine.abstention.card.get('rule', '')}).\n\n" + table(no_fit, answerable))
    print(json.dumps({"threshold": round(router.engine.abstention.threshold, 4), **no_fit, **answerable},
                     ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
