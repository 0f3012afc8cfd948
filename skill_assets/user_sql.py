"""Run a user's SQL file against the store with no way to change anything outside a result.

``skill-assets sql`` is documented read-only, and a read-only DuckDB connection is not enough for
that: ``COPY … TO`` writes any file (even over the store), ``INSTALL`` downloads, ``read_text``
reads outside the store, ``ATTACH`` opens other databases. So the connection is opened with
external access disabled, extension autoloading off and its configuration locked (a ``SET`` cannot
undo any of it), and statements other than queries are refused by type before anything runs:
an ``EXPLAIN`` by the type of the statement it explains (``EXPLAIN ANALYZE`` runs it), and
``CALL`` not at all (it only runs table functions, which a ``SELECT * FROM`` reads as well). A
query may still name a table function that changes the connection instead of reading: those are
refused by name (``enable_logging`` to a file, once refused by the sandbox, aborts the process).

A SQL file is untrusted text, so the check is linear in its length and tokenises only where it must:
a statement that names none of the refused functions (in any case) cannot call one, so only a statement
that does is tokenised whole, once, its tokens' byte offsets turned into character offsets at once; an
``EXPLAIN`` finds the statement it explains from the tokens of its first few kilobytes (DuckDB's tokenizer
makes a Python tuple a token: a megabyte-long list took half a second to tokenise before any check). Nothing but a one-line refusal escapes: text that is not
valid UTF-8 (a lone surrogate) is refused before DuckDB sees it, and an error message DuckDB cut
inside a character (one quoting kilobytes of Chinese) is reported as unreadable.
"""
from __future__ import annotations

import re
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

from skill_assets.lib.common import store

#: statement types a query file may hold (``PRAGMA show_tables``, ``DESCRIBE``, ``SUMMARIZE`` parse as SELECT)
ALLOWED = frozenset({duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN})
#: table functions that change the connection (logging, profiling, checkpoints) or run SQL given as a string
CHANGING_FUNCTIONS = frozenset({"enable_logging", "disable_logging", "truncate_duckdb_logs", "enable_profiling",
                                "disable_profiling", "checkpoint", "force_checkpoint", "query",
                                "json_execute_serialized_sql"})
_NAME = re.compile(r'"(?:[^"]|"")*"|\w+')
#: any refused function's name, anywhere in a lower-cased statement: where none occurs, no token can call one
_NAMED = re.compile("|".join(sorted(map(re.escape, CHANGING_FUNCTIONS))))
#: characters of an EXPLAIN's head tokenised to find the statement it explains (the whole text if it is not there)
_EXPLAIN_HEAD = 4096
SANDBOX = {
    "enable_external_access": False,
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
    "allow_community_extensions": False,
    "lock_configuration": True,
}


#: what DuckDB raises on a file: its own errors, and UnicodeDecodeError where it cut a long error message
#: (one quoting 8 KB of the file) inside a character
_DUCKDB_ERRORS = (duckdb.Error, UnicodeDecodeError)


class UserSqlError(ValueError):
    """A SQL file that cannot or may not run; the message is one line."""


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "DuckDB cannot read it (its error message was cut inside a character: a long quote of the file)"
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _tokens(text: str) -> tuple[np.ndarray, list[object]]:
    """``duckdb.tokenize`` as (character offsets, kinds): DuckDB counts UTF-8 bytes, so a comment holding "…" or a
    Chinese literal would shift every later offset (and run past the end of the string). Every offset is
    converted at once from a running count of the characters begun before each byte (decoding all the
    bytes before every token took minutes on a 1 MB file; a Python step per token took seconds)."""
    raw = text.encode("utf-8")
    found = duckdb.tokenize(text)
    starts = np.minimum(np.fromiter((start for start, _ in found), dtype=np.int64, count=len(found)), len(raw))
    lead = (np.frombuffer(raw, dtype=np.uint8) & 0xC0) != 0x80  # the first byte of a character
    begun = np.concatenate(([0], np.cumsum(lead)))  # characters begun before each byte
    inside = np.zeros(len(starts), dtype=bool)  # a start inside a character counts from where that one begins
    within = starts < len(raw)
    inside[within] = ~lead[starts[within]]
    return begun[starts] - inside, [kind for _, kind in found]


def _explained_start(statement: str, offsets: np.ndarray) -> int:
    """The index of the token at which the statement an ``EXPLAIN [(options)] [ANALYZE]`` explains begins
    (``len(offsets)`` if it explains nothing)."""
    i = 1
    if i < len(offsets) and statement[offsets[i]] == "(":
        while i < len(offsets) and statement[offsets[i]] != ")":
            i += 1
        i += 1
    if i < len(offsets) and statement[offsets[i]:offsets[i] + 7].upper().startswith(("ANALYZE", "ANALYSE")):
        i += 1
    return min(i, len(offsets))


def _changing_call(query: str) -> str | None:
    """The refused function ``query`` calls (a name, outside strings, followed by a ``(``), or None."""
    if _NAMED.search(query.lower()) is None:
        return None
    offsets, kinds = _tokens(query)
    points = np.frombuffer(query.encode("utf-32-le"), dtype=np.uint32)
    after = offsets[1:]
    called = np.zeros(len(after), dtype=bool)  # tokens followed by a "(": the only ones that can name a call
    called[after < len(query)] = points[after[after < len(query)]] == ord("(")
    for i in np.flatnonzero(called).tolist():
        if kinds[i] != duckdb.token_type.string_const:
            name = _NAME.match(query, int(offsets[i]), int(after[i]))  # a name ends before the "(" that follows it
            function = name.group().strip('"').lower() if name else ""
            if function in CHANGING_FUNCTIONS:
                return function
    return None


def _explained_type(query: str) -> str | None:
    """The type of the one statement an EXPLAIN ``query`` explains, or None if it explains no single statement.

    The tokens of the head are the whole text's up to the head's last one (which the cut may shorten), so they
    serve where the explained statement begins before that token; a longer option list is tokenised whole."""
    head = query[:_EXPLAIN_HEAD]
    offsets, _ = _tokens(head)
    start = _explained_start(head, offsets)
    if len(head) < len(query) and start >= len(offsets) - 1:
        offsets, _ = _tokens(query)
        start = _explained_start(query, offsets)
    if start == len(offsets):
        return None
    try:
        statements = duckdb.extract_statements(query[int(offsets[start]):])
    except _DUCKDB_ERRORS:
        return None
    return statements[0].type.name if len(statements) == 1 else None


def _refusal(statement: duckdb.Statement) -> str | None:
    """Why ``statement`` may not run (its kind, or a connection-changing function it calls), or None."""
    if statement.type not in ALLOWED:
        return statement.type.name
    query = statement.query
    if (function := _changing_call(query)) is not None:
        return f"a call of {function}()"
    if statement.type == duckdb.StatementType.EXPLAIN and (inner := _explained_type(query)) != "SELECT":
        # the query it explains is the tail of this statement: its calls were among the tokens above
        return f"EXPLAIN of {inner or 'no single query'}"
    return None


def checked_statements(sql: str, where: str) -> list[str]:
    """The statements of ``sql``; UserSqlError if there are none, one does not parse, or one is not a query."""
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: DuckDB's binding raised TypeError on it
        raise UserSqlError(f"{where}: character {exc.start} is not valid UTF-8 ({exc.reason})") from None
    try:
        statements = duckdb.extract_statements(sql)
    except _DUCKDB_ERRORS as exc:
        raise UserSqlError(f"{where}: {_one_line(exc)}") from None
    if not statements:
        raise UserSqlError(f"{where}: holds no SQL statement")
    for i, st in enumerate(statements, 1):
        if (why := _refusal(st)) is not None:
            head = " ".join(st.query.split())[:60]
            raise UserSqlError(f"{where}: statement {i} is {why} ({head!r}): refused — the store is read-only "
                               "here; only queries (SELECT, WITH, EXPLAIN of a query) run")
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
    except _DUCKDB_ERRORS as exc:
        raise UserSqlError(f"{where}: {_one_line(exc)}") from None
