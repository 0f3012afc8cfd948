"""The curated benchmark joins the external partitions when its pool is configured, and scores like one.

Partitions are read when the definitions are imported, so each case runs the real CLI in a fresh
process with its own environment and DuckDB file. The scored benchmark is the curated-layout fixture
(``tests/data/curated``: copies, an identical mirror, four directions) listed in a benchmarks file.
"""
import os
import subprocess
import sys
from pathlib import Path

import polars as pl

from skill_assets.lib.common import store

REPO = Path(__file__).resolve().parents[3]
FIXTURE = REPO / "tests" / "data" / "curated"


def _run(args: list[str], env: dict, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", **env})


def test_curated_partition_exists_only_when_its_pool_is_configured(tmp_path):
    show = ["-c", "from skill_assets.defs.evaluation.partitions import external_benchmarks as p; "
                  "print(p.get_partition_keys())"]
    without = _run(show, {"SKILL_ASSETS_CURATED_POOL": ""})
    assert without.returncode == 0, without.stderr
    assert "curated" not in without.stdout and "demo-r3" in without.stdout
    with_pool = _run(show, {"SKILL_ASSETS_CURATED_POOL": str(FIXTURE / "pool")})
    assert "'curated'" in with_pool.stdout


def test_curated_layout_materializes_with_groups_directions_and_intervals(tmp_path):
    benchmarks = tmp_path / "benchmarks.yaml"
    benchmarks.write_text(f"fixture: {{path: {FIXTURE}, layout: curated, pool: {FIXTURE / 'pool'}}}\n")
    db = tmp_path / "store.duckdb"
    done = _run(["-m", "skill_assets.cli", "materialize", "--select", "key:external_*", "--partition", "fixture"],
                {"SKILL_ASSETS_EXTERNAL_BENCHMARKS": str(benchmarks), "SKILL_ASSETS_DB": str(db),
                 "DAGSTER_HOME": str(tmp_path / "home"), "SKILL_ASSETS_CURATED_POOL": ""})
    assert done.returncode == 0, done.stderr[-3000:]
    queries = store.read_table(db, "external_queries", "ORDER BY query_id")
    assert queries["query_id"].to_list() == ["t-001", "t-002", "t-003", "t-004"]  # the test split only
    first = queries.row(0, named=True)
    assert first["layout"] == "curated" and first["k"] == 1 and first["direction"] == "en2en"
    assert first["skill_groups"] == [["alpha__skills/skills/docker-networking", "beta__mirror/docker-net-fork",
                                      "beta__mirror/skills/docker-networking"]]
    assert queries["k"].to_list() == [1, 2, 1, 1]
    runs = store.read_table(db, "external_runs")
    systems = set(runs["system"])
    # the pipeline's systems, the router's signals and their RRF pairs (no fusion model in this store), and the
    # router a user of this store gets (the shipped one)
    assert {"bm25", "embedder:base", "multilingual", "rrf:bm25+multilingual",
            "router:default"} <= systems
    assert all(s in ("bm25", "multilingual", "gloss", "embedder:base", "router:default") or s.startswith("rrf:")
               for s in systems), systems
    assert runs["skill_id"].n_unique() == 10  # the whole pool
    metrics = store.read_table(db, "external_metrics")
    assert set(metrics["slice"]) == {"all", "k=1", "k=2", "direction=en2en", "direction=en2zh", "direction=zh2zh"}
    hit = metrics.filter((pl.col("system") == "embedder:base") & (pl.col("slice") == "all")
                         & (pl.col("metric") == "hit@1")).row(0, named=True)
    assert hit["n_queries"] == 4 and hit["ci_low"] <= hit["value"] <= hit["ci_high"]
    board = store.query(db, (REPO / "sql" / "external_leaderboard.sql").read_text())
    assert set(board["benchmark"]) == {"fixture"} and set(board["queries"]) == {4}
    assert board.height == len(systems)  # one row per system
    assert board["ndcg@10 95% CI"][0].startswith("[")


def test_a_ground_truth_id_missing_from_the_pool_fails_the_partition_naming_it(tmp_path):
    curated = tmp_path / "curated"
    curated.mkdir()
    lines = (FIXTURE / "requests.jsonl").read_text(encoding="utf-8").replace(
        "alpha__skills/skills/nginx-proxy", "alpha__skills/skills/nginx-gone")
    (curated / "requests.jsonl").write_text(lines, encoding="utf-8")
    benchmarks = tmp_path / "benchmarks.yaml"
    benchmarks.write_text(f"fixture: {{path: {curated}, layout: curated, pool: {FIXTURE / 'pool'}}}\n")
    done = _run(["-m", "skill_assets.cli", "materialize", "--select", "key:external_skills", "--select",
                 "key:external_queries", "--partition", "fixture"],
                {"SKILL_ASSETS_EXTERNAL_BENCHMARKS": str(benchmarks), "SKILL_ASSETS_DB": str(tmp_path / "s.duckdb"),
                 "DAGSTER_HOME": str(tmp_path / "home"), "SKILL_ASSETS_CURATED_POOL": ""})
    assert done.returncode != 0
    assert "alpha__skills/skills/nginx-gone (in t-002)" in done.stdout + done.stderr
