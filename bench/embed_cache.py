"""Benchmark the `skill_embeddings` path against a plain `SentenceTransformer.encode` on the real corpus.

Ingests and deduplicates the shared GitHub skills the way the corpus assets do (into a DuckDB
file, reused when ``--db`` already holds ``skills``), holds back 1% of the skills, then times

(a) the first embedding pass through ``refresh_embeddings`` + ``choose_encoder`` exactly as the
    asset runs it (model load, int8 export and quality gate from a cold cache, chunked writes;
    ``first_pass_setup_s`` says how much of it was load + export + gate);
(b) ``SentenceTransformer(model).encode(texts)`` over the same texts, model load included as in (a)
    (library imports are done before either timer starts);
(c) re-materializing with the held-back 1% added (only those are embedded).

It also reports how faithful (a) is to the fp32 embeddings of (b): per-skill cosine and the
overlap of each skill's 10 nearest neighbours. Targets (issue 23): (a) at least 2× (b); (c) at most
2 % of (a). Writes its section of docs/RESULTS.md (``--no-results``: not); the last line is one JSON
object.

    .venv/bin/python bench/embed_cache.py [--limit 500] [--db data/bench_corpus.duckdb]
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from results_doc import write_section
from shared_corpus import CORPUS

from skill_assets.defs.resources import ModelSettings
from skill_assets.lib.common import store
from skill_assets.lib.models.embedding_cache import (
    model_fingerprint,
    progress_reporter,
    refresh_embeddings,
)
from skill_assets.lib.models.encoder_backends import BACKENDS, backend_key, choose_encoder
from skill_assets.lib.core.skill_text import ENCODER_CAPS, skill_document
from skill_assets.lib.corpus.sources import SourceSpec
from skill_assets.lib.corpus.corpus_store import dedup_in_store, ingest_into_store
from skill_assets.lib.corpus.dedup import DedupConfig



def ensure_corpus(db: Path, corpus: Path) -> float:
    """Ingest + dedup into ``db`` unless it already has ``skills``; returns the seconds spent."""
    if store.table_exists(db, "skills"):
        return 0.0
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        ingest_into_store(db, [SourceSpec("github-skills", "dir", str(corpus))], Path(work), 1_000_000, os.cpu_count() or 1)
    dedup_in_store(db, ["github-skills"], DedupConfig())
    return time.perf_counter() - start


def skill_texts(db: Path, limit: int | None) -> tuple[list[str], list[str]]:
    caps = ENCODER_CAPS
    df = store.query(db, "SELECT skill_id, name, substr(description, 1, ?) AS d, substr(body, 1, ?) AS b "
                         f"FROM skills ORDER BY skill_id {'LIMIT ' + str(int(limit)) if limit else ''}",
                     [caps.description_chars, caps.body_chars])
    return df["skill_id"].to_list(), [skill_document(n, d, b, caps) for n, d, b in zip(df["name"], df["d"], df["b"])]


def top_k_overlap(a: np.ndarray, b: np.ndarray, k: int = 10) -> float:
    """Mean share of each item's k nearest neighbours (self excluded) that two embeddings agree on."""
    def neighbours(x):
        sim = x @ x.T
        np.fill_diagonal(sim, -np.inf)
        return np.argpartition(-sim, k, axis=1)[:, :k]
    na, nb = neighbours(a), neighbours(b)
    return float(np.mean([len(set(r) & set(s)) / k for r, s in zip(na, nb)]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--db", type=Path, help="DuckDB file to (re)use for the ingested corpus (default: temporary)")
    ap.add_argument("--limit", type=int, help="only the first N skills (by id), for a quick run")
    ap.add_argument("--backend", default="auto", choices=list(BACKENDS))
    ap.add_argument("--new-fraction", type=float, default=0.01)
    ap.add_argument("--no-results", action="store_true", help="do not write docs/RESULTS.md")
    args = ap.parse_args()
    load_start = [round(x, 2) for x in os.getloadavg()]

    tmp = Path(tempfile.mkdtemp(prefix="embed-cache-bench-"))
    db = args.db or tmp / "corpus.duckdb"
    ingest_s = ensure_corpus(db, args.corpus)
    ids, texts = skill_texts(db, args.limit)
    rng = np.random.default_rng(0)
    new = set(rng.choice(len(ids), size=max(1, round(len(ids) * args.new_fraction)), replace=False).tolist())
    base = [i for i in range(len(ids)) if i not in new]
    settings = ModelSettings()
    fingerprint = f"{model_fingerprint(settings.embedder)}/{backend_key(args.backend)}"
    onnx_cache = tmp / "onnx"  # cold: the first pass pays for export and quality gate
    store.drop_table(db, "skill_embeddings")
    chosen = []

    setup_s = []

    def load_encode(missing):
        start = time.perf_counter()
        choice = choose_encoder(settings.load_embedder(), args.backend, onnx_cache, fingerprint, missing,
                                settings.encode_batch_size)
        chosen.append(choice)
        setup_s.append(time.perf_counter() - start)
        return choice.encode

    def run(rows: list[int]) -> tuple[float, dict]:
        start = time.perf_counter()
        stats = refresh_embeddings(db, [ids[i] for i in rows], [texts[i] for i in rows], settings.embedder,
                                   fingerprint, load_encode, progress=progress_reporter(lambda _: None))
        return time.perf_counter() - start, stats

    # library imports (seconds, paid once per process) are outside both timings; model loading is inside both
    from sentence_transformers import SentenceTransformer

    first_s, first = run(base)

    base_texts = [texts[i] for i in base]
    start = time.perf_counter()
    plain = SentenceTransformer(settings.embedder, device="cpu")
    plain.max_seq_length = min(plain.max_seq_length or settings.max_seq_length, settings.max_seq_length)
    plain_load_s = time.perf_counter() - start
    reference = plain.encode(base_texts, batch_size=settings.encode_batch_size, normalize_embeddings=True)
    plain_s = time.perf_counter() - start

    got = store.query(db, "SELECT skill_id, embedding FROM skill_embeddings")
    by_id = dict(zip(got["skill_id"].to_list(), got["embedding"].to_list()))
    ours = np.asarray([by_id[ids[i]] for i in base], dtype=np.float32)
    cos = np.sum(ours * reference, axis=1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(reference, axis=1)

    incr_s, incr = run(list(range(len(ids))))
    figures = {
        "skills": len(ids), "first_pass_skills": first["embedded_now"], "new_skills": incr["embedded_now"],
        "backend": chosen[0].backend, "backend_reason": chosen[0].reason, "ingest_dedup_s": round(ingest_s, 1),
        "first_pass_s": round(first_s, 2), "plain_encode_s": round(plain_s, 2),
        "speedup_vs_encode": round(plain_s / first_s, 3),
        # model load + the one-time int8 export and quality gate (the export and gate are cached per model,
        # so a later corpus or a rebuild does not pay them)
        "first_pass_setup_s": round(setup_s[0], 2),
        "plain_load_s": round(plain_load_s, 2),
        "speedup_vs_encode_excl_setup": round((plain_s - plain_load_s) / (first_s - setup_s[0]), 3),
        "incremental_s": round(incr_s, 2), "incremental_cache_hits": incr["cache_hits"],
        "incremental_cost_ratio": round(incr_s / first_s, 4),
        "min_cosine_vs_fp32": round(float(cos.min()), 4), "mean_cosine_vs_fp32": round(float(cos.mean()), 5),
        "top10_overlap": round(top_k_overlap(ours, reference), 4),
        "cpu_threads": __import__("torch").get_num_threads(),
        "load_start": load_start, "load_end": [round(x, 2) for x in os.getloadavg()],
    }
    figures["meets"] = {"speedup_vs_encode": figures["speedup_vs_encode"] >= TARGETS["speedup_vs_encode"],
                        "incremental_cost_ratio": figures["incremental_cost_ratio"] <= TARGETS["incremental_cost_ratio"]}
    if not args.no_results:
        write_section("embed-cache", section(figures, args))
    print(json.dumps(figures))


#: first pass at least 2× a plain ``encode``; re-materializing with 1 % new skills at most 2 % of the first pass
TARGETS = {"speedup_vs_encode": 2.0, "incremental_cost_ratio": 0.02}


def section(f: dict, args: argparse.Namespace) -> str:
    """The RESULTS.md section: the issue's two figures against their targets, and what they were taken on."""
    run = f"--limit {args.limit}" if args.limit else "every skill of the shared corpus"
    yes = {True: "yes", False: "**no**"}
    return "\n".join([
        f"`skill_embeddings` over {f['skills']:,} deduplicated corpus skills ({run}), {f['new_skills']} held back "
        f"and added for the incremental pass; {f['cpu_threads']} threads; load average (1, 5, 15 min) "
        f"{f['load_start']} at the start, {f['load_end']} at the end.", "",
        "| figure | measured | target | met |", "|---|---|---|---|",
        f"| first pass vs plain `encode` | {f['speedup_vs_encode']}× ({f['first_pass_s']} s vs {f['plain_encode_s']} s) "
        f"| ≥ 2× | {yes[f['meets']['speedup_vs_encode']]} |",
        f"| 1 % new vs first pass | {100 * f['incremental_cost_ratio']:.2f} % ({f['incremental_s']} s) | ≤ 2 % "
        f"| {yes[f['meets']['incremental_cost_ratio']]} |", "",
        f"Backend: {f['backend']} ({f['backend_reason']}); setup (model load, export, gate) {f['first_pass_setup_s']} s; "
        f"against fp32: min cosine {f['min_cosine_vs_fp32']}, mean {f['mean_cosine_vs_fp32']}, 10-NN overlap "
        f"{f['top10_overlap']}.", "", "```json", json.dumps(f), "```"])


if __name__ == "__main__":
    main()
