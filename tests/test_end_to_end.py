"""Materialize the whole graph on the demo corpus with the real local LLM server and models.

Runs the CLI in a subprocess so the resources read SKILL_ASSETS_DB / DAGSTER_HOME from a clean
environment, exactly as `make demo` does, then checks row counts and invariants in the DuckDB file.
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
import yaml

from skill_assets.lib.common.processes import stop_process_group

#: the hang guard is progress, not total time: the run fails only when nothing under its work folder (store,
#: logs, the LLM server's log, its own output) has changed for this long. Under load a demo takes an hour
#: and more (measured: past 3,000 s at load average 8 on 2 cores); a fixed limit would fail a slow machine.
IDLE_S = 1200
#: ... so pytest-timeout's fixed per-test limit does not apply here
pytestmark = pytest.mark.timeout(0)

REPO = Path(__file__).resolve().parent.parent
DEMO_CONFIG = REPO / "skill_assets" / "demo" / "demo_run.yaml"
TABLES = ["raw_skills", "ingest_rejects", "skills", "skill_duplicates", "skill_embeddings", "cluster_sweep", "skill_clusters",
          "skill_pools", "skill_combinations", "llm_records", "query_audit", "skip_taxonomy", "benchmark_queries",
          "embedder", "reranker", "router_fusion", "retrieval_runs", "benchmark_metrics", "benchmark_report"]


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("e2e")
    config = yaml.safe_load(DEMO_CONFIG.read_text())
    # fewer generator calls than the demo, still every direction and k in both pools
    config["ops"]["skill_combinations"]["config"] = {"train_counts": {"1": 3, "2": 1, "3": 1},
                                                     "test_counts": {"1": 1, "2": 1, "3": 1}}
    config["ops"]["llm_records"]["config"].update({"prompt_body_chars": 200, "max_tokens": 160})
    (work / "run.yaml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "SKILL_ASSETS_DB": str(work / "store.duckdb"), "DAGSTER_HOME": str(work / "dagster_home")}
    env.pop("SKILL_ASSETS_LLM_BASE_URL", None)
    env.pop("SKILL_ASSETS_SOURCES", None)
    returncode, output = run_while_progressing([sys.executable, "-m", "skill_assets.cli", "materialize", "--config",
                                                str(work / "run.yaml")], env, work)
    assert returncode == 0, output[-8000:]
    return work / "store.duckdb"


def last_change(folder: Path) -> float:
    """Newest modification time of anything under ``folder`` (files vanish while a run works: skip those)."""
    newest = folder.stat().st_mtime
    for path in folder.rglob("*"):
        try:
            newest = max(newest, path.stat().st_mtime)
        except OSError:
            continue
    return newest


def run_while_progressing(cmd: list[str], env: dict, work: Path, idle_s: float = IDLE_S) -> tuple[int, str]:
    """(exit status, output) of ``cmd``, stopped (its whole process group) only after ``idle_s`` without any
    change under ``work``: a hang guard that a slow machine never trips."""
    out = work / "materialize.out"
    with out.open("w") as fh:
        proc = subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        while proc.poll() is None:
            if time.time() - last_change(work) > idle_s:
                stop_process_group(proc)
                pytest.fail(f"materialize made no progress for {idle_s} s: " + out.read_text()[-4000:])
            time.sleep(5)
    return proc.returncode, out.read_text()


def count(con, sql: str) -> int:
    return con.execute(sql).fetchone()[0]


def test_every_table_is_filled(demo_store):
    with duckdb.connect(str(demo_store), read_only=True) as con:
        for table in TABLES:
            assert count(con, f"SELECT count(*) FROM {table}") > 0, table


def test_corpus_reconciles_and_dedups_the_planted_copies(demo_store):
    with duckdb.connect(str(demo_store), read_only=True) as con:
        raw = count(con, "SELECT count(*) FROM raw_skills")
        kept = count(con, "SELECT count(*) FROM skills")
        dups = count(con, "SELECT count(*) FROM skill_duplicates")
        assert raw == kept + dups
        # the demo corpus carries two deliberately broken files to show the quarantine
        reasons = sorted(r[0] for r in con.execute("SELECT reason FROM ingest_rejects").fetchall())
        assert reasons == ["invalid_yaml", "missing_description"]
        layers = dict(con.execute("SELECT layer, count(*) FROM skill_duplicates GROUP BY 1").fetchall())
        assert layers.get("near_duplicate", 0) >= 3 and layers.get("name_and_content", 0) >= 3
        assert count(con, "SELECT count(*) FROM skills WHERE language = 'zh'") >= 8


def test_generation_accounts_for_every_combination(demo_store):
    with duckdb.connect(str(demo_store), read_only=True) as con:
        assert count(con, "SELECT count(*) FROM skill_combinations") == count(con, "SELECT count(*) FROM llm_records")
        assert count(con, "SELECT count(*) FROM llm_records WHERE decision NOT IN ('WRITE','SKIP','INVALID','FAILED')") == 0
        assert count(con, "SELECT count(*) FROM llm_records WHERE decision <> 'FAILED' AND raw_response IS NULL") == 0
        assert count(con, "SELECT count(*) FROM query_audit") == count(con, "SELECT count(*) FROM llm_records WHERE decision = 'WRITE'")
        assert count(con, "SELECT count(*) FROM skip_taxonomy") == count(con, "SELECT count(*) FROM llm_records WHERE decision = 'SKIP'")


def test_benchmark_invariants(demo_store):
    with duckdb.connect(str(demo_store), read_only=True) as con:
        assert count(con, "SELECT count(*) FROM (SELECT skill_id FROM skill_pools GROUP BY 1 HAVING count(DISTINCT pool) > 1)") == 0
        assert count(con, """SELECT count(*) FROM benchmark_queries q, unnest(q.skill_ids) u(s)
                             JOIN skill_pools p ON p.skill_id = u.s WHERE q.split = 'test' AND p.pool <> 'test'""") == 0
        assert count(con, "SELECT count(*) FROM benchmark_queries WHERE split = 'train'") > 0
        systems = {r[0] for r in con.execute("SELECT DISTINCT system FROM benchmark_metrics").fetchall()}
        assert {"bm25", "embedder:base", "embedder:r3", "reranker:r3", "multilingual",
                "rrf:bm25+multilingual", "fusion", "fusion+reranker:r3"} <= systems
        values = [r[0] for r in con.execute("SELECT value FROM benchmark_metrics WHERE metric <> 'set_compat'").fetchall()]
        assert all(0.0 <= v <= 1.0 for v in values)


def test_models_and_report_are_files(demo_store):
    from sentence_transformers import CrossEncoder, SentenceTransformer

    with duckdb.connect(str(demo_store), read_only=True) as con:
        emb_path = con.execute("SELECT path FROM embedder WHERE variant = 'r3'").fetchone()[0]
        rr_path = con.execute("SELECT path FROM reranker WHERE variant = 'r3'").fetchone()[0]
        report, plot = con.execute("SELECT markdown, plot_path FROM benchmark_report").fetchone()
    assert SentenceTransformer(emb_path).encode(["route me"]).shape[1] == 384
    assert CrossEncoder(rr_path).predict([("route me", "a skill")]).shape == (1,)
    assert "hit@1" in report and Path(plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the demo's few test queries: every table shows its intervals and says it cannot rank systems
    assert "cannot rank systems" in report and "## What each model saw" in report
    card = json.loads((Path(emb_path) / "skill_assets_card.json").read_text())
    assert card["training_data"]["curated"].startswith("not in this corpus")  # the demo trains on its own skills
    reports = demo_store.parent / "reports"
    assert "<table>" in (reports / "benchmark_report.html").read_text()
    assert any((reports / "runs").glob("*.trec"))
    [release] = (demo_store.parent / "releases").iterdir()
    assert (release / "README.md").exists() and (release / "queries" / "test.parquet").exists()


def test_sql_files_run_against_the_store(demo_store):
    env = {**os.environ, "SKILL_ASSETS_DB": str(demo_store)}
    for sql in sorted((REPO / "sql").glob("*.sql")):
        proc = subprocess.run([sys.executable, "-m", "skill_assets.cli", "sql", str(sql)], env=env,
                              capture_output=True, text=True, timeout=1800)  # a hang guard only
        assert proc.returncode == 0, f"{sql.name}: {proc.stderr[-2000:]}"
        assert "┌" in proc.stdout or "shape" in proc.stdout or proc.stdout.strip(), sql.name


def test_the_demo_leaves_the_shipped_router_and_says_why(demo_store):
    """The demo fits its fusion and reranker on a handful of generated requests: both stay in the store, neither
    becomes the router a user gets, and the route log says why in one line each."""
    from skill_assets.lib.retrieval.defaults import shipped_router
    from skill_assets.router import Router

    with duckdb.connect(str(demo_store), read_only=True) as con:
        adopted, reason, rr_adopted, rr_reason = con.execute(
            "SELECT adopted, adoption_reason, reranker_adopted, reranker_reason FROM router_fusion").fetchone()
    assert not adopted and "needs 100" in reason
    assert not rr_adopted and "needs 100" in rr_reason
    said: list[str] = []
    router = Router.from_store(db_path=demo_store, log=said.append)
    assert router.engine.fusion.linear == shipped_router()[0].linear and router.engine.reranker_path is None
    assert any("fusion" in m and "needs 100" in m for m in said) and any("reranker" in m for m in said)


def test_the_hand_written_demo_benchmark_ranks_every_system_with_the_default_router(demo_store):
    with duckdb.connect(str(demo_store), read_only=True) as con:
        rows = con.execute("""SELECT system, n_queries, ci_low, ci_high FROM external_metrics
                              WHERE benchmark = 'demo-handwritten' AND slice = 'all' AND metric = 'ndcg@10'""").fetchall()
    systems = {r[0]: r for r in rows}
    assert {"router:default", "fusion", "embedder:base"} <= set(systems)
    assert all(n >= 60 and lo <= hi for _, n, lo, hi in rows)
