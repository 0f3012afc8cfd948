"""DuckDB access for a single-writer database shared by many processes.

DuckDB lets one process write *or* many processes read a file, never both at once. Every
connection here is therefore short-lived (open, do one thing, close) and opening retries with
back-off while another process holds the lock, so Dagster's multiprocess steps, asset checks
and a user's SQL session take turns instead of failing. A wait is never silent: its first failed
attempt logs one line naming the holder (DuckDB's error names its PID; its command line is read
from ``/proc``), and past the wait (``LOCK_WAIT_S``, or ``$SKILL_ASSETS_LOCK_WAIT_S``) it raises
``StoreLockedError``, whose message says the same.
"""
from __future__ import annotations

import logging
import os
import random
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import polars as pl

#: the store a user gets: this file under the working directory, unless ``$SKILL_ASSETS_DB`` names another
DEFAULT_DB = "data/skill_assets.duckdb"
DB_ENV = "SKILL_ASSETS_DB"
LOCK_WAIT_S = 300.0
#: seconds to wait for another process's lock instead of ``LOCK_WAIT_S``
LOCK_WAIT_ENV = "SKILL_ASSETS_LOCK_WAIT_S"
#: DuckDB's buffer pool otherwise grows to 80% of RAM; past this it spills to disk instead
MEMORY_LIMIT = os.environ.get("SKILL_ASSETS_DUCKDB_MEMORY", "1GB")


def resolve_db(db_path: str | Path | None = None) -> Path:
    """``db_path``, else ``$SKILL_ASSETS_DB``, else ``DEFAULT_DB``: the one rule for which store is meant."""
    return Path(db_path or os.environ.get(DB_ENV) or DEFAULT_DB).expanduser()


log = logging.getLogger(__name__)


class StoreLockedError(FileNotFoundError, duckdb.IOException):
    """The store stayed locked by another process for the whole wait; the message names the holder.

    A ``FileNotFoundError`` (the store cannot be had, as when it is missing: callers that report a
    missing store in one line report this one too) and DuckDB's ``IOException`` (what it replaces).
    """


def lock_wait_s() -> float:
    """``$SKILL_ASSETS_LOCK_WAIT_S`` when it is a number of seconds, else ``LOCK_WAIT_S``."""
    try:
        return max(0.0, float(os.environ[LOCK_WAIT_ENV]))
    except (KeyError, ValueError):
        return LOCK_WAIT_S


def _is_lock_error(exc: Exception) -> bool:
    text = str(exc).lower()
    return "lock" in text or "being used by another process" in text


def lock_holder(exc: Exception) -> str:
    """Who holds the lock, from DuckDB's error ("Conflicting lock is held in EXE (PID N)"): ``PID N (command
    line)``, the command read from ``/proc`` where it can be, else DuckDB's program path; else 'another process'."""
    match = re.search(r"held in (.*?) \(PID (\d+)\)", str(exc))
    if match is None:
        match = re.search(r"\(PID (\d+)\)", str(exc))
        return f"PID {match.group(1)}" if match else "another process"
    program, pid = match.groups()
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        command = ""
    command = " ".join(command.split()) or program  # one line, whatever the command holds
    return f"PID {pid} ({command[:200] + ' ...' if len(command) > 200 else command})"


@contextmanager
def connect(path: str | Path, read_only: bool = False, wait_s: float | None = None,
            memory_limit: str = MEMORY_LIMIT, config: dict | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A short-lived connection (retried while another process holds the file); ``config`` adds DuckDB settings.

    While another process holds the file it waits ``wait_s`` (default: ``lock_wait_s()``), saying so
    in one log line at the first refusal, then raises ``StoreLockedError`` naming the holder.
    ``lock_configuration`` in ``config`` is applied last, so this module's own settings still take.
    """
    wait_s = lock_wait_s() if wait_s is None else wait_s
    config = dict(config or {})
    lock = config.pop("lock_configuration", False)
    path = Path(path)
    if read_only and not path.exists():
        raise FileNotFoundError(f"DuckDB store {path} does not exist yet: materialize the assets first")
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_s
    delay, told = 0.05, False
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only, config={"memory_limit": memory_limit, **config})
            break
        except (duckdb.IOException, duckdb.ConnectionException) as exc:
            if not _is_lock_error(exc):
                raise
            if time.monotonic() > deadline:
                raise StoreLockedError(f"DuckDB store {path} is locked by {lock_holder(exc)}: gave up after waiting "
                                       f"{wait_s:g} s (${LOCK_WAIT_ENV} sets the wait)") from exc
            if not told:
                log.warning("DuckDB store %s is locked by %s; waiting up to %g s for it (%s sets the wait)",
                            path, lock_holder(exc), wait_s, "$" + LOCK_WAIT_ENV)
                told = True
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 2.0)
    try:
        con.execute("SET enable_progress_bar = false")  # library queries must not write to the caller's stdout
        if lock:
            con.execute("SET lock_configuration = true")
        yield con
    finally:
        con.close()


def replace_table(path: str | Path, name: str, frame: pl.DataFrame) -> int:
    """Atomically replace table ``name`` with ``frame`` (one transaction); returns the row count."""
    with connect(path) as con:
        con.register("_incoming", frame.to_arrow())
        con.execute("BEGIN")
        con.execute(f'CREATE OR REPLACE TABLE "{name}" AS SELECT * FROM _incoming')
        con.execute("COMMIT")
        con.unregister("_incoming")
    return frame.height


def read_table(path: str | Path, name: str, where: str = "") -> pl.DataFrame:
    with connect(path, read_only=True) as con:
        return con.execute(f'SELECT * FROM "{name}" {where}').pl()


def query(path: str | Path, sql: str, params: list | None = None) -> pl.DataFrame:
    with connect(path, read_only=True) as con:
        return con.execute(sql, params or []).pl()


def table_exists(path: str | Path, name: str) -> bool:
    if not Path(path).exists():
        return False
    with connect(path, read_only=True) as con:
        return bool(con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name]).fetchone()[0])


def upsert_rows(path: str | Path, name: str, frame: pl.DataFrame, key: str) -> None:
    """Replace the rows of ``name`` whose ``key`` matches ``frame``'s (a registry keyed by partition).

    A registry outlives code versions: columns the table lacks are added (older rows read NULL there)."""
    with connect(path) as con:
        con.register("_incoming", frame.to_arrow())
        con.execute("BEGIN")
        con.execute(f'CREATE TABLE IF NOT EXISTS "{name}" AS SELECT * FROM _incoming LIMIT 0')
        have = {r[0] for r in con.execute(f'DESCRIBE "{name}"').fetchall()}
        for column, kind in con.execute("SELECT column_name, column_type FROM (DESCRIBE _incoming)").fetchall():
            if column not in have:
                con.execute(f'ALTER TABLE "{name}" ADD COLUMN "{column}" {kind}')
        con.execute(f'DELETE FROM "{name}" WHERE "{key}" IN (SELECT "{key}" FROM _incoming)')
        con.execute(f'INSERT INTO "{name}" BY NAME SELECT * FROM _incoming')
        con.execute("COMMIT")
        con.unregister("_incoming")


def replace_partition(path: str | Path, name: str, frame: pl.DataFrame, key: str, value: str) -> None:
    """Replace the rows of ``name`` with ``key = value`` by ``frame`` in one transaction (a partitioned write).

    Unlike ``upsert_rows`` this also clears the partition when ``frame`` is empty.
    """
    with connect(path) as con:
        con.register("_incoming", frame.to_arrow())
        con.execute("BEGIN")
        con.execute(f'CREATE TABLE IF NOT EXISTS "{name}" AS SELECT * FROM _incoming LIMIT 0')
        con.execute(f'DELETE FROM "{name}" WHERE "{key}" = ?', [value])
        con.execute(f'INSERT INTO "{name}" SELECT * FROM _incoming')
        con.execute("COMMIT")
        con.unregister("_incoming")


def insert_frame(con: duckdb.DuckDBPyConnection, name: str, frame: pl.DataFrame) -> None:
    """Append ``frame`` to table ``name`` on an open connection, creating it with ``frame``'s columns if needed."""
    con.register("_incoming", frame.to_arrow())
    con.execute(f'CREATE TABLE IF NOT EXISTS "{name}" AS SELECT * FROM _incoming LIMIT 0')
    con.execute(f'INSERT INTO "{name}" SELECT * FROM _incoming')
    con.unregister("_incoming")


def append_rows(path: str | Path, name: str, frame: pl.DataFrame) -> None:
    """Append ``frame`` to table ``name`` in a connection of its own."""
    with connect(path) as con:
        insert_frame(con, name, frame)


def promote_table(path: str | Path, staging: str, name: str) -> None:
    """Replace table ``name`` by ``staging`` in one transaction (readers never see a half-built table)."""
    with connect(path) as con:
        con.execute("BEGIN")
        con.execute(f'DROP TABLE IF EXISTS "{name}"')
        con.execute(f'ALTER TABLE "{staging}" RENAME TO "{name}"')
        con.execute("COMMIT")


def drop_table(path: str | Path, name: str) -> None:
    with connect(path) as con:
        con.execute(f'DROP TABLE IF EXISTS "{name}"')
