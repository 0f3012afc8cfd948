"""One `skill-assets route --query` over the shared corpus with a warm cache: wall time of a fresh process, and where
it goes (issue 34, "Fast CLI": target ≤ 3 s on a quiet 2-core machine, first start included).

    .venv/bin/python bench/cli_route.py [--runs 5] [--cache-dir DIR] [--no-results-doc]

First one untimed `route` warms the index cache for the pool (the shared corpus beside the repository; encoding
whatever the cache misses, and writing the pool's manifest), then ``--runs`` fresh processes, one query each
(English and Chinese in turn), are timed from spawn to exit. Each run's own log gives the pool read, the index
load and the request (which loads the request encoders: torch, sentence-transformers and the tuned MiniLM, USE);
the rest of the wall is the interpreter, the imports before the first log line and the router's construction.
One more run under ``python -X importtime`` says which imports the seconds go to (each package's cumulative time
where it is first imported, so a package imported inside another counts in both). The load average is recorded
before and after: other jobs on the cores slow every phase. Ends with ONE JSON line and writes its RESULTS.md
section.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from results_doc import write_section
from shared_corpus import CORPUS

REPO = Path(__file__).resolve().parents[1]
TARGET_S = 3.0
QUERIES = ("my docker compose containers cannot reach each other", "把几个 PDF 文件合并成一个",
           "write unit tests for a python function", "帮我写一份周报", "deploy a static site to github pages")
#: what ``skill-assets route`` logs about each phase (``router/cli.py``)
PHASES = {"pool_s": re.compile(r"^pool read in ([\d.]+)s \((\d+) files parsed"),
          "index_s": re.compile(r"^indexed in ([\d.]+)s \((\d+) cached, (\d+) encoded\)"),
          "route_s": re.compile(r"; routed in ([\d.]+)s$")}
#: the packages whose import a warm route pays for, or should not
PACKAGES = ("torch", "sentence_transformers", "transformers", "sklearn", "bm25s", "numba", "lightgbm",
            "duckdb", "polars", "skill_assets.router.cli")


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def route_command(pool: Path, cache: Path, query: str) -> list[str]:
    return [sys.executable, "-m", "skill_assets.cli", "route", "--query", query, "--pool", str(pool), "--cache-dir",
            str(cache)]


def cpu_of_children() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run_once(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds from spawn to exit, CPU seconds it used, stderr); exits naming the failure if the route fails.
    The CPU seconds move less with other jobs' load than the wall does (cores are shared, caches too)."""
    cpu, t0 = cpu_of_children(), time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, timeout=3600)
    wall, cpu = time.perf_counter() - t0, cpu_of_children() - cpu
    if done.returncode != 0:
        print(f"route failed ({done.returncode}): {done.stderr[-2000:]}", file=sys.stderr)
        raise SystemExit(1)
    return wall, cpu, done.stderr


def phases(log: str) -> dict[str, float]:
    """Each phase's seconds from one run's log, and the files parsed and documents encoded (both 0 when warm)."""
    out: dict[str, float] = {}
    for line in log.splitlines():
        for name, pattern in PHASES.items():
            if m := pattern.search(line):
                out[name] = float(m.group(1))
                if name == "pool_s":
                    out["files_parsed"] = int(m.group(2))
                if name == "index_s":
                    out["encoded"] = int(m.group(3))
    if missing := set(PHASES) - set(out):
        raise SystemExit(f"the route log lacks {sorted(missing)}; the CLI's log lines changed")
    return out


def import_seconds(log: str) -> dict[str, float]:
    """Seconds each of ``PACKAGES`` took where it was first imported (``-X importtime``: cumulative µs)."""
    out: dict[str, float] = {}
    for line in log.splitlines():
        if m := re.match(r"^import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)$", line):
            name = m.group(3)
            if name in PACKAGES and name not in out:
                out[name] = round(int(m.group(1)) / 1e6, 2)
    return out


def table(out: dict) -> str:
    p = out["phases_p50_s"]
    imports = ", ".join(f"{k} {v}" for k, v in out["imports_s"].items())
    return "\n".join([
        f"One `skill-assets route --query` over the shared corpus ({out['skills']} skills), warm cache, fresh process "
        f"each run, {out['runs']} runs on {out['cores']} cores; load average {out['load_before']} before, "
        f"{out['load_after']} after (other jobs were running: every phase slows in proportion).",
        "",
        "| | p50 | max | target |",
        "|---|---|---|---|",
        f"| wall, spawn to exit (s) | {out['wall_p50_s']} | {out['wall_max_s']} | ≤ {TARGET_S} |",
        f"| CPU, user + system (s) | {out['cpu_p50_s']} | | |",
        "",
        "Where the p50 run's seconds go (the CLI's own log; the rest is the interpreter, the imports before the first "
        "line and the router's construction):",
        "",
        "| startup and imports | pool read | index load | request (loads the request encoders) |",
        "|---|---|---|---|",
        f"| {p['startup_s']} | {p['pool_s']} | {p['index_s']} | {p['route_s']} |",
        "",
        f"Files parsed on the timed runs: {out['files_parsed']} (the pool manifest); documents encoded: "
        f"{out['encoded']}. Imports, one run under `-X importtime` (s, cumulative where first imported): {imports}.",
    ])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pool", default=str(CORPUS), help="folder of SKILL.md files (default: the shared corpus)")
    ap.add_argument("--cache-dir", default=str(Path("~/.cache/skill-assets/bench-index").expanduser()),
                    help="index cache (default: the benches' shared one; warmed by the first, untimed run)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-results-doc", action="store_true", help="do not write the docs/RESULTS.md section")
    args = ap.parse_args()
    pool, cache = Path(args.pool), Path(args.cache_dir)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    *_, warm_log = run_once(route_command(pool, cache, QUERIES[0]), env)
    skills = int(re.search(r"^pool: (\d+) skills", warm_log, re.M).group(1))
    load_before = load()
    walls, cpus, logs = [], [], []
    for i in range(args.runs):
        wall, cpu, log = run_once(route_command(pool, cache, QUERIES[i % len(QUERIES)]), env)
        walls.append(wall)
        cpus.append(cpu)
        logs.append({**phases(log), "wall_s": wall})
    load_after = load()
    *_, traced = run_once([sys.executable, "-X", "importtime", *route_command(pool, cache, QUERIES[0])[1:]], env)
    p50 = logs[int(np.argsort(walls)[len(walls) // 2])]
    out = {
        "skills": skills, "runs": args.runs, "cores": len(os.sched_getaffinity(0)),
        "wall_p50_s": round(float(np.percentile(walls, 50)), 2), "wall_max_s": round(max(walls), 2),
        "walls_s": [round(w, 2) for w in walls], "cpu_p50_s": round(float(np.percentile(cpus, 50)), 2),
        "phases_p50_s": {"startup_s": round(p50["wall_s"] - p50["pool_s"] - p50["index_s"] - p50["route_s"], 2),
                         "pool_s": p50["pool_s"], "index_s": p50["index_s"], "route_s": p50["route_s"]},
        "files_parsed": sum(r["files_parsed"] for r in logs), "encoded": sum(r["encoded"] for r in logs),
        "imports_s": import_seconds(traced), "load_before": load_before, "load_after": load_after,
    }
    out["meets"] = out["wall_p50_s"] <= TARGET_S
    if not args.no_results_doc:
        write_section("cli-route", table(out))
    print(json.dumps(out, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
