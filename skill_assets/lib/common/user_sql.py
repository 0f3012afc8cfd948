"""Run a user's SQL file against the store with no way to change anything outside a result.

``skill-assets sql`` is documented read-only, and a read-only DuckDB connection is not enough for
that: ``COPY … TO`` writes any file (even over the store), ``INSTALL`` downloads, ``read_text``
reads outside the store, ``ATTACH`` opens other databases. So the connection is opened with
external access disabled, extension autoloading off and its configuration locked (a ``SET`` cannot
undo any of it), and statements other than queries are refused by type before anything runs.
"""
from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

from skill_assets.lib.common import store

#: statement types a query file may hold (``PRAGMA show_tables``, ``DESCRIBE``, ``SUMMARIZE`` parse as SELECT)
ALLOWED = frozenset({duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN, duckdb.StatementType.CALL})
SANDBOX = {
    "enable_external_access": False,
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
    "allow_community_extensions": False,
    "lock_configuration": True,
}


class UserSqlError(ValueError):
    """A SQL file that cannot or may not run; the message is one line."""


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def checked_statements(sql: str, where: str) -> list[str]:
    """The statements of ``sql``; UserSqlError if there are none, one does not parse, or one is not a query."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise UserSqlError(f"{where}: {_one_line(exc)}") from None
    if not statements:
        raise UserSqlError(f"{where}: holds no SQL statement")
    for i, st in enumerate(statements, 1):
        if st.type not in ALLOWED:
            kind = st.type.name
            head = " ".join(st.query.split())[:60]
            raise UserSqlError(f"{where}: statement {i} is {kind} ({head!r}): refused — the store is read-only "
                               "here; only queries (SELECT, WITH, EXPLAIN, CALL) run")
    return [st.query for st in statements]


def run_statements(db: str | Path, statements: list[str], where: str) -> pl.DataFrame:
    """The result of the last of ``statements`` (from ``checked_statements``), run on a sandboxed read-only connection."""
    path = Path(db)
    if not path.is_file():
        raise UserSqlError(f"DuckDB store {path} does not exist yet: materialize the assets first")
    try:
        with store.connect(path, read_only=True, config=SANDBOX) as con:
            for statement in statements[:-1]:
                con.execute(statement)
            return con.execute(statements[-1]).pl()
    except duckdb.Error as exc:
        raise UserSqlError(f"{where}: {_one_line(exc)}") from None
