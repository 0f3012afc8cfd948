"""Can a cross-encoder trained here rerank the shipped router's head better than the fusion alone? Dev says.

    .venv/bin/python bench/reranker_trial.py [--max-length 192] [--epochs 1] [--lists 4] [--depth 20]
        [--train-requests N] [--evaluations 4]

The trial the adoption rule needs before a reranker ships (issue 32): the shipped router (fusion over BM25,
the fine-tuned MiniLM and USE) ranks the whole shared corpus; a cross-encoder initialised from the fine-tuned
MiniLM (a fresh one-logit head) is trained listwise (softmax cross-entropy) on the fused top ``--depth`` of
each train request of the meaning-only and curated sets, every ground-truth skill of the request in its list
(the train requests' bi-encoder scores come from the fold embedders that did not see them, as in the
fusion's fit: ``shipped_router.held_out_dense``). Every ``1/evaluations`` of the run it reranks the fused
top ``--depth`` of the dev requests (meaning-only, curated and styles dev) and scores NDCG@10; the best
step's paired difference against the fusion alone, with its 95 % bootstrap interval, is the verdict: a
reranker ships only where that interval lies above 0. No test request is read. Writes its section of
docs/RESULTS.md (the learning curve and the verdict) and ends with one JSON line.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from results_doc import write_section  # noqa: E402
from shared_corpus import CORPUS  # noqa: E402

from skill_assets.lib.common.significance import bootstrap_interval  # noqa: E402
from skill_assets.lib.retrieval.defaults import shipped_router, tuned_embedder  # noqa: E402
from skill_assets.lib.retrieval.engine import Engine  # noqa: E402
from skill_assets.lib.retrieval.fusion_training import ranked  # noqa: E402
from skill_assets.lib.retrieval.pools import load_pool  # noqa: E402
from skill_assets.lib.retrieval.ranking import rerank  # noqa: E402
from skill_assets.lib.retrieval.requests import group_metrics  # noqa: E402
from skill_assets.lib.retrieval.reranking import QUERY_CHARS  # noqa: E402
from skill_assets.lib.retrieval.signals import SIGNALS  # noqa: E402
from skill_assets.lib.training.reranker_training import build_list, build_loss, reranker_batch_loss  # noqa: E402
from skill_assets.lib.training.training_loop import OptimConfig, evaluation_interval, run_training  # noqa: E402
from skill_assets.router.routing import stderr_log  # noqa: E402
from skill_assets.router.shipped_router import fitting_requests, held_out_dense  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(CORPUS))
    ap.add_argument("--cache-dir", default=str(Path("~/.cache/skill-assets/bench-index").expanduser()))
    ap.add_argument("--depth", type=int, default=20, help="fused head the cross-encoder reranks")
    ap.add_argument("--max-length", type=int, default=192, help="tokens of query + skill text")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--lists", type=int, default=4, help="requests (lists) per step")
    ap.add_argument("--learning-rate", type=float, default=3e-5)
    ap.add_argument("--evaluations", type=int, default=4)
    ap.add_argument("--train-requests", type=int, help="a seeded sample of this many train requests (default: all)")
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args()
    from sentence_transformers import CrossEncoder

    started = time.perf_counter()
    fusion, cut = shipped_router()
    skills = load_pool(args.corpus).skills
    requests, _ = fitting_requests()
    train = [r for r in requests if r.split == "train"]
    dev = [r for r in requests if r.split == "dev"]
    held_out = held_out_dense(args.corpus, skills, train, args.cache_dir, stderr_log)
    if args.train_requests:
        train = random.Random(0).sample(train, min(args.train_requests, len(train)))
    engine = Engine(tuned_embedder(), cache_dir=args.cache_dir, fusion=fusion, selection=cut, signals=SIGNALS,
                    log=stderr_log)
    engine.index(skills)
    ids, texts = engine.ids, engine.reranker_texts

    def heads(reqs, swap: bool) -> list[list[tuple[str, float]]]:
        queries = [r.query for r in reqs]
        scores = engine.signal_scores(queries)
        if swap:
            for i, q in enumerate(queries):
                scores["dense"][i] = held_out[q]
        out_ids, out_scores = ranked(fusion, engine.candidates(queries, scores=scores), ids)
        return [list(zip(r[: args.depth], map(float, s[: args.depth]))) for r, s in zip(out_ids, out_scores)]

    train_heads, dev_heads = heads(train, True), heads(dev, False)
    # every skill of a ground-truth group is a positive (a copy in the head is no negative), the first of each
    # group always in the list
    lists = [build_list(r.query[:QUERY_CHARS], list(dict.fromkeys([g[0] for g in r.groups]
                                                                  + [sid for sid, _ in h if sid in r.relevant])),
                        [], [sid for sid, _ in h], args.depth) for r, h in zip(train, train_heads)]
    rng = random.Random(0)
    order = [i for _ in range(args.epochs) for i in rng.sample(range(len(lists)), len(lists))]
    batches = [[lists[i] for i in order[s: s + args.lists]] for s in range(0, len(order), args.lists)]
    model = CrossEncoder(tuned_embedder(), num_labels=1, max_length=args.max_length, device="cpu")
    loss = build_loss("listwise_ce")
    fused_ndcg = group_metrics([[sid for sid, _ in h] for h in dev_heads], dev)["ndcg@10"]
    per_step: dict[int, np.ndarray] = {}

    def evaluate() -> float:
        runs = rerank([r.query[:QUERY_CHARS] for r in dev], dev_heads, texts,
                      lambda pairs: model.predict(pairs, batch_size=64, show_progress_bar=False), args.depth)
        values = group_metrics([[sid for sid, _ in run] for run in runs], dev)["ndcg@10"]
        per_step[len(per_step)] = values
        return float(np.nanmean(values))

    with tempfile.TemporaryDirectory() as tmp:
        outcome = run_training(model, batches, lambda batch: reranker_batch_loss(model, loss, batch, texts),
                               OptimConfig(args.learning_rate, checkpoint_every=10 ** 9), Path(tmp) / "ckpt.pt",
                               "trial", stderr_log, evaluate, evaluation_interval(len(batches), args.evaluations))
    best = int(np.argmax([s for _, s in outcome.dev_scores]))
    delta = per_step[best] - fused_ndcg
    lo, hi = bootstrap_interval(delta)
    figures = {"train_lists": len(lists), "dev_requests": len(dev), "steps": outcome.steps,
               "depth": args.depth, "max_length": args.max_length, "learning_rate": args.learning_rate,
               "fused_dev_ndcg10": round(float(np.nanmean(fused_ndcg)), 4),
               "learning_curve": [[step, round(score, 4)] for step, score in outcome.dev_scores],
               "best_step": outcome.dev_scores[best][0],
               "dev_ndcg10_delta": [round(float(np.nanmean(delta)), 4), round(lo, 4), round(hi, 4)],
               "ships": bool(lo > 0), "minutes": round((time.perf_counter() - started) / 60, 1)}
    if not args.no_doc:
        curve = ", ".join(f"step {s}: {v:.3f}" for s, v in figures["learning_curve"])
        write_section("reranker-trial", f"`bench/reranker_trial.py --max-length {args.max_length} --epochs "
                      f"{args.epochs} --lists {args.lists} --depth {args.depth} --train-requests "
                      f"{args.train_requests or len(train)} --evaluations {args.evaluations}`: a cross-encoder from the fine-tuned "
                      f"MiniLM (fresh head), listwise on the shipped router's fused top {args.depth} of "
                      f"{len(lists)} train requests, {outcome.steps} steps, {figures['minutes']} min on 2 cores.\n\n"
                      f"- dev ({len(dev)} requests: meaning-only, curated, styles) NDCG@10 of the fusion alone: "
                      f"{figures['fused_dev_ndcg10']:.3f}\n- reranked, by step (step 0 = the fresh head): {curve}\n"
                      f"- best step {figures['best_step']} against the fusion alone: "
                      f"{figures['dev_ndcg10_delta'][0]:+.3f} [{lo:+.3f}, {hi:+.3f}] NDCG@10\n"
                      f"- verdict: {'ships' if figures['ships'] else 'not shipped: the interval does not lie above 0'}")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
