"""Routing latency on a 10,000-skill pool built from the shared GitHub skills corpus.

    SKILL_ASSETS_DB=data/skill_assets.duckdb .venv/bin/python bench/route_latency.py [--pool-size 10000] [--queries 100]

Reads every SKILL.md of the shared corpus beside the repository (``bench/shared_corpus.py``: the
router's own pool loader; rejected files are counted), then adds deterministic variants (renamed, body
paragraphs rotated) until the pool has ``--pool-size`` distinct ids; nothing is copied into the
repository. Indexes the pool through an ``Engine`` (every index cached under ``--cache-dir``: the first run
encodes, reruns are cache hits), then times single-query routing: the hybrid path (BM25 + bi-encoder +
multilingual encoder, the learned fusion and the selection cut; ``--fusion`` or the store's newest
``router_fusion``), the bi-encoder alone (embed + exact search) and embed + search + cross-encoder
rerank of the top 20; then a second start: a fresh ``Engine`` over the same pool and cache (index load +
first request); then ``per_query_metrics`` on 10,000 random depth-50 rankings over the pool.
The last stdout line is one JSON object with the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from shared_corpus import add_pool_arguments, corpus_pool  # noqa: E402

from skill_assets.lib.retrieval.engine import Engine  # noqa: E402
from skill_assets.lib.retrieval.engine_config import EngineSettings, FittedRouting
from skill_assets.lib.models import model_registry as registry  # noqa: E402
from skill_assets.lib.models.bundled_models import bundled_minilm  # noqa: E402
from skill_assets.lib.models.encoder_backends import BACKENDS  # noqa: E402
from skill_assets.lib.core.metrics import per_query_metrics  # noqa: E402
from skill_assets.lib.core.runs import Qrels, Run  # noqa: E402
from skill_assets.lib.core.skill_groups import singleton_groups  # noqa: E402
from skill_assets.lib.retrieval.fusion_training import load_router_model  # noqa: E402
from skill_assets.lib.retrieval.pools import Skill  # noqa: E402
from skill_assets.lib.retrieval.signals import SIGNALS  # noqa: E402
from skill_assets.router.routing import stderr_log  # noqa: E402

def sample_queries(pool: list[Skill], n: int, seed: int) -> list[str]:
    """Natural-ish queries: the first clause of sampled descriptions, 4-24 words."""
    rng = random.Random(seed)
    out: list[str] = []
    for s in rng.sample(pool, min(len(pool), n * 3)):
        words = s.description.replace("\n", " ").split(".")[0].split()
        if len(words) >= 4:
            out.append(" ".join(words[:24]))
        if len(out) == n:
            break
    return out


def latencies_ms(fn, queries: list[str], warmup: int = 3) -> np.ndarray:
    for q in queries[:warmup]:
        fn(q)
    times = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        times.append((time.perf_counter() - t0) * 1000)
    return np.array(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_pool_arguments(ap)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--embedder", default=None, help="default: bundled MiniLM")
    ap.add_argument("--reranker", default=None,
                    help="default: the newest trained r3 reranker in $SKILL_ASSETS_DB (after `make demo`), else the "
                         "bundled MiniLM as a cross-encoder (an untrained head: its scores carry no order, so the "
                         "int8 rank gate refuses it and the fp32 model is timed)")
    ap.add_argument("--cache-dir", default=str(Path("~/.cache/skill-assets/index").expanduser()))
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    ap.add_argument("--rerank-max-length", type=int, default=256, help="cross-encoder token cap (trained at 256)")
    ap.add_argument("--reranker-backend", default="auto", choices=BACKENDS,
                    help="auto (default: bf16 or int8, each gated against the original), torch-bf16, onnx-int8 or "
                         "torch (fp32)")
    ap.add_argument("--embedder-backend", default="torch-bf16", choices=BACKENDS,
                    help="how pool documents are embedded (as `skill-assets route --embedder-backend`)")
    ap.add_argument("--fusion", default=None, help="fusion model folder (default: newest router_fusion in "
                                                   "$SKILL_ASSETS_DB; bench/router_curated.py --model-dir writes one)")
    ap.add_argument("--index-only", action="store_true", help="build the pool and index, then stop")
    ap.add_argument("--metrics-queries", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    pool, parsed, rejected = corpus_pool(Path(args.corpus), args.pool_size)
    stderr_log(f"pool: {len(pool)} skills ({parsed} parsed, {rejected} rejected) "
               f"in {time.perf_counter() - t0:.1f}s")

    embedder = args.embedder or bundled_minilm()
    reranker = args.reranker or registry.newest_path(None, registry.RERANKER) or bundled_minilm()
    stderr_log(f"reranker: {reranker}")
    fusion_dir = args.fusion or registry.newest_path(None, registry.FUSION)
    if not fusion_dir:
        print("no fusion model: pass --fusion DIR (bench/router_curated.py --model-dir) or set SKILL_ASSETS_DB to a "
              "store with router_fusion", file=sys.stderr)
        return 2
    fusion, cut = load_router_model(fusion_dir)
    settings = dict(reranker_path=reranker, cache_dir=args.cache_dir, signals=SIGNALS, fitted=FittedRouting(fusion, cut),
                    settings=EngineSettings(num_threads=args.threads, reranker_max_length=args.rerank_max_length,
                                            reranker_backend=args.reranker_backend,
                                            embedder_backend=args.embedder_backend))
    router = Engine(embedder, log=stderr_log, **settings)
    stats = router.index(pool)
    stderr_log(f"index: {stats.seconds:.1f}s ({stats.encoded} encoded, {stats.cached} cached)")
    if args.index_only:
        return 0

    queries = sample_queries(pool, args.queries, args.seed)
    hybrid = latencies_ms(lambda q: router.route([q], top_k=20, use_reranker=False), queries)
    stderr_log(f"hybrid (3 signals + fusion + selection): p50 {np.percentile(hybrid, 50):.1f} ms, "
               f"p95 {np.percentile(hybrid, 95):.1f} ms")
    t = time.perf_counter()
    restarted = Engine(embedder, **settings)
    second = restarted.index(pool)
    second_index_s = time.perf_counter() - t
    restarted.route([queries[0]], top_k=20, use_reranker=False)
    second_start_s = time.perf_counter() - t
    stderr_log(f"second start: every index loaded in {second_index_s:.1f}s ({second.encoded} encoded), "
               f"first request answered at {second_start_s:.1f}s")
    router.fusion = None  # the bi-encoder path alone, as before the hybrid router
    search = latencies_ms(lambda q: router.route([q], top_k=20, use_reranker=False), queries)
    stderr_log(f"embed+search: p50 {np.percentile(search, 50):.1f} ms, p95 {np.percentile(search, 95):.1f} ms")
    rr = latencies_ms(lambda q: router.route([q], top_k=20, rerank_depth=20), queries)
    stderr_log(f"embed+search+rerank(20): p50 {np.percentile(rr, 50):.1f} ms, p95 {np.percentile(rr, 95):.1f} ms")

    rng = np.random.default_rng(args.seed)
    ids = np.array([s.id for s in pool], dtype=object)
    n_q = args.metrics_queries
    qids = [f"q{i}" for i in range(n_q)]
    run = Run.of(qids, [[(sid, -float(r)) for r, sid in enumerate(ids[rng.choice(len(ids), 50, replace=False)])]
                        for _ in range(n_q)])
    qrels = Qrels.of(qids, [singleton_groups(ids[rng.choice(len(ids), int(rng.integers(1, 4)), replace=False)])
                            for _ in range(n_q)])
    t = time.perf_counter()
    per_query_metrics(run, qrels)
    metrics_s = time.perf_counter() - t
    stderr_log(f"per_query_metrics: {n_q} queries x depth 50 over {len(pool)} skills in {metrics_s:.2f}s")

    import torch

    print(json.dumps({
        "pool": len(pool), "index_s": round(stats.seconds, 2),
        "hybrid_p50_ms": round(float(np.percentile(hybrid, 50)), 2),
        "hybrid_p95_ms": round(float(np.percentile(hybrid, 95)), 2),
        "second_start_index_s": round(second_index_s, 2), "second_start_first_request_s": round(second_start_s, 2),
        "fusion": fusion_dir, "fusion_kind": fusion.kind,
        "search_p50_ms": round(float(np.percentile(search, 50)), 2),
        "search_p95_ms": round(float(np.percentile(search, 95)), 2),
        "rerank_p50_ms": round(float(np.percentile(rr, 50)), 2),
        "rerank_p95_ms": round(float(np.percentile(rr, 95)), 2),
        "metrics_s": round(metrics_s, 3),
        "index_encoded": stats.encoded, "index_cached": stats.cached, "queries": len(queries),
        "rerank_max_length": args.rerank_max_length, "reranker": reranker, "reranker_backend": router.reranker.scorer.backend,
        "reranker_gate_spearman": router.reranker.scorer.probe_spearman,
        "torch_threads": torch.get_num_threads(), "loadavg_1m": round(os.getloadavg()[0], 2),
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
