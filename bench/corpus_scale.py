"""Corpus-scale benchmark: ingest + all dedup layers on a synthetic GitHub-like corpus.

Builds N files (default 100,000) from ../shared/corpus/github-skills by planting forks and mirrors
with known mutations (exact forks, whitespace/CRLF changes, renamed folders, edited front matter,
reworded sentences, reordered sections) plus files with every kind of bad input, in a temporary
directory outside the repository. Then times ingest + dedup into a fresh DuckDB file (in a fresh
process, so ``peak_rss_mb`` — that process plus workers × its largest worker — measures the
pipeline and not the benchmark's own bookkeeping), scores the
near-duplicate groups against the planted truth (pairwise precision/recall), and runs datasketch's
MinHashLSH with the same parameters on the same shingles for a speed ratio.

    .venv/bin/python bench/corpus_scale.py [--files 100000] [--skip-datasketch] [--no-results]

The machine may be shared: the load average (1, 5, 15 min) before and after the measured pipeline
and the pipeline's CPU seconds (main process and workers) are recorded beside the wall clock. The
last line printed is one JSON object with the figures; the ``corpus-scale`` section of
docs/RESULTS.md is rewritten with them (unless ``--no-results``).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import re
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import polars as pl
from results_doc import write_section
from shared_corpus import CORPUS

from skill_assets.lib.common import store
from skill_assets.lib.corpus.sources import SourceSpec
from skill_assets.lib.corpus.corpus_store import dedup_in_store, ingest_into_store
from skill_assets.lib.corpus.dedup import DedupConfig, dedup_candidates, deduplicate, near_duplicate_pairs, row_texts
from skill_assets.lib.corpus.minhash import shingle_hashes
from skill_assets.lib.retrieval.pools import load_pool

NEAR_KINDS = ("front_matter", "sentences", "reorder")
EXACT_KINDS = ("fork", "whitespace", "renamed")
BAD_KINDS = ("no_front_matter", "invalid_yaml", "missing_name", "missing_description", "empty_body",
             "not_utf8", "binary", "too_large", "symlink_outside")
MAX_BYTES = 200_000


def load_originals() -> list[tuple[str, str, str]]:
    """(name, description, body) of parseable shared skills that are not already duplicates of each other."""
    rows = []
    for p in load_pool(CORPUS, log=lambda _: None).skills:
        if p.flags or len(p.body) < 400:
            continue  # no description, or too short to mutate meaningfully
        rows.append({"skill_id": str(len(rows)), "source": "s", "name": p.name, "description": p.description,
                     "body": p.body, "name_hash": p.name.lower(), "content_hash": hash((p.description, p.body))})
    kept, _ = deduplicate(dedup_candidates(rows), ["s"], DedupConfig(), texts_for=row_texts(rows))
    by_id = {r["skill_id"]: r for r in rows}
    return [(r["name"], r["description"], r["body"]) for r in (by_id[s.skill_id] for s in kept)]


def render(name: str, description: str, body: str) -> str:
    return f"---\nname: {json.dumps(name)}\ndescription: {json.dumps(description, ensure_ascii=False)}\n---\n\n{body}\n"


def reword(text: str, rng: random.Random, sentences: int = 2) -> str:
    parts = re.split(r"(?<=[.!?。])\s+", text)
    for _ in range(sentences):
        i = rng.randrange(len(parts))
        words = parts[i].split()
        if len(words) > 3:
            j = rng.randrange(len(words))
            words[j] = rng.choice(["carefully", "quickly", "always", "usually", "then", "also"])
            parts[i] = " ".join(words)
    return " ".join(parts) if len(parts) > 1 else text


def reorder_sections(body: str, rng: random.Random) -> str:
    sections = re.split(r"(?m)^(?=## )", body)
    if len(sections) < 3:
        return reword(body, rng, 1)
    i, j = rng.sample(range(1, len(sections)), 2)
    sections[i], sections[j] = sections[j], sections[i]
    return "".join(s if s.endswith("\n") else s + "\n" for s in sections)


def mutate(kind: str, name: str, description: str, body: str, rng: random.Random) -> str:
    if kind in ("fork", "renamed"):
        return render(name, description, body)
    if kind == "whitespace":
        return render(name, description, "\n".join(line + "  " for line in body.split("\n"))).replace("\n", "\r\n")
    if kind == "front_matter":
        return render(name, description + " Works with any repository layout.", body)
    if kind == "sentences":
        return render(name, description, reword(body, rng))
    return render(name, description, reorder_sections(body, rng))


def bad_file(kind: str, path: Path, rng: random.Random) -> None:
    if kind == "symlink_outside":
        path.symlink_to("/etc/hostname")
        return
    payload = {
        "no_front_matter": b"# Just a title\n\nNo front matter here.\n",
        "invalid_yaml": b"---\nname: [unclosed\ndescription: x\n---\nbody\n",
        "missing_name": b"---\ndescription: has no name\n---\nbody text\n",
        "missing_description": b"---\nname: nameless-desc\n---\nbody text\n",
        "empty_body": b"---\nname: empty\ndescription: nothing below\n---\n\n",
        "not_utf8": b"---\nname: latin\ndescription: caf\xe9\n---\nbody\n",
        "binary": b"\x89PNG\r\n\x1a\n\x00\x00\x00",
        "too_large": b"---\nname: huge\ndescription: big\n---\n" + b"x" * (MAX_BYTES + 10),
    }[kind]
    path.write_bytes(payload)


def build_corpus(root: Path, n_files: int, originals: list, seed: int = 0) -> tuple[dict[str, tuple[int, str]], Counter]:
    """Write the corpus under root/<source>/...; return truth: relative path → (original index, kind)."""
    rng = random.Random(seed)
    truth: dict[str, tuple[int, str]] = {}
    kinds: Counter = Counter()
    n_bad = max(len(BAD_KINDS), n_files // 300)
    n_good = n_files - n_bad
    mutation_kinds = EXACT_KINDS + NEAR_KINDS
    for i in range(n_good):
        o = i % len(originals)
        kind = "original" if i < len(originals) else mutation_kinds[rng.randrange(len(mutation_kinds))]
        source = f"repo{i % 20:02d}"
        folder = f"skill-{o}-v{i}" if kind != "renamed" else f"renamed-{i}"
        rel = f"{source}/{folder}/SKILL.md"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        text = render(*originals[o]) if kind == "original" else mutate(kind, *originals[o], rng)
        (root / rel).write_bytes(text.encode("utf-8"))
        truth[f"{source}/{folder}"] = (o, kind)
        kinds[kind] += 1
    for i in range(n_bad):
        kind = BAD_KINDS[i % len(BAD_KINDS)]
        p = root / f"repo{i % 20:02d}" / f"bad-{kind}-{i}" / "SKILL.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        bad_file(kind, p, rng)
        kinds[f"bad:{kind}"] += 1
    return truth, kinds


def pair_scores(truth_groups: list[int], pred_groups: list[str]) -> tuple[float, float]:
    """Pairwise precision and recall of predicted groups against truth groups."""
    df = pl.DataFrame({"t": truth_groups, "p": pred_groups})
    c2 = lambda col: (col * (col - 1) / 2).sum()
    tp = df.group_by("t", "p").len().select(c2(pl.col("len"))).item()
    pred = df.group_by("p").len().select(c2(pl.col("len"))).item()
    true = df.group_by("t").len().select(c2(pl.col("len"))).item()
    return (tp / pred if pred else 1.0), (tp / true if true else 1.0)


def datasketch_seconds(texts: list[str], config: DedupConfig) -> float:
    """datasketch MinHash + MinHashLSH (same permutations, bands and shingles); shingling not timed."""
    from datasketch import MinHash, MinHashLSH

    sh, off = shingle_hashes(texts, config.shingle_size)
    shingles = [[v.tobytes() for v in sh[off[i] : off[i + 1]]] for i in range(len(texts))]
    started = time.perf_counter()
    lsh = MinHashLSH(threshold=config.jaccard_threshold, num_perm=config.num_perm,
                     params=(config.bands, config.num_perm // config.bands))
    sketches = []
    for i, items in enumerate(shingles):
        m = MinHash(num_perm=config.num_perm, seed=config.seed)
        m.update_batch(items)
        lsh.insert(str(i), m)
        sketches.append(m)
    for m in sketches:
        lsh.query(m)
    return time.perf_counter() - started


def peak_rss_mb() -> tuple[float, float]:
    """(this process, the largest worker process) peak resident set sizes in MB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return own / 1024, children / 1024


def run_pipeline(root: str, db: str, work: str, workers: int, out: str) -> None:
    """The measured part, alone in a fresh process, so its peak RSS is the pipeline's and not the bench's."""
    config = DedupConfig()
    started = time.perf_counter()
    # the same code path as the corpus assets: streamed ingest, dedup reading texts from DuckDB
    result = ingest_into_store(db, [SourceSpec("bench", "dir", root)], Path(work), MAX_BYTES, workers)
    t_ingest = time.perf_counter() - started
    t_dedup0 = time.perf_counter()
    dedup_in_store(db, ["bench"], config)
    t_dedup = time.perf_counter() - t_dedup0
    own, worker = peak_rss_mb()
    cpu = os.times()
    Path(out).write_text(json.dumps({"wall_s": time.perf_counter() - started, "ingest_s": t_ingest,
                                     "dedup_s": t_dedup, "files_seen": result.files_seen, "rss_main": own,
                                     "rss_worker": worker, "cpu_main_s": cpu.user + cpu.system,
                                     "cpu_workers_s": cpu.children_user + cpu.children_system}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--skip-datasketch", action="store_true")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--no-results", action="store_true", help="do not rewrite docs/RESULTS.md")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        sys.exit(f"shared corpus not found at {CORPUS}")
    originals = load_originals()
    work = Path(tempfile.mkdtemp(prefix="corpus-bench-"))
    try:
        root = work / "corpus"
        truth, kinds = build_corpus(root, args.files, originals)
        print(f"built {args.files} files from {len(originals)} originals: {dict(kinds)}", file=sys.stderr)
        db = work / "bench.duckdb"
        config = DedupConfig()
        child = multiprocessing.get_context("spawn").Process(
            target=run_pipeline, args=(str(root), str(db), str(work), args.workers, str(work / "run.json")))
        load_before = [round(x, 2) for x in os.getloadavg()]
        child.start()
        child.join()
        load_after = [round(x, 2) for x in os.getloadavg()]
        if child.exitcode != 0:
            sys.exit(f"pipeline process failed with exit code {child.exitcode}")
        run = json.loads((work / "run.json").read_text())
        wall = run["wall_s"]
        raw_ids = store.query(db, "SELECT skill_id FROM raw_skills")["skill_id"].to_list()
        rejects = store.read_table(db, "ingest_rejects").to_dicts()
        kept = store.query(db, "SELECT skill_id FROM skills").to_dicts()
        duplicates = store.read_table(db, "skill_duplicates").to_dicts()
        # workers run side by side, so the pipeline's footprint is bounded by main + workers × the largest
        rss_total = run["rss_main"] + args.workers * run["rss_worker"]

        final = {d["duplicate_skill_id"]: d["kept_skill_id"] for d in duplicates}
        t_groups, p_groups, near_t, near_p = [], [], [], []
        for skill_id in raw_ids:
            key = skill_id.split("/", 1)[1]
            o, kind = truth[key]
            pred = final.get(skill_id, skill_id)
            t_groups.append(o)
            p_groups.append(pred)
            if kind in NEAR_KINDS or kind == "original":
                near_t.append(o)
                near_p.append(pred)
        precision, recall = pair_scores(near_t, near_p)
        all_precision, all_recall = pair_scores(t_groups, p_groups)
        reconciled = len(raw_ids) + len(rejects) == run["files_seen"] == args.files \
            and len(kept) + len(duplicates) == len(raw_ids)

        # near-duplicate stage alone, ours vs datasketch, on the texts left after the exact layers
        stage_ids = sorted({r["skill_id"] for r in kept} | {d["duplicate_skill_id"] for d in duplicates
                                                           if d["layer"] == "near_duplicate"})
        texts = store.query(db, "SELECT description || chr(10) || body AS t FROM raw_skills "
                                "WHERE skill_id IN (SELECT unnest(?)) ORDER BY skill_id", [stage_ids])["t"].to_list()
        t0 = time.perf_counter()
        near_duplicate_pairs(texts, config)
        ours_s = time.perf_counter() - t0
        ds_s = None if args.skip_datasketch else datasketch_seconds(texts, config)
        layers = Counter(d["layer"] for d in duplicates)
        figures = {
            "files": args.files, "wall_s": round(wall, 2), "files_per_s": round(args.files / wall, 1),
            "ingest_s": round(run["ingest_s"], 2), "dedup_s": round(run["dedup_s"], 2),
            "peak_rss_mb": round(rss_total, 1), "peak_rss_main_mb": round(run["rss_main"], 1),
            "peak_rss_worker_mb": round(run["rss_worker"], 1),
            "kept": len(kept), "duplicates_by_layer": dict(layers),
            "rejects_by_reason": dict(Counter(r["reason"] for r in rejects)), "reconciled": reconciled,
            "near_dup_precision": round(precision, 4), "near_dup_recall": round(recall, 4),
            "all_layers_precision": round(all_precision, 4), "all_layers_recall": round(all_recall, 4),
            "near_dup_stage_docs": len(texts), "near_dup_stage_s": round(ours_s, 2),
            "datasketch_s": None if ds_s is None else round(ds_s, 2),
            "speedup_vs_datasketch": None if ds_s is None else round(ds_s / ours_s, 2),
            "cpu_s": round(run["cpu_main_s"] + run["cpu_workers_s"], 1), "cpu_main_s": round(run["cpu_main_s"], 1),
            "cpu_workers_s": round(run["cpu_workers_s"], 1), "workers": args.workers, "cores": os.cpu_count(),
            "load_before": load_before, "load_after": load_after,
            "load_end": [round(x, 2) for x in os.getloadavg()],
        }
        if not args.no_results:
            write_section("corpus-scale", section(figures))
        print(json.dumps(figures))
    finally:
        shutil.rmtree(work, ignore_errors=True)


TARGETS = {"wall_s": ("≤", 30), "peak_rss_mb": ("≤", 3000), "near_dup_precision": ("≥", 0.99),
           "near_dup_recall": ("≥", 0.95), "speedup_vs_datasketch": ("≥", 10)}


def section(f: dict) -> str:
    """The RESULTS.md section: the issue's figures against their targets, the load they were taken under."""
    def meets(key: str) -> str:
        op, target = TARGETS[key]
        value = f[key]
        return "" if value is None else ("yes" if (value <= target if op == "≤" else value >= target) else "no")

    rows = [("wall clock, ingest + dedup", f"{f['wall_s']} s (ingest {f['ingest_s']} s, dedup {f['dedup_s']} s)",
             "wall_s"),
            ("peak RSS (main + workers × largest worker)", f"{f['peak_rss_mb']} MB", "peak_rss_mb"),
            ("near-duplicate pairwise precision", f"{f['near_dup_precision']}", "near_dup_precision"),
            ("near-duplicate pairwise recall", f"{f['near_dup_recall']}", "near_dup_recall"),
            ("near-duplicate stage vs datasketch MinHashLSH",
             "not run" if f["speedup_vs_datasketch"] is None else
             f"{f['speedup_vs_datasketch']}× ({f['near_dup_stage_s']} s vs {f['datasketch_s']} s, "
             f"{f['near_dup_stage_docs']:,} documents)", "speedup_vs_datasketch")]
    lines = [f"Ingest + all dedup layers over {f['files']:,} synthetic GitHub-like files (planted forks, mirrors, "
             "edited copies and every kind of bad input), into a fresh DuckDB file, in a fresh process with "
             f"{f['workers']} parse workers on {f['cores']} cores. Load average (1, 5, 15 min) before the "
             f"pipeline {f['load_before']}, after it {f['load_after']}: other jobs shared the cores. The pipeline "
             f"used {f['cpu_s']} CPU seconds (main {f['cpu_main_s']}, workers {f['cpu_workers_s']}).", "",
             "| figure | measured | target | meets |", "|---|---|---|---|"]
    for label, value, key in rows:
        op, target = TARGETS[key]
        lines.append(f"| {label} | {value} | {op} {target:g}{'×' if key.startswith('speedup') else ''} | {meets(key)} |")
    lines += ["", f"Kept {f['kept']:,}; duplicates by layer {f['duplicates_by_layer']}; rejects by reason "
              f"{f['rejects_by_reason']}; every file in exactly one output: {f['reconciled']}.", "",
              "```json", json.dumps(f), "```"]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
