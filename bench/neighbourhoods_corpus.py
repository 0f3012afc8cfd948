"""Neighbourhood figures on an embedded corpus: the K sweep, the chosen K and the super-domain keywords.

Reads ``skills`` and ``skill_embeddings`` from a DuckDB file (e.g. the one ``bench/embed_cache.py
--db`` leaves behind) and runs the same lib functions as ``cluster_sweep`` and ``skill_clusters``.
The last line is one JSON object.

    .venv/bin/python bench/neighbourhoods_corpus.py --db data/bench_corpus.duckdb
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from skill_assets.lib.common import store
from skill_assets.lib.neighbourhoods.clustering import (
    candidate_ks,
    class_keywords,
    fit_kmeans,
    merge_into_super_domains,
    score_sweep,
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--ks", type=int, nargs="+", default=[10, 20, 30, 40])
    ap.add_argument("--super-domains", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    df = store.query(args.db, "SELECT e.skill_id, e.embedding, s.name || ' ' || s.description AS t "
                              "FROM skill_embeddings e JOIN skills s USING (skill_id) ORDER BY e.skill_id")
    x = np.asarray(df["embedding"].to_list(), dtype=np.float32)
    start = time.perf_counter()
    points = [fit_kmeans(x, k, args.seed) for k in candidate_ks(args.ks, len(x))]
    rows = score_sweep(points)
    chosen = next(p for p, r in zip(points, rows) if r["selected"])
    super_of_sub = merge_into_super_domains(chosen.centroids, args.super_domains)
    supers = super_of_sub[chosen.labels]
    texts = df["t"].to_list()
    keywords = class_keywords({int(d): [t for t, s in zip(texts, supers) if s == d] for d in np.unique(supers)}, 5)
    sizes = {int(d): int((supers == d).sum()) for d in np.unique(supers)}
    print(f"{'k':>4} {'inertia':>10} {'intra_cos':>9} {'nbr_cos':>8} {'s_inert':>7} {'s_intra':>7} {'s_sep':>7} {'score':>6}")
    for r in rows:
        print(f"{r['k']:>4} {r['inertia']:>10.1f} {r['intra_cosine']:>9.4f} {r['neighbour_centroid_cosine']:>8.4f} "
              f"{r['inertia_score']:>7.3f} {r['intra_score']:>7.3f} {r['separation_score']:>7.3f} {r['score']:>6.3f}"
              f"{'  <- selected' if r['selected'] else ''}")
    for d, kw in sorted(keywords.items()):
        print(f"super-domain {d} ({sizes[d]} skills): {' / '.join(kw)}")
    print(json.dumps({"skills": len(x), "chosen_k": chosen.k, "seconds": round(time.perf_counter() - start, 1),
                      "sweep": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()} for r in rows],
                      "super_domains": {str(d): {"skills": sizes[d], "keywords": kw} for d, kw in keywords.items()}}))


if __name__ == "__main__":
    main()
