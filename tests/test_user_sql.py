"""The read-only SQL check on hostile files (issue 31, finding 12); the command's own refusals are in
tests/test_cli.py.

Every hostile case is a 1 MB file: the check returns the statements or refuses in one line, nothing
else escapes, and its work is linear in the file. No wall-clock time is asserted: each case runs
under a 120 s timeout, which the old check overran by far (it decoded the text before every token
again: 0.15 s at 72 KB, 21 s at 1.34 MB; a 200 KB list of "é," took 16 s, so 1 MB takes minutes).
"""
from __future__ import annotations

import pytest
from hostile_inputs import MB, SQL, repeated, sql_list

from skill_assets.user_sql import UserSqlError, checked_statements


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", sorted(SQL))
def test_hostile_sql_is_checked_or_refused_in_one_line(case):
    sql = SQL[case](MB)
    try:
        statements = checked_statements(sql, "q.sql")
    except UserSqlError as exc:
        assert str(exc).startswith("q.sql: ") and len(str(exc).splitlines()) == 1
    else:
        assert statements and all(isinstance(s, str) for s in statements)


#: name -> (a 1 MB file whose last statement calls a connection-changing function, that function)
LATE_CALLS = {
    "after_accented_list": lambda: ("SELECT " + sql_list("é", MB) + ", enable_logging()", "enable_logging"),
    "after_chinese_comment": lambda: ("-- " + repeated("哪个… ", MB) + "\nSELECT 1 FROM checkpoint()", "checkpoint"),
    "explained_after_literals": lambda: ("EXPLAIN ANALYZE SELECT " + sql_list("'路由'", MB)
                                         + ", x FROM query('SELECT 1')", "query"),
    "after_statements": lambda: ("SELECT '…'; " * 80_000 + 'SELECT "Enable_Logging"()', "enable_logging"),
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", sorted(LATE_CALLS))
def test_a_changing_call_after_a_megabyte_of_text_is_refused(case):
    """The call's offset is counted past a megabyte of multi-byte characters, in one pass."""
    sql, call = LATE_CALLS[case]()
    with pytest.raises(UserSqlError, match=rf"a call of {call}\(\)"):
        checked_statements(sql, "q.sql")


@pytest.mark.parametrize("sql, verdict", [
    ("SELECT 'enable_logging(' AS s, '路由' AS t", None),
    ("SELECT \"enable_logging\"()", "a call of enable_logging()"),
    ("EXPLAIN SELECT 1", None),
    ("explain analyse SELECT 1", None),
    ("EXPLAIN (FORMAT json) SELECT '…' AS x", None),
    ("EXPLAIN (FORMAT json) SELECT query('SELECT 1')", "a call of query()"),
    ("EXPLAIN ANALYZE CREATE TABLE u AS SELECT 1", "EXPLAIN of CREATE"),
    ("EXPLAIN SELECT 1; EXPLAIN INSERT INTO t VALUES (1)", "statement 2 is EXPLAIN of INSERT"),
    ("-- …\nEXPLAIN /* 哪个 */ SELECT * FROM range(3)", None),
    ("SELECT 1; CALL duckdb_tables()", "statement 2 is CALL"),
    ("EXPLAIN /* " + "…" * 5000 + " */ SELECT 1", None),
    ("EXPLAIN /* " + "…" * 5000 + " */ INSERT INTO t VALUES (1)", "EXPLAIN of INSERT"),
    ("EXPLAIN (FORMAT json) " + "/* x */ " * 600 + "DELETE FROM t", "EXPLAIN of DELETE"),
    ("EXPLAIN " + " " * 4090 + "ANALYZE DROP TABLE t", "EXPLAIN of DROP"),
    ("SELECT CHECKPOINT AS c, \"QUERY\" AS q FROM range(1)", None),
])
def test_verdicts_on_ordinary_files(sql, verdict):
    if verdict is None:
        assert len(checked_statements(sql, "q.sql")) == len(sql.split(";"))
    else:
        with pytest.raises(UserSqlError, match=verdict.replace("(", r"\(").replace(")", r"\)")):
            checked_statements(sql, "q.sql")


def test_text_that_is_not_utf8_is_refused():
    """A lone surrogate made DuckDB's binding raise TypeError instead of a one-line refusal."""
    with pytest.raises(UserSqlError, match="character 8 is not valid UTF-8"):
        checked_statements("SELECT '\ud800'", "q.sql")


@pytest.mark.parametrize("sql", ["SELECT '" + "é" * 10_000, "SELECT 1 /* " + "…" * 10_000], ids=["string", "comment"])
def test_a_parser_error_quoting_kilobytes_of_non_ascii_is_a_one_line_refusal(sql):
    """DuckDB cuts its message after about 8 KB, inside a character: UnicodeDecodeError escaped the check."""
    with pytest.raises(UserSqlError) as refused:
        checked_statements(sql, "q.sql")
    assert len(str(refused.value).splitlines()) == 1


def test_only_a_statement_naming_a_refused_function_is_tokenised_and_an_explain_only_in_its_head(monkeypatch):
    """Tokenising makes a Python tuple of each token: a megabyte-long list took half a second before any check ran.
    A statement that names no refused function cannot call one, and an EXPLAIN's explained statement is found in
    its first few kilobytes."""
    import duckdb

    tokenised: list[int] = []
    real = duckdb.tokenize
    monkeypatch.setattr(duckdb, "tokenize", lambda text: tokenised.append(len(text)) or real(text))
    checked_statements("SELECT " + sql_list("é", MB), "q.sql")
    assert tokenised == []
    checked_statements("EXPLAIN (FORMAT json) SELECT " + sql_list("é", MB), "q.sql")
    assert tokenised and max(tokenised) <= 4096
    with pytest.raises(UserSqlError, match=r"a call of query\(\)"):
        checked_statements("SELECT " + sql_list("é", MB) + ", x FROM query('SELECT 1')", "q.sql")
    assert max(tokenised) > MB
