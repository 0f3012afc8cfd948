import logging
import os
import subprocess
import sys
import textwrap
import time

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from skill_assets.lib.models import model_registry
from skill_assets.lib.common.store import (
    StoreLockedError,
    connect,
    query,
    read_table,
    replace_table,
    table_exists,
    upsert_rows,
)


def _frame():
    return pl.DataFrame({
        "skill_id": ["a/1", "b/2", "c/3"],
        "n": [1, 2, None],
        "score": [0.5, -1.25, 3.0],
        "tags": [["x", "y"], [], None],
        "vec": [[0.1, 0.2], [1.0, -2.0], [3.5, 0.0]],
        "ok": [True, False, True],
    })


def test_replace_and_read_round_trip_with_list_columns(tmp_path):
    db = tmp_path / "nested" / "store.duckdb"  # parent folders are created
    df = _frame()
    assert replace_table(db, "skills", df) == 3
    assert db.exists()
    back = read_table(db, "skills")
    assert back.schema["tags"] == pl.List(pl.String)
    assert back.schema["vec"] == pl.List(pl.Float64)
    assert_frame_equal(back, df)
    # replace really replaces (no append), and a new schema is accepted
    df2 = pl.DataFrame({"skill_id": ["z"], "tags": [["only"]]})
    assert replace_table(db, "skills", df2) == 1
    assert_frame_equal(read_table(db, "skills"), df2)


def test_read_with_where_query_and_table_exists(tmp_path):
    db = tmp_path / "s.duckdb"
    assert not table_exists(db, "skills")
    replace_table(db, "skills", _frame())
    assert table_exists(db, "skills") and not table_exists(db, "other")
    assert read_table(db, "skills", "WHERE score > 0 ORDER BY skill_id")["skill_id"].to_list() == ["a/1", "c/3"]
    out = query(db, "SELECT count(*) AS c FROM skills WHERE len(vec) = ?", [2])
    assert out["c"].to_list() == [3]


def test_upsert_rows_replaces_matching_keys(tmp_path):
    db = tmp_path / "s.duckdb"
    upsert_rows(db, "registry", pl.DataFrame({"part": ["p1", "p2"], "v": [1, 2]}), key="part")
    upsert_rows(db, "registry", pl.DataFrame({"part": ["p2", "p3"], "v": [20, 30]}), key="part")
    got = read_table(db, "registry", "ORDER BY part")
    assert got.to_dict(as_series=False) == {"part": ["p1", "p2", "p3"], "v": [1, 20, 30]}


def test_read_only_on_missing_file_raises(tmp_path):
    missing = tmp_path / "nope" / "missing.duckdb"
    with pytest.raises(FileNotFoundError):
        with connect(missing, read_only=True):
            pass
    with pytest.raises(FileNotFoundError):
        read_table(missing, "t")
    assert not missing.exists() and not missing.parent.exists()


def test_connection_closed_after_use(tmp_path):
    db = tmp_path / "s.duckdb"
    with connect(db) as con:
        con.execute("CREATE TABLE t AS SELECT 1 AS x")
    with pytest.raises(duckdb.ConnectionException):
        con.execute("SELECT 1")


HOLDER = textwrap.dedent("""
    import sys, time, duckdb
    con = duckdb.connect(sys.argv[1])
    con.execute("CREATE OR REPLACE TABLE held AS SELECT 42 AS x")
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    con.close()
""")


def _hold_lock(db, seconds):
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc, time.monotonic()


def test_connect_waits_for_another_process_holding_the_write_lock(tmp_path):
    db = tmp_path / "locked.duckdb"
    proc, locked_at = _hold_lock(db, 1.0)
    try:
        # a short wait gives up with DuckDB's lock error
        with pytest.raises((duckdb.IOException, duckdb.ConnectionException)):
            with connect(db, wait_s=0.1):
                pass
        # the default wait retries until the other process lets go
        with connect(db) as con:
            waited = time.monotonic() - locked_at
            assert con.execute("SELECT x FROM held").fetchone() == (42,)
        assert waited >= 0.8
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_reader_waits_for_writer_process(tmp_path):
    db = tmp_path / "locked.duckdb"
    replace_table(db, "t", pl.DataFrame({"x": [1]}))
    proc, locked_at = _hold_lock(db, 1.0)
    try:
        assert read_table(db, "held")["x"].to_list() == [42]
        assert time.monotonic() - locked_at >= 0.8
    finally:
        proc.wait(timeout=30)


#: holds the store for writing until its stdin is closed
HOLD_UNTIL_TOLD = textwrap.dedent("""
    import sys, duckdb
    con = duckdb.connect(sys.argv[1])
    con.execute("CREATE OR REPLACE TABLE router_fusion AS SELECT 'folder' AS path, NULL::TIMESTAMP AS trained_at")
    print("locked", flush=True)
    sys.stdin.read()
    con.close()
""")


def hold_until_told(db) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD_UNTIL_TOLD, str(db)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_a_locked_store_is_named_with_its_holder_at_once_and_refused_in_one_error(tmp_path, caplog, monkeypatch):
    """Issue 31, finding 9: the router waited 301 s in silence, then raised DuckDB's `Could not set lock`."""
    db = tmp_path / "locked.duckdb"
    monkeypatch.setenv("SKILL_ASSETS_LOCK_WAIT_S", "0.5")
    proc = hold_until_told(db)
    try:
        with caplog.at_level(logging.WARNING, logger="skill_assets.lib.common.store"):
            with pytest.raises(StoreLockedError) as refused:
                model_registry.newest(db, model_registry.FUSION)
        assert isinstance(refused.value, FileNotFoundError) and isinstance(refused.value, duckdb.IOException)
        assert f"PID {proc.pid} (" in str(refused.value) and "HOLD_UNTIL_TOLD" not in str(refused.value)
        assert "-c import sys, duckdb con = duckdb.connect" in str(refused.value)  # its command line, from /proc
        [told] = [r.getMessage() for r in caplog.records]
        assert "waiting" in told and f"PID {proc.pid} (" in told and str(db) in told
    finally:
        proc.kill()
        proc.wait()


def test_a_reader_told_to_wait_gets_in_once_the_holder_lets_go(tmp_path, monkeypatch):
    """The waiting line comes while the reader waits (here it is what makes the holder let go), and the read then
    succeeds: no timing is assumed."""
    db = tmp_path / "locked.duckdb"
    proc = hold_until_told(db)
    told: list[str] = []

    class LetGo(logging.Handler):
        def emit(self, record):
            told.append(record.getMessage())
            proc.stdin.close()

    handler = LetGo(logging.WARNING)
    logging.getLogger("skill_assets.lib.common.store").addHandler(handler)
    monkeypatch.setenv("SKILL_ASSETS_LOCK_WAIT_S", "600")
    try:
        assert model_registry.newest(db, model_registry.FUSION)["path"] == "folder"
        assert len(told) == 1 and f"PID {proc.pid}" in told[0]
        assert proc.wait() == 0
    finally:
        logging.getLogger("skill_assets.lib.common.store").removeHandler(handler)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_route_on_a_locked_store_says_who_holds_it_then_gives_up_in_one_line(tmp_path):
    """`skill-assets route --db STORE` on a store another process writes: the waiting line names the holder,
    and past the wait ($SKILL_ASSETS_LOCK_WAIT_S) one error line, exit 2, no traceback."""
    db = tmp_path / "store.duckdb"
    pool = tmp_path / "pool" / "one"
    pool.mkdir(parents=True)
    (pool / "SKILL.md").write_text("---\nname: one\ndescription: a skill\n---\nbody\n")
    proc = hold_until_told(db)
    try:
        done = subprocess.run([sys.executable, "-m", "skill_assets.router.cli", "route", "--db", str(db),
                               "--pool", str(pool.parent), "--query", "anything", "--cache-dir", str(tmp_path / "c")],
                              capture_output=True, text=True, timeout=600,
                              env=os.environ | {"SKILL_ASSETS_LOCK_WAIT_S": "1"})
    finally:
        proc.kill()
        proc.wait()
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    [error] = [i for i, line in enumerate(lines) if line.startswith("skill-assets route: error:")]
    [waiting] = [i for i, line in enumerate(lines) if "waiting up to 1 s" in line]
    assert waiting < error and all(f"PID {proc.pid} (" in lines[i] for i in (waiting, error)), lines
    assert str(db) in lines[error] and "SKILL_ASSETS_LOCK_WAIT_S" in lines[error]
