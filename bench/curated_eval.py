"""Every system on the curated benchmark's test split, over the real skills of the shared corpus.

Materializes, into a DuckDB file of its own, what that takes: the corpus stage over the shared folder
(one source per repository folder, so skill ids are the curated ones), neighbourhoods, a small
SmolLM2 generation (the curated train split is the training signal, the pipeline's own queries
only join it), the `r3` hard negatives and embedder (curated train split added, checkpoint picked on
the curated dev split), the router's fusion (fitted on the curated train split, chosen on dev), then
the `curated` partition of the external benchmarks: BM25, the base embedder, the trained one and the
router's systems (each signal, RRF of each pair, the fusion, fusion + reranker with ``--reranker``)
rank the whole pool for every test request. Test requests are only ever scored.

    .venv/bin/python bench/curated_eval.py [--pool ../shared/corpus/github-skills/repos]
        [--workdir data/curated_eval] [--epochs 2] [--dev-evaluations 2] [--reranker]

The last line printed is one JSON object: per system `hit1`, `ndcg10` (with its 95% interval),
`fc10` and `set_compat`, overall and per direction; `n_test`; `r3_vs_base` (NDCG@10 difference and
its paired-bootstrap p); what the `r3` embedder trained and was selected on; wall time.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import yaml
from shared_corpus import CORPUS

from skill_assets.lib.evaluation.curated_benchmark import CURATED_DIR, REQUESTS
from skill_assets.materialize import materialize  # reads the definitions only when called

REPO = Path(__file__).resolve().parents[1]
METRICS = {"hit@1": "hit1", "ndcg@10": "ndcg10", "fc@10": "fc10", "set_compat": "set_compat"}


def run_config(epochs: int, dev_evaluations: int, pool: Path) -> dict:
    """Small generation, short training inputs; selection on the curated dev split (the assets' default); the
    router's fusion fitted on the curated requests over ``pool``."""
    return {"ops": {
        "router_fusion": {"config": {"requests_path": str(CURATED_DIR / REQUESTS), "pool_path": str(pool)}},
        "skill_combinations": {"config": {"train_counts": {"1": 2, "2": 1, "3": 1},
                                          "test_counts": {"1": 1, "2": 1, "3": 1}}},
        "llm_records": {"config": {"max_tokens": 200, "prompt_body_chars": 300}},
        "benchmark_queries": {"config": {"exclude_flags": ["duplicate_exact", "duplicate_normalised",
                                                          "empty_or_refusal"]}},
        "hard_negatives": {"config": {"max_seq_length": 128}},
        "embedder": {"config": {"batch_size": 16, "max_seq_length": 128, "epochs": epochs,
                                "dev_evaluations": dev_evaluations}},
        "reranker": {"config": {"batch_size": 16, "max_seq_length": 128, "epochs": 1,
                                "dev_evaluations": dev_evaluations}},
    }}


def configure(workdir: Path, pool: Path) -> Path:
    """Environment for a run of its own over ``pool``; returns the run config path. Set before the
    definitions are imported: the external partitions are read from it then."""
    workdir.mkdir(parents=True, exist_ok=True)
    sources = workdir / "sources.yaml"
    sources.write_text(yaml.safe_dump({"sources": [{"location": str(pool), "subfolders": True}]}))
    benchmarks = workdir / "benchmarks.yaml"
    benchmarks.write_text("{}\n")  # only the curated partition, from SKILL_ASSETS_CURATED_POOL
    os.environ.pop("SKILL_ASSETS_SOURCES", None)
    os.environ.update({"SKILL_ASSETS_DB": str(workdir / "curated_eval.duckdb"),
                       "DAGSTER_HOME": str(workdir / "dagster_home"), "SKILL_ASSETS_SOURCES_FILE": str(sources),
                       "SKILL_ASSETS_CURATED_POOL": str(pool), "SKILL_ASSETS_EXTERNAL_BENCHMARKS": str(benchmarks)})
    return workdir / "run.yaml"


def figures(db: Path) -> dict:
    from skill_assets.lib.common.store import query

    rows = query(db, """SELECT system, slice, metric, value, ci_low, ci_high, n_queries, delta_vs_base, p_value_vs_base
                        FROM external_metrics WHERE benchmark = 'curated'
                          AND (slice = 'all' OR slice LIKE 'direction=%')""").to_dicts()
    systems: dict[str, dict] = {}
    for r in rows:
        if r["metric"] not in METRICS:
            continue
        where = systems.setdefault(r["system"], {"all": {}})
        part = where["all"] if r["slice"] == "all" else where.setdefault(r["slice"].removeprefix("direction="), {})
        part[METRICS[r["metric"]]] = None if r["value"] != r["value"] else round(r["value"], 4)
        if r["metric"] == "ndcg@10":
            part["ndcg10_ci95"] = [round(r["ci_low"], 4), round(r["ci_high"], 4)]
            part["n"] = r["n_queries"]
    r3 = next((r for r in rows if r["system"] == "embedder:r3" and r["slice"] == "all" and r["metric"] == "ndcg@10"),
              None)
    n_test = next((r["n_queries"] for r in rows if r["slice"] == "all"), 0)
    return {"n_test": n_test, "systems": systems,
            "r3_vs_base_ndcg10": None if r3 is None else {"delta": round(r3["delta_vs_base"], 4),
                                                          "p": round(r3["p_value_vs_base"], 4)}}


def training_card(db: Path) -> dict:
    from skill_assets.lib.common.store import query

    path = query(db, "SELECT path FROM embedder WHERE variant = 'r3'")["path"][0]
    card = json.loads((Path(path) / "skill_assets_card.json").read_text())
    return {k: card.get(k) for k in ("train_queries", "dev_queries", "steps", "selected_step", "dev_ndcg10_by_step",
                                      "training_data", "epochs", "learning_rate", "wall_s")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", type=Path, default=CORPUS)
    parser.add_argument("--workdir", type=Path, default=REPO / "data" / "curated_eval")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--dev-evaluations", type=int, default=2)
    parser.add_argument("--reranker", action="store_true", help="train and score the r3 reranker too")
    args = parser.parse_args()
    if not args.pool.is_dir():
        sys.exit(f"{args.pool}: no such pool directory (the shared corpus beside this checkout)")
    config = configure(args.workdir.resolve(), args.pool.resolve())
    config.write_text(yaml.safe_dump(run_config(args.epochs, args.dev_evaluations, args.pool.resolve())))
    started = time.perf_counter()
    selection = ["+key:embedder", "key:router_fusion", "key:ingest_rejects", "key:external_skills", "key:external_queries", "key:external_runs",
                 "key:external_metrics", *(["key:reranker"] if args.reranker else [])]
    if materialize(selection, str(config), ["r3", "curated"]) != 0:
        sys.exit("materialization failed (see above)")
    db = Path(os.environ["SKILL_ASSETS_DB"])
    print(json.dumps({"benchmark": "curated", "split": "test", **figures(db), "r3_training": training_card(db),
                      "db": str(db), "wall_s": round(time.perf_counter() - started, 1)}))


if __name__ == "__main__":
    main()
