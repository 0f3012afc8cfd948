"""Time the export of a 50K-query benchmark release (Parquet, qrels, R3 JSONL, dataset card).

Synthetic records of realistic length: 10,246 skills with ~6 KB bodies (the R3-Skill corpus
size), 50,000 queries of 50–300 words over 1–3 skills, 32,828 SKIP records.

    .venv/bin/python bench/release_export.py [--queries 50000]

The last line printed is one JSON object with `queries`, `export_s` and the release size.
"""
from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import polars as pl

from skill_assets.lib.common.tables import frame
from skill_assets.lib.splits.release import export_release

WORDS = ("deploy service cluster pipeline query table model train metric report user request skill docker "
         "helm schema cache latency index vector review draft release budget customer ticket").split()
DIRECTIONS = ("en2en", "en2zh", "zh2en", "zh2zh")


def text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def synthetic(n_queries: int, n_skills: int = 10_246, n_skips: int = 32_828, seed: int = 0):
    rng = random.Random(seed)
    ids = [f"src/skill-{i:05d}" for i in range(n_skills)]
    skills = pl.DataFrame({
        "skill_id": ids, "name": [f"skill-{i}" for i in range(n_skills)],
        "description": [text(rng, 25) for _ in ids], "body": [text(rng, 900) for _ in ids],
        "language": ["en"] * n_skills, "source": ["src"] * n_skills, "repo": ["https://example.org/r"] * n_skills,
        "commit": ["0" * 40] * n_skills, "license": ["MIT"] * n_skills,
        "pool": ["test" if i % 5 == 0 else "train" for i in range(n_skills)],
        "sub_cluster": [i % 40 for i in range(n_skills)], "super_domain": [i % 8 for i in range(n_skills)]})
    queries = frame("benchmark_queries", [{
        "query_id": f"q{i:06d}", "split": "test" if i % 6 == 0 else "train", "query": text(rng, rng.randint(50, 300)),
        "skill_ids": rng.sample(ids, rng.choice((1, 1, 2, 3))), "direction": DIRECTIONS[i % 4], "k": 1 + i % 3,
        "style": "task_direct", "generator_model": "gen-a" if i % 6 else "gen-b",
        "skip_partners": rng.sample(ids, 2), "exclusion_reason": ""} for i in range(n_queries)])
    skips = pl.DataFrame({
        "record_id": [f"s{i:06d}" for i in range(n_skips)], "pool": ["train"] * n_skips,
        "direction": [DIRECTIONS[i % 4] for i in range(n_skips)], "k": [2 + i % 2 for i in range(n_skips)],
        "skill_ids": [rng.sample(ids, 2) for _ in range(n_skips)],
        "rationale": [text(rng, 40) for _ in range(n_skips)], "model": ["gen-a"] * n_skips,
        "label": [("domain_mismatch", "forced_chaining", "unknown")[i % 3] for i in range(n_skips)],
        "rule_id": ["domain.en"] * n_skips, "matched_span": ["domains"] * n_skips, "ruleset_version": ["v"] * n_skips})
    audit = frame("query_audit", [{"record_id": f"q{i:06d}", "direction": DIRECTIONS[i % 4], "k": 1,
                                   "name_leakage": i % 13 == 0, "passed": True} for i in range(n_queries)])
    return skills, queries, skips, audit


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=50_000)
    args = parser.parse_args()
    frames = synthetic(args.queries)
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        root = export_release(Path(out), *frames)
        export_s = time.perf_counter() - started
        size_mb = sum(f.stat().st_size for f in root.rglob("*") if f.is_file()) / 1e6
    print(json.dumps({"queries": args.queries, "skills": frames[0].height, "skip_records": frames[2].height,
                      "export_s": round(export_s, 2), "release_mb": round(size_mb, 1)}))


if __name__ == "__main__":
    main()
