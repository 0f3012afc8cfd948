"""Which part of the shipped router helps: the fusion refitted without each part, on the dev splits.

    .venv/bin/python bench/router_ablations.py

Pool: every SKILL.md of the shared GitHub corpus, read as the shipped router reads it. Each variant refits the
fusion and its cut by the shipped recipe (``shipped_router.fit_over``: meaning-only + curated train, chosen
on meaning-only + curated + styles dev) with one part changed, and is scored on the meaning-only, curated and
styles dev splits (Hit@1 / NDCG@10 / Set-Compat, and the paired difference against the shipped recipe with a
95 % bootstrap interval):

- the bi-encoder: the bundled MiniLM instead of the fine-tuned one;
- the train requests' bi-encoder scores taken from the shipped embedder itself, which saw them, instead of the
  fold embedders that did not (``shipped_router.held_out_dense``);
- each signal left out.

The embedder recipe's own parts (the sibling term, the false-negative filter) are measured by its card's
learning curve (``shipped/embedder``); no test split is read here. Writes its section of docs/RESULTS.md
and ends with one JSON line.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from results_doc import write_section  # noqa: E402
from shared_corpus import CORPUS  # noqa: E402
from trained_router import per_request, split, summary, table  # noqa: E402

from skill_assets.lib.models.bundled_models import bundled_minilm  # noqa: E402
from skill_assets.lib.retrieval.defaults import tuned_embedder  # noqa: E402
from skill_assets.lib.retrieval.engine import Engine  # noqa: E402
from skill_assets.lib.retrieval.pools import load_pool  # noqa: E402
from skill_assets.lib.retrieval.signals import SIGNALS  # noqa: E402
from skill_assets.router.routing import stderr_log  # noqa: E402
from skill_assets.router.shipped_embedder import CURATED_REQUESTS, MEANING_REQUESTS  # noqa: E402
from skill_assets.router.shipped_router import (  # noqa: E402
    DOCUMENT_TOKENS,
    MULTILINGUAL_BODY_CHARS,
    STYLES_REQUESTS,
    fit_over,
    fitting_requests,
    held_out_dense,
)

SHIPPED = "shipped recipe"


def indexed(embedder: str, skills, cache: Path, log) -> Engine:
    engine = Engine(embedder, cache_dir=cache, signals=SIGNALS, log=log)
    engine.read_documents(DOCUMENT_TOKENS, MULTILINGUAL_BODY_CHARS)
    engine.index(skills)
    return engine


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(CORPUS))
    ap.add_argument("--cache-dir", default=str(Path("~/.cache/skill-assets/bench-index").expanduser()))
    ap.add_argument("--no-doc", action="store_true", help="do not write docs/RESULTS.md")
    args = ap.parse_args()
    cache = Path(args.cache_dir)
    skills = load_pool(args.corpus).skills
    requests, dev_by_source = fitting_requests()
    held_out = held_out_dense(args.corpus, skills, [r for r in requests if r.split == "train"], cache, stderr_log)
    tuned, base = indexed(tuned_embedder(), skills, cache, stderr_log), indexed(bundled_minilm(), skills, cache,
                                                                                   stderr_log)
    variants = {SHIPPED: (tuned, SIGNALS, held_out),
                "bi-encoder: bundled MiniLM": (base, SIGNALS, None),
                "train scores from the shipped embedder (no cross-fitting)": (tuned, SIGNALS, None),
                **{f"without {s}": (tuned, tuple(x for x in SIGNALS if x != s), held_out if s != "dense" else None)
                   for s in SIGNALS}}
    sets = {"meaning dev": split(MEANING_REQUESTS, "dev"), "curated dev": split(CURATED_REQUESTS, "dev"),
            "styles dev": split(STYLES_REQUESTS, "dev")}
    values: dict[str, dict[str, dict]] = {name: {} for name in sets}
    kinds = {}
    for variant, (engine, signals, held) in variants.items():
        fitted = fit_over(engine, requests, signals, engine.similarity, stderr_log, {}, "", dev_by_source, held)
        kinds[variant] = {"kind": fitted.card["kind"], "params": fitted.card["params"]}
        engine.fusion, engine.selection = fitted.model, fitted.cut
        for name, reqs in sets.items():
            ranked = [r.pairs for r in engine.route([q.query for q in reqs], top_k=10)]
            values[name][variant] = per_request(ranked, reqs)
        stderr_log(f"{variant}: " + ", ".join(f"{n} {summary(values[n][variant], None)['hit@1']}" for n in sets))
    results = {name: {"n": len(sets[name]), "systems": {
        v: summary(per, None if v == SHIPPED else values[name][SHIPPED]) for v, per in by_variant.items()}}
        for name, by_variant in values.items()}
    if not args.no_doc:
        write_section("router-ablations", f"`bench/router_ablations.py`; pool: {len(skills)} corpus skills; each "
                      "variant refits the fusion and its cut by the shipped recipe with one part changed. Chosen "
                      "fusions: " + "; ".join(f"{v}: {k['kind']} {k['params']}" for v, k in kinds.items())
                      + "\n\n" + table(results, against=SHIPPED))
    print(json.dumps({name: {v: res["systems"][v] for v in variants} for name, res in results.items()},
                     ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
