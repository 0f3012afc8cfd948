"""``skill-assets sql`` and ``skill-assets materialize`` as a script or an adversary uses them (issue 17).

sql: nothing but queries runs, nothing outside the store is read or written, every failure is one
line and a non-zero status. materialize: the README's own ``--select 'key:skills+'`` plans whole
multi-assets, a bad selection is one line with the valid form, runs of killed processes are
marked failed at the next start, and a run whose every LLM request FAILED exits 1 with a summary.
"""
from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from generation_inputs import single_skill_combinations, synthetic_skills, write_generation_inputs

from skill_assets.cli import main
from skill_assets.lib.common.processes import process_token
from skill_assets.materialize import HOST_TAG, PROCESS_TAG, all_failed_summary, mark_stale_runs, plan_runs

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def db(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "s.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE t AS SELECT 1 AS a")
    monkeypatch.setenv("SKILL_ASSETS_DB", str(path))
    return path


def run_sql_text(tmp_path: Path, sql: str, capsys, form: str = "file") -> tuple[int, str, str]:
    """``skill-assets sql`` on ``sql`` given as a file, or (``form="-c"``) on the command line."""
    if form == "-c":
        rc = main(["sql", "-c", sql])
    else:
        f = tmp_path / "q.sql"
        f.write_text(sql)
        rc = main(["sql", str(f)])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.parametrize("form", ["file", "-c"])
@pytest.mark.parametrize("sql, code, words", [
    ("COPY (SELECT 'x') TO '{db}'", 2, "COPY"),
    ("COPY t TO '{tmp}/out.csv'", 2, "COPY"),
    ("INSTALL httpfs", 2, "refused"),
    ("ATTACH '{tmp}/other.duckdb' AS o", 2, "ATTACH"),
    ("SET enable_external_access = true; SELECT 1", 2, "SET"),
    ("EXPORT DATABASE '{tmp}/exp'", 2, "refused"),
    ("CREATE TABLE u (a INT)", 2, "CREATE"),
    ("EXPLAIN ANALYZE CREATE TEMP TABLE u AS SELECT 1", 2, "EXPLAIN of CREATE"),
    ("explain analyse INSERT INTO t VALUES (2)", 2, "EXPLAIN of INSERT"),
    ("CALL duckdb_tables()", 2, "CALL"),
    ("SELECT * FROM query('FROM enable_logging()')", 2, "query()"),
    ("SELECT * FROM read_text('/etc/hostname')", 1, "disabled by configuration"),
    ("SELECT * FROM '{tmp}/x.csv'", 1, "disabled by configuration"),
    ("SELEC 1", 2, "syntax error"),
    ("", 2, "no SQL statement"),
    ("-- only a comment\n", 2, "no SQL statement"),
    ("SELECT * FROM missing_table", 1, "missing_table"),
])
def test_sql_refuses_and_fails_in_one_line(sql, code, words, form, db, tmp_path, capsys):
    """A file and ``-c`` pass the same checks: each refusal and failure is the same one line either way."""
    (tmp_path / "x.csv").write_text("a\n1\n")
    before = hashlib.sha256(db.read_bytes()).hexdigest()  # a digest: pytest diffs two byte strings for hours
    rc, out, err = run_sql_text(tmp_path, sql.format(db=db, tmp=tmp_path), capsys, form)
    assert rc == code and words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "exp").exists()
    assert not (tmp_path / "other.duckdb").exists()


@pytest.mark.parametrize("sql", [
    "CALL enable_logging(storage='file', storage_path='{tmp}/logs')",
    "FROM enable_logging(storage='file', storage_path='{tmp}/logs'); SELECT * FROM t",
])
def test_sql_refuses_connection_changing_functions_instead_of_aborting(sql, db, tmp_path):
    """File logging refused by the sandbox once killed the process with SIGABRT (issue 21, finding 8)."""
    (tmp_path / "q.sql").write_text(sql.format(tmp=tmp_path))
    proc = subprocess.run([sys.executable, "-m", "skill_assets.cli", "sql", str(tmp_path / "q.sql")],
                          capture_output=True, text=True, timeout=1800, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2 and "enable_logging" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "logs").exists()


def test_sql_with_non_ascii_text_before_a_statement_runs(db, tmp_path, capsys):
    """DuckDB's tokenizer counts bytes: a "…" comment or a Chinese literal once shifted every later offset."""
    rc, out, err = run_sql_text(tmp_path, "-- which system… 哪个系统\nSELECT '路由' AS label, a AS system FROM t", capsys)
    assert rc == 0 and "路由" in out and not err


def test_sql_runs_queries(db, tmp_path, capsys):
    rc, out, err = run_sql_text(tmp_path, "SELECT 41 AS x; SELECT a + 1 AS answer FROM t", capsys)
    assert rc == 0 and "answer" in out and "2" in out and not err
    f = tmp_path / "missing.sql"
    assert main(["sql", str(f)]) == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1


def test_sql_command_runs_queries_on_a_real_store(db, tmp_path, capsys):
    """``-c "SELECT …"``: a quick question needs no file (issue 34), and reads the DuckDB store itself."""
    rc, out, err = run_sql_text(tmp_path, "-- a note first\nSELECT 41 AS x; SELECT a + 1 AS answer FROM t", capsys,
                                "-c")
    assert rc == 0 and "answer" in out and "2" in out and not err
    rc, out, err = run_sql_text(tmp_path, "CREATE TABLE u AS SELECT 1", capsys, "-c")
    assert rc == 2 and "-c: statement 1 is CREATE" in err and len(err.strip().splitlines()) == 1 and not out
    with duckdb.connect(str(db), read_only=True) as con:
        assert [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()] == ["t"]


@pytest.mark.parametrize("argv, words", [
    (["sql"], "name a SQL file or give the SQL with -c"),
    (["sql", "q.sql", "-c", "SELECT 1"], "not both"),
])
def test_sql_takes_exactly_one_of_a_file_or_command(argv, words, db, capsys):
    """Neither or both is one line saying what to give, not argparse's usage block."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1 and "usage" not in err


@pytest.mark.parametrize("selection, keys", [
    ("key:review_verdicts key:label_agreement", {"review_verdicts", "label_agreement"}),
    ("key:benchmark_queries key:benchmark_release", {"benchmark_queries", "benchmark_release"}),
])
def test_readme_space_separated_selection_selects_each_key(selection, keys):
    """The README's two-key form was rejected as an invalid selection (issue 21, finding 9)."""
    assert {k.to_user_string() for ks, _ in plan_runs([selection]) for k in ks} == keys


def test_readme_selection_takes_whole_multi_assets():
    runs = plan_runs(["key:skills+"])
    first = {k.to_user_string() for k in runs[0][0]}
    assert {"skills", "skill_duplicates", "skill_embeddings"} <= first


@pytest.mark.parametrize("selection", ["key:nope", "key:skills+ ((("])
def test_bad_selection_is_one_line_with_the_valid_form(selection, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SKILL_ASSETS_DB", str(tmp_path / "s.duckdb"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert main(["materialize", "--select", selection]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--select 'key:skills+'" in err and "Traceback" not in err


def test_runs_of_killed_processes_are_marked_failed(tmp_path):
    from dagster._core.storage.dagster_run import DagsterRun

    dead = subprocess.run([sys.executable, "-c", "from skill_assets.lib.common.processes import process_token;"
                           "print(process_token())"], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}).stdout.strip()
    host = socket.gethostname()
    with dg.DagsterInstance.local_temp(str(tmp_path)) as instance:
        runs = {}
        for name, token in (("dead", dead), ("alive", process_token())):
            run = DagsterRun(job_name="__ASSET_JOB", run_id=str(uuid.uuid4()), status=dg.DagsterRunStatus.STARTED,
                             tags={PROCESS_TAG: token, HOST_TAG: host})
            instance.add_run(run)
            runs[name] = run.run_id
        assert mark_stale_runs(instance) == [runs["dead"]]
        assert instance.get_run_by_id(runs["dead"]).status == dg.DagsterRunStatus.FAILURE
        assert instance.get_run_by_id(runs["alive"]).status == dg.DagsterRunStatus.STARTED


def test_all_failed_summary_names_the_asset_and_reasons():
    @dg.asset
    def llm_records():
        return dg.MaterializeResult(metadata={"records": 3, "decisions/FAILED": 3, "failed/request": 2,
                                              "failed/circuit_open": 1, "stop_reason": "circuit_open: 8 attempts"})

    @dg.asset
    def half():
        return dg.MaterializeResult(metadata={"records": 3, "decisions/FAILED": 1})

    result = dg.materialize([llm_records, half])
    [line] = all_failed_summary(result, "en2en")
    assert line.startswith("llm_records [en2en]: all 3 records FAILED (circuit_open: 1, request: 2")


def test_materialize_exits_1_when_every_request_failed(tmp_path, fault_server):
    """The whole CLI against an endpoint that refuses every request: non-zero exit, a summary, no 'done'."""
    db = tmp_path / "s.duckdb"
    write_generation_inputs(db, synthetic_skills(2), single_skill_combinations(2))
    fault_server.default = "401"
    env = {**os.environ, "SKILL_ASSETS_DB": str(db), "DAGSTER_HOME": str(tmp_path / "home"),
           "SKILL_ASSETS_LLM_BASE_URL": fault_server.url, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "skill_assets.cli", "materialize", "--select", "key:llm_records",
                           "--partition", "en2en"], env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "llm_records [en2en]: all 2 records FAILED" in proc.stderr and "done" not in proc.stdout
