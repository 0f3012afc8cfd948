"""Can a cross-encoder trained here rerank the shipped router's head better than the fusion alone? Dev says.

    .venv/bin/python bench/reranker_trial.py [--max-length 192] [--epochs 1] [--lists 4] [--depth 20]
        [--train-requests N] [--evaluations 4] [--residual --train-layers 2 --head-learning-rate 1e-3]

The trial the adoption rule needs before a reranker ships (issue 32): the shipped router (fusion over BM25,
the fine-tuned MiniLM and USE) ranks the whole shared corpus; a cross-encoder initialised from the fine-tuned
MiniLM (a fresh one-logit head) is trained listwise (softmax cross-entropy) on the fused top ``--depth`` of
each train request of the meaning-only and curated sets, every ground-truth skill of the request in its list
(the train requests' bi-encoder scores come from the fold embedders that did not see them, as in the
fusion's fit: ``shipped_router.held_out_dense``). Every ``1/evaluations`` of the run it reranks the fused
top ``--depth`` of the dev requests (meaning-only, curated and styles dev) and scores NDCG@10; the best
step's paired difference against the fusion alone, with its 95 % bootstrap interval, is the verdict: a
reranker ships only where that interval lies above 0. No test request is read.

``--residual`` trains the cross-encoder as a correction of the fusion: its score is added to the fused score
(the list's prior), its head starts at zero (step 0 is the fusion exactly), the lists are the fused heads that
hold a ground-truth skill (a head without one cannot be fixed by reordering), and the head learns at a rate of
its own; ``--train-layers K`` trains only the top K encoder layers (a cheaper backward pass, and an artifact of
those layers alone). Writes its section of
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
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from results_doc import write_section  # noqa: E402
from shared_corpus import CORPUS  # noqa: E402

from skill_assets.lib.retrieval.engine_config import FittedRouting
from skill_assets.lib.common.significance import bootstrap_interval  # noqa: E402
from skill_assets.lib.retrieval.defaults import shipped_router, tuned_embedder  # noqa: E402
from skill_assets.lib.retrieval.engine import Engine  # noqa: E402
from skill_assets.lib.retrieval.fusion_training import ranked  # noqa: E402
from skill_assets.lib.retrieval.pools import load_pool  # noqa: E402
from skill_assets.lib.models.tuned_layers import freeze_below  # noqa: E402
from skill_assets.lib.retrieval.ranking import rerank  # noqa: E402
from skill_assets.lib.core.metrics import per_query_metrics  # noqa: E402
from skill_assets.lib.retrieval.requests import qrels, run_of  # noqa: E402
from skill_assets.lib.retrieval.reranking import QUERY_CHARS  # noqa: E402
from skill_assets.lib.retrieval.signals import SIGNALS  # noqa: E402
from skill_assets.lib.training.reranker_training import (  # noqa: E402
    LABEL_GROUND_TRUTH,
    LABEL_OTHER,
    RerankList,
    build_list,
    build_loss,
    reranker_batch_loss,
)
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
    ap.add_argument("--residual", action="store_true", help="learn a correction added to the fused score")
    ap.add_argument("--train-layers", type=int, help="train only the top K encoder layers (default: all)")
    ap.add_argument("--head-learning-rate", type=float, help="the scoring head's own learning rate")
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
    engine = Engine(tuned_embedder(), cache_dir=args.cache_dir, fitted=FittedRouting(fusion, cut), signals=SIGNALS,
                    log=stderr_log)
    engine.index(skills)
    ids, texts = engine.ids, engine.reranker_texts

    def heads(reqs, swap: bool) -> list[list[tuple[str, float]]]:
        queries = [r.query for r in reqs]
        scores = engine.signal_scores(queries)
        if swap:
            for i, q in enumerate(queries):
                scores["dense"][i] = held_out[q]
        return [r[: args.depth] for r in ranked(fusion, engine.candidates(queries, scores=scores), ids)]

    train_heads, dev_heads = heads(train, True), heads(dev, False)
    if args.residual:
        lists = [RerankList(r.query[:QUERY_CHARS], tuple(sid for sid, _ in h),
                            tuple(LABEL_GROUND_TRUTH if sid in r.relevant else LABEL_OTHER for sid, _ in h),
                            tuple(score for _, score in h))
                 for r, h in zip(train, train_heads) if any(sid in r.relevant for sid, _ in h)]
    else:  # every skill of a ground-truth group is a positive (a copy in the head is no negative), the first
        # of each group always in the list
        lists = [build_list(r.query[:QUERY_CHARS], list(dict.fromkeys([g[0] for g in r.groups]
                                                                      + [sid for sid, _ in h if sid in r.relevant])),
                            [], [sid for sid, _ in h], args.depth) for r, h in zip(train, train_heads)]
    rng = random.Random(0)
    order = [i for _ in range(args.epochs) for i in rng.sample(range(len(lists)), len(lists))]
    batches = [[lists[i] for i in order[s: s + args.lists]] for s in range(0, len(order), args.lists)]
    model = CrossEncoder(str(tuned_embedder()), num_labels=1, max_length=args.max_length, device="cpu",
                         activation_fn=torch.nn.Identity() if args.residual else None)
    if args.residual:
        head = model[0].model.classifier
        torch.nn.init.zeros_(head.weight)
        torch.nn.init.zeros_(head.bias)
    if args.train_layers is not None:
        freeze_below(model, args.train_layers, ("pooler", "classifier"))
    loss = build_loss("listwise_ce")
    fused_ndcg = per_query_metrics(run_of(dev, dev_heads), qrels(dev))["ndcg@10"]
    per_step: dict[int, np.ndarray] = {}

    def evaluate() -> float:
        runs = rerank([r.query[:QUERY_CHARS] for r in dev], dev_heads, texts,
                      lambda pairs: model.predict(pairs, batch_size=64, show_progress_bar=False), args.depth,
                      residual=args.residual)
        values = per_query_metrics(run_of(dev, runs), qrels(dev))["ndcg@10"]
        per_step[len(per_step)] = values
        return float(np.nanmean(values))

    with tempfile.TemporaryDirectory() as tmp:
        outcome = run_training(model, batches, lambda batch: reranker_batch_loss(model, loss, batch, texts),
                               OptimConfig(args.learning_rate, checkpoint_every=10 ** 9,
                                           head_learning_rate=args.head_learning_rate), Path(tmp) / "ckpt.pt",
                               "trial", stderr_log, evaluate, evaluation_interval(len(batches), args.evaluations))
    best = int(np.argmax([s for _, s in outcome.dev_scores]))
    delta = per_step[best] - fused_ndcg
    lo, hi = bootstrap_interval(delta)
    figures = {"residual": args.residual, "train_layers": args.train_layers,
               "head_learning_rate": args.head_learning_rate, "train_lists": len(lists), "dev_requests": len(dev),
               "steps": outcome.steps,
               "depth": args.depth, "max_length": args.max_length, "learning_rate": args.learning_rate,
               "fused_dev_ndcg10": round(float(np.nanmean(fused_ndcg)), 4),
               "learning_curve": [[step, round(score, 4)] for step, score in outcome.dev_scores],
               "best_step": outcome.dev_scores[best][0],
               "dev_ndcg10_delta": [round(float(np.nanmean(delta)), 4), round(lo, 4), round(hi, 4)],
               "ships": bool(lo > 0), "minutes": round((time.perf_counter() - started) / 60, 1)}
    if not args.no_doc:
        curve = ", ".join(f"step {s}: {v:.3f}" for s, v in figures["learning_curve"])
        flags = "".join(f" --{flag} {value}" for flag, value in (("train-layers", args.train_layers),
                                                                 ("head-learning-rate", args.head_learning_rate))
                        if value is not None)
        flags = (" --residual" if args.residual else "") + flags
        trained = f"top {args.train_layers} layers trained" if args.train_layers is not None else "all layers trained"
        design = (f"a correction added to the fused score (head at zero, {trained}), on the {len(lists)} fused "
                  f"heads that hold a ground-truth skill" if args.residual else
                  f"a fresh head ({trained}), on {len(lists)} train requests")
        write_section("reranker-trial-residual" if args.residual else "reranker-trial",
                      f"`bench/reranker_trial.py --max-length {args.max_length} --epochs {args.epochs} --lists "
                      f"{args.lists} --depth {args.depth} --train-requests {args.train_requests or len(train)} "
                      f"--evaluations {args.evaluations}{flags}`: a cross-encoder from the fine-tuned MiniLM "
                      f"reranking the shipped router's fused top {args.depth}, listwise, {design}; "
                      f"{outcome.steps} steps, {figures['minutes']} min on 2 cores.\n\n"
                      f"- dev ({len(dev)} requests: meaning-only, curated, styles) NDCG@10 of the fusion alone: "
                      f"{figures['fused_dev_ndcg10']:.3f}\n- reranked, by step (step 0 = the untrained head): {curve}\n"
                      f"- best step {figures['best_step']} against the fusion alone: "
                      f"{figures['dev_ndcg10_delta'][0]:+.3f} [{lo:+.3f}, {hi:+.3f}] NDCG@10 (the step is chosen on "
                      f"the same dev requests, so the interval flatters it)\n"
                      f"- verdict: {'ships' if figures['ships'] else 'not shipped: the interval does not lie above 0'}")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
