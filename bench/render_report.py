"""Render the standalone HTML benchmark report to a PNG with headless Chromium, to look at it.

    python bench/render_report.py [PATH] [--out report.png] [--width 1280]

PATH is an HTML file or a DuckDB store whose ``benchmark_report`` table names the HTML (default
``$SKILL_ASSETS_DB`` or ``data/skill_assets.duckdb``). ``--synthetic`` instead materializes the
real ``benchmark_report`` asset on a temporary store filled with synthetic metrics (random
rankings scored by ``lib.evaluation``), for when no store has a report yet.

Chromium's ``--screenshot`` captures one window, so the window is made taller than any report and
the blank space below the page is cropped. Ends with one JSON line: html, png, width, height, render_s.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from skill_assets.lib.common.processes import stop_process_group

TALL = 16000  # px; taller than any report we render


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if path := shutil.which(name):
            return path
    raise SystemExit("no chromium binary on PATH (Debian: apt-get install -y chromium)")


def render(html: Path, png: Path, width: int) -> tuple[int, int]:
    """Screenshot ``html`` at ``width`` px; returns the (width, height) of the cropped PNG."""
    from PIL import Image, ImageChops

    with tempfile.TemporaryDirectory(prefix="render-report-") as profile:
        proc = subprocess.Popen([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                 f"--user-data-dir={profile}", f"--window-size={width},{TALL}", f"--screenshot={png}",
                                 html.resolve().as_uri()], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            output, _ = proc.communicate(timeout=600)  # generous: a busy machine is slower, not wrong
        finally:
            stop_process_group(proc)  # its children still write into the profile after it exits
        if proc.returncode != 0:
            raise subprocess.CalledProcessError(proc.returncode, proc.args, output)
    image = Image.open(png).convert("RGB")
    box = ImageChops.difference(image, Image.new("RGB", image.size, image.getpixel((0, image.height - 1)))).getbbox()
    bottom = min(image.height, (box[3] if box else image.height) + 24)
    image.crop((0, 0, image.width, bottom)).save(png)
    return image.width, bottom


def synthetic_report(workdir: Path) -> Path:
    """Materialize ``benchmark_report`` on a store with synthetic metrics; returns the HTML path."""
    import dagster as dg
    import numpy as np

    from skill_assets.definitions import defs
    from skill_assets.defs.resources import DuckDBStore, default_resources
    from skill_assets.lib.common.store import replace_table
    from skill_assets.lib.common.tables import frame
    from skill_assets.lib.core.runs import Qrels, Run
    from skill_assets.lib.core.skill_groups import singleton_groups
    from skill_assets.lib.evaluation.metric_tables import metric_rows, query_slices

    rng = np.random.default_rng(0)
    skills = [f"s{i}" for i in range(300)]
    queries = [{"query_id": f"q{i}", "direction": d, "k": int(k), "split": "test"}
               for i, (d, k) in enumerate(zip(rng.choice(["en2en", "en2zh", "zh2en", "zh2zh"], 200),
                                              rng.choice([1, 2, 3], 200)))]
    truth = [set(rng.choice(skills, q["k"], replace=False)) for q in queries]
    skill_of = {"bm25": 0.15, "embedder:base": 0.35, "embedder:r3": 0.6, "embedder:r3-skip-neg": 0.55,
                "reranker:r3": 0.7, "reranker:r3-noskip": 0.62, "reranker:r3-shuffled-skip": 0.58}
    qids = [q["query_id"] for q in queries]
    runs = {}
    for system, strength in skill_of.items():  # ground truth lifted towards the top with probability `strength`
        rankings = []
        for rel in truth:
            others = [s for s in rng.permutation(skills) if s not in rel][:50]
            for s in rel:
                others.insert(int(rng.integers(0, 3) if rng.random() < strength else rng.integers(3, 50)), s)
            rankings.append([(s, -float(r)) for r, s in enumerate(others[:50])])
        runs[system] = Run.of(qids, rankings)
    slices = query_slices(queries, ("direction", "k"))
    qrels = Qrels.of(qids, [singleton_groups(sorted(rel)) for rel in truth])
    rows = [{**r, "split": "test", "data_version": "synthetic", "code_version": "render_report",
             "model_version": "synthetic"} for r in metric_rows(runs, qrels, slices)]
    db = workdir / "store.duckdb"
    replace_table(db, "benchmark_metrics", frame("benchmark_metrics", rows))
    replace_table(db, "benchmark_queries", frame("benchmark_queries", queries))
    labels = ["function_overlap", "workflow_conflict", "domain_mismatch", "redundant", "unknown"]
    replace_table(db, "skip_taxonomy", frame("skip_taxonomy", [
        {"record_id": f"r{i}", "k": 2 + i % 2, "label": labels[min(int(rng.exponential(1.2)), 4)]}
        for i in range(120)]))
    replace_table(db, "llm_records", frame("llm_records", [
        {"record_id": f"r{i}", "direction": d, "k": k, "decision": dec} for i, (d, k, dec) in enumerate(
            (d, k, dec) for d in ("en2en", "en2zh", "zh2en", "zh2zh") for k in (1, 2, 3)
            for dec in ["WRITE"] * (9 - 2 * k) + ["SKIP"] * (2 * k))]))
    os.environ.setdefault("DAGSTER_HOME", str(workdir))
    result = dg.materialize(list(defs.assets or []), selection=["benchmark_report"], raise_on_error=True,
                            resources={**default_resources(), "store": DuckDBStore(database=str(db))})
    assert result.success
    return workdir / "reports" / "benchmark_report.html"


def html_from_store(db: Path) -> Path:
    from skill_assets.lib.common.store import query, table_exists

    if not table_exists(db, "benchmark_report"):
        raise SystemExit(f"{db} has no benchmark_report table: materialize it, or pass --synthetic")
    return Path(query(db, "SELECT html_path FROM benchmark_report ORDER BY created_at DESC LIMIT 1")["html_path"][0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", help="HTML report or DuckDB store (default $SKILL_ASSETS_DB)")
    parser.add_argument("--synthetic", action="store_true", help="render a report built on synthetic metrics")
    parser.add_argument("--out", help="PNG path (default: beside the HTML)")
    parser.add_argument("--width", type=int, default=1280)
    args = parser.parse_args(argv)
    if args.synthetic:
        html = synthetic_report(Path(tempfile.mkdtemp(prefix="synthetic-report-")))
    else:
        path = Path(args.path or os.environ.get("SKILL_ASSETS_DB", "data/skill_assets.duckdb"))
        html = path if path.suffix.lower() in (".html", ".htm") else html_from_store(path)
    png = Path(args.out) if args.out else html.with_suffix(".png")
    start = time.perf_counter()
    width, height = render(html, png, args.width)
    print(json.dumps({"html": str(html), "png": str(png), "width": width, "height": height,
                      "render_s": round(time.perf_counter() - start, 2),
                      "rendered_at": datetime.now(UTC).isoformat(timespec="seconds")}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
