"""CPU smoke run of every training variant on the demo pipeline's own data.

Reads the train/dev/test splits from a materialized store (run `make demo` first, or pass --db),
trains each embedder and reranker variant with small settings through the assets' code path
(held-out checkpoint selection on the dev split, or on a slice of train when there is none), and
scores the base and the `r3` embedders on the test split over the whole skill library, as the
evaluation stage does. Test queries are only ever scored; with none, both figures are null.

    .venv/bin/python bench/train_smoke.py [--db data/skill_assets.duckdb] [--epochs 1]

The last line printed is one JSON object: `variants` (name → ok, wall_s, peak_rss_mb),
`base_ndcg10`, `r3_ndcg10`, `test_queries`, and how the `r3` weights were selected.
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

from skill_assets.lib.models.bundled_models import bundled_minilm
from skill_assets.lib.common.store import query
from skill_assets.lib.retrieval.store_skills import skills_from_rows, store_skills
from skill_assets.lib.training.model_training import (
    TrainingSettings,
    embedder_ndcg10,
    load_bi_encoder,
    train_embedder,
    train_reranker,
)
from skill_assets.lib.training.training_queries import training_queries
from skill_assets.lib.training.variants import EMBEDDER_VARIANTS, RERANKER_VARIANTS


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", default="data/skill_assets.duckdb")
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()
    if not Path(args.db).exists():
        sys.exit(f"{args.db} not found: run `make demo` first or pass --db")
    split = "SELECT * FROM benchmark_queries WHERE split = ? ORDER BY query_id"
    train, dev, tests = (training_queries(query(args.db, split, [name]).iter_rows(named=True))
                         for name in ("train", "dev", "test"))
    if not tests:
        print("the test split is empty: nothing to score on", file=sys.stderr)
    rows = query(args.db, """SELECT s.skill_id, s.name, s.description, s.body, p.super_domain FROM skills s
                             JOIN skill_pools p USING (skill_id) WHERE p.pool = 'train' ORDER BY skill_id""")
    pool, super_domain = skills_from_rows(rows.iter_rows(named=True)), dict(zip(rows["skill_id"], rows["super_domain"]))
    library = store_skills(args.db)
    base = bundled_minilm()
    settings = TrainingSettings(epochs=args.epochs, batch_size=8, max_seq_length=128)
    results: dict[str, dict] = {}
    r3 = None
    with tempfile.TemporaryDirectory() as out:
        jobs = [(f"embedder:{n}", lambda v=v: train_embedder(v, train, pool, base, base, Path(out) / f"e-{v.name}",
                                                             settings, dev_queries=dev, super_domain=super_domain))
                for n, v in EMBEDDER_VARIANTS.items()]
        jobs += [(f"reranker:{n}", lambda v=v: train_reranker(v, train, pool, base, base, Path(out) / f"r-{v.name}",
                                                              settings, dev_queries=dev))
                 for n, v in RERANKER_VARIANTS.items()]
        for name, job in jobs:
            started = time.perf_counter()
            try:
                trained = job()
                ok = True
                if name == "embedder:r3":
                    r3 = trained
            except Exception:  # noqa: BLE001 - a failed variant is a result to report, not a crash
                traceback.print_exc()
                ok = False
            results[name] = {"ok": ok, "wall_s": round(time.perf_counter() - started, 1),
                             "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
            print(name, results[name], file=sys.stderr, flush=True)
        base_score = embedder_ndcg10(load_bi_encoder(base), library, tests) if tests else None
        r3_score = embedder_ndcg10(load_bi_encoder(str(r3.path)), library, tests) if tests and r3 else None
    card = r3.card if r3 else {}
    print(json.dumps({"train_queries": card.get("train_queries"), "dev_queries": card.get("dev_queries"),
                      "test_queries": len(tests), "library_skills": len(library), "variants": results,
                      "base_ndcg10": None if base_score is None else round(base_score, 4),
                      "r3_ndcg10": None if r3_score is None else round(r3_score, 4),
                      "r3_selected_step": card.get("selected_step"), "r3_steps": r3.steps if r3 else None,
                      "r3_dev_ndcg10_by_step": card.get("dev_ndcg10_by_step")}))


if __name__ == "__main__":
    main()
