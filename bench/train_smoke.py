"""CPU smoke run of every training variant on the demo pipeline's own data.

Reads the train/test splits from a materialized store (run `make demo` first, or pass --db),
trains each embedder and reranker variant with small settings, and scores the base and the `r3`
embedders on the test split over the whole skill library (on the train split, flagged as such
in `eval_split`, when the generator left the test split empty).

    .venv/bin/python bench/train_smoke.py [--db data/skill_assets.duckdb] [--epochs 1]

The last line printed is one JSON object: `variants` (name → ok, wall_s, peak_rss_mb),
`base_ndcg10`, `r3_ndcg10`.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
import traceback
from pathlib import Path

from skill_assets.defs.resources import bundled_minilm
from skill_assets.lib.metrics import mean_metrics, per_query_metrics
from skill_assets.lib.model_training import TrainingSettings, load_bi_encoder, train_embedder, train_reranker
from skill_assets.lib.retrieval import dense_rank
from skill_assets.lib.skill_text import ENCODER_CAPS, skill_document
from skill_assets.lib.store import query
from skill_assets.lib.variants import EMBEDDER_VARIANTS, RERANKER_VARIANTS


def ndcg10(model_path: str, skills: list[dict], tests: list[dict]) -> float:
    model = load_bi_encoder(model_path)
    docs = [skill_document(s["name"], s["description"], s["body"], ENCODER_CAPS) for s in skills]
    runs = dense_rank([s["skill_id"] for s in skills], model.encode(docs, normalize_embeddings=True),
                      model.encode([t["query"] for t in tests], normalize_embeddings=True), 10)
    per_query = per_query_metrics([[sid for sid, _ in r] for r in runs], [set(t["skill_ids"]) for t in tests], (10,))
    return mean_metrics(per_query)["ndcg@10"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", default="data/skill_assets.duckdb")
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()
    if not Path(args.db).exists():
        sys.exit(f"{args.db} not found: run `make demo` first or pass --db")
    train = query(args.db, "SELECT * FROM benchmark_queries WHERE split = 'train'").to_dicts()
    tests = query(args.db, "SELECT * FROM benchmark_queries WHERE split = 'test'").to_dicts()
    eval_split = "test"
    if not tests:  # the tiny demo generator can leave the test split empty: say so, score on train
        tests, eval_split = train, "train"
    pool = query(args.db, """SELECT s.skill_id, s.name, s.description, s.body, p.super_domain FROM skills s
                             JOIN skill_pools p USING (skill_id) WHERE p.pool = 'train'""").to_dicts()
    library = query(args.db, "SELECT skill_id, name, description, body FROM skills").to_dicts()
    base = bundled_minilm()
    settings = TrainingSettings(epochs=args.epochs, batch_size=8, max_seq_length=128)
    results: dict[str, dict] = {}
    r3_path = None
    with tempfile.TemporaryDirectory() as out:
        jobs = [(f"embedder:{n}", lambda v=v: train_embedder(v, train, pool, base, base, Path(out) / f"e-{v.name}", settings))
                for n, v in EMBEDDER_VARIANTS.items()]
        jobs += [(f"reranker:{n}", lambda v=v: train_reranker(v, train, pool, base, base, Path(out) / f"r-{v.name}", settings))
                 for n, v in RERANKER_VARIANTS.items()]
        for name, job in jobs:
            started = time.perf_counter()
            try:
                trained = job()
                ok = True
                if name == "embedder:r3":
                    r3_path = str(trained.path)
            except Exception:  # a failed variant is a result to report, not a crash
                traceback.print_exc()
                ok = False
            results[name] = {"ok": ok, "wall_s": round(time.perf_counter() - started, 1),
                             "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
            print(name, results[name], file=sys.stderr, flush=True)
        base_score = ndcg10(base, library, tests) if tests else float("nan")
        r3_score = ndcg10(r3_path, library, tests) if tests and r3_path else float("nan")
    print(json.dumps({"train_queries": len(train), "eval_split": eval_split, "eval_queries": len(tests),
                      "variants": results,
                      "base_ndcg10": round(base_score, 4), "r3_ndcg10": round(r3_score, 4)}))


if __name__ == "__main__":
    main()
