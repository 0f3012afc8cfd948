"""Fuzz suite for the router's pools: the same hostile inputs as ingest, the same reasons, nothing unlisted.

A pool folder goes through ingest's rule set, so every case must get exactly the reason ingest
gives it; JSONL pools and query files with a lone surrogate, NUL or over-long lines are rejects
or one-line errors, never tracebacks; an empty description is routed and flagged; a duplicate id
is an error naming both places. Each case runs under a timeout (a FIFO must not hang).
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from hostile_inputs import (
    CASES,
    MAX_BYTES,
    MB,
    QUERY_FILES,
    add_folder_hazards,
    build_tree,
    good,
    permission_denied,
    write,
)

from skill_assets.lib.corpus.sources import SourceSpec
from skill_assets.lib.corpus.ingest import ingest_sources
from skill_assets.lib.retrieval.pools import EMPTY_DESCRIPTION, PoolError, load_pool
from skill_assets.router.cli import RouteInputError, read_queries
from skill_assets.router.cli import main as route_main

pytestmark = pytest.mark.timeout(600)


def reasons(load, root: Path) -> dict[str, str]:
    out = {Path(s.source).relative_to(root).as_posix(): "raw" for s in load.skills}
    for r in load.rejected:
        out[Path(r.source).relative_to(root).as_posix()] = r.code
    return out


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_hostile_file_gets_ingests_reason(case, tmp_path):
    root = tmp_path / "pool"
    case.build(root / "bad", tmp_path / "outside.md")
    write(root / "fine" / "SKILL.md", good("fine"))
    load = load_pool(root, max_file_bytes=MAX_BYTES)
    assert reasons(load, root) == {"bad/SKILL.md": case.reason, "fine/SKILL.md": "raw"}
    assert [s.id for s in load.skills] == ["fine"]


def test_pool_and_ingest_agree_on_a_whole_hostile_tree(tmp_path, monkeypatch):
    root, work = tmp_path / "pool", tmp_path / "work"
    work.mkdir()
    expected = {**build_tree(root, tmp_path / "outside.md"), **add_folder_hazards(root)}
    with permission_denied(monkeypatch, root / "locked"):
        load = load_pool(root, max_file_bytes=MAX_BYTES)
        ingested = ingest_sources([SourceSpec("s", "dir", str(root))], work, max_bytes=MAX_BYTES)
    assert reasons(load, root) == expected  # every file and skipped folder listed, none unlisted
    from_ingest = {r["path"]: "raw" for r in ingested.raw_skills} | {r["path"]: r["reason"] for r in ingested.rejects}
    assert from_ingest == expected


def test_empty_description_is_routed_and_flagged(tmp_path, caplog):
    root = tmp_path / "pool"
    write(root / "terse" / "SKILL.md", "---\nname: terse\n---\nBody that says what the skill does.\n")
    write(root / "full" / "SKILL.md", good("full"))
    caplog.set_level(logging.WARNING)
    load = load_pool(root)
    by_id = {s.id: s for s in load.skills}
    assert set(by_id) == {"terse", "full"} and not load.rejected
    assert by_id["terse"].flags == (EMPTY_DESCRIPTION,) and by_id["full"].flags == ()
    assert "1 pool skill(s) have an empty description" in caplog.text and "terse" in caplog.text
    jsonl = tmp_path / "pool.jsonl"
    jsonl.write_text(json.dumps({"id": "t", "name": "terse", "description": "", "body": "does it"}) + "\n")
    [skill] = load_pool(jsonl).skills
    assert skill.flags == (EMPTY_DESCRIPTION,) and skill.description == ""


def test_duplicate_id_is_an_error_naming_both(tmp_path):
    jsonl = tmp_path / "pool.jsonl"
    line = json.dumps({"id": "same", "name": "a", "description": "d", "body": "b"})
    jsonl.write_text(line + "\n" + json.dumps({"id": "other", "name": "o", "description": "d"}) + "\n" + line + "\n")
    with pytest.raises(PoolError, match=r"duplicate skill id 'same': line 1 and line 3"):
        load_pool(jsonl)
    root = tmp_path / "dir"
    write(root / "x" / "SKILL.md", good("upper"))
    write(root / "x" / "skill.md", good("lower"))
    with pytest.raises(PoolError, match=r"duplicate skill id 'x': .*x/SKILL\.md and .*x/skill\.md"):
        load_pool(root)


def test_jsonl_pool_lines_with_hostile_text_are_rejects(tmp_path):
    pool = tmp_path / "pool.jsonl"
    lines = [
        json.dumps({"id": "ok", "name": "ok", "description": "fine", "body": "b"}),
        '{"id": "sur", "name": "\\ud800", "description": "lone surrogate"}',
        json.dumps({"id": "nul", "name": "n", "description": "d", "body": "a\x00b"}),
        json.dumps({"id": "big", "name": "b", "description": "d", "body": "x" * 5000}),
        "[" * 100_000,
        '{"id": "tab\tin raw string"}',
    ]
    pool.write_bytes(("\n".join(lines) + "\n").encode() + b'{"id": "bad-utf8", "name": "\xff"}\n')
    load = load_pool(pool, max_file_bytes=4000)
    assert [s.id for s in load.skills] == ["ok"]
    assert [(r.source.rsplit(":", 1)[1], r.code) for r in load.rejected] == [
        ("2", "invalid_text"), ("3", "binary"), ("4", "too_large"), ("5", "too_large"), ("6", "invalid_json"),
        ("7", "not_utf8")]


def test_fifo_pool_file_is_refused_not_opened(tmp_path):
    fifo = tmp_path / "pool.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        load_pool(fifo)


def test_route_cli_errors_are_one_line(tmp_path, capsys):
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"id": "a", "name": "a", "description": "d", "body": "b"}) + "\n")
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "q1", "query": "fine"}\n{"id": "q2", "query": "\\udc80 lone"}\n')
    rc = route_main(["route", "--pool", str(pool), "--queries", str(queries), "--out", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and f"{queries}:2" in err and "surrogate" in err
    pool.write_text(pool.read_text() * 2)
    rc = route_main(["route", "--pool", str(pool), "--query", "x"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "duplicate skill id 'a': line 1 and line 2" in err


def test_the_route_table_keeps_each_row_one_short_line(tmp_path, capsys):
    """Issue 31 item 13: a 900 KB skill name was printed whole and a newline in a folder name broke the table.
    (A 900 KB front matter is now refused unparsed: 90 KB, under the front-matter cap, is the long name here.)"""
    pool = tmp_path / "pool"
    write(pool / "line\nbreak" / "SKILL.md", "---\nname: tidy\ndescription: tidy the docker compose file\n---\nbody\n")
    write(pool / "huge" / "SKILL.md", "---\nname: " + "n" * 90_000 + "\ndescription: docker compose help\n---\nbody\n")
    rc = route_main(["route", "--pool", str(pool), "--query", "docker compose", "--cache-dir", str(tmp_path / "c"),
                     "--top-k", "2"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0 and len(out) == 4  # header, rule, two rows
    assert all(len(line) < 200 for line in out) and any("line\\nbreak" in line for line in out)


@pytest.mark.parametrize("where", ["a_folder", "proc", "fifo_queries"])
def test_route_names_an_unusable_out_or_queries_path_in_one_line(where, tmp_path, capsys):
    """Issue 31 item 10: --out at a folder or under /proc gave tracebacks, --queries at a FIFO 'does not exist'."""
    pool = tmp_path / "pool"
    write(pool / "one" / "SKILL.md", good("one"))
    queries = write(tmp_path / "q.jsonl", '{"id": "1", "query": "docker"}\n')
    out = tmp_path / "run.jsonl"
    if where == "a_folder":
        out.mkdir()
    elif where == "proc":
        out = Path("/proc/x.jsonl")
    else:
        queries = tmp_path / "fifo"
        os.mkfifo(queries)
    rc = route_main(["route", "--pool", str(pool), "--queries", str(queries), "--out", str(out),
                     "--cache-dir", str(tmp_path / "c")])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("skill-assets route: error:")]
    assert rc == 2 and len(errors) == 1 and "Traceback" not in err
    assert {"a_folder": "is a folder", "proc": "cannot write there", "fifo_queries": "not a regular file"}[where] \
        in errors[0]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", sorted(QUERY_FILES))
def test_a_generated_hostile_queries_file_is_read_or_refused_in_one_line(case, tmp_path):
    """1 MB query files (``QUERY_FILES`` in bench/hostile_texts.py) through ``route --queries``' reader: the
    queries, or one short line naming the file; a lone surrogate is written as the bytes it would be."""
    path = write(tmp_path / "q.jsonl", QUERY_FILES[case](MB).encode("utf-8", "surrogatepass"))
    try:
        queries = read_queries(path)
    except RouteInputError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc) and len(str(exc)) < 500
    else:
        assert queries and all(set(q) == {"id", "query"} and q["query"].strip() for q in queries)


def test_route_refuses_a_query_line_with_a_too_long_number_in_one_line(tmp_path, capsys):
    """json builds an int from its digits and Python refuses more than 4,300: a ValueError traceback before."""
    pool = tmp_path / "pool"
    write(pool / "one" / "SKILL.md", good("one"))
    queries = write(tmp_path / "q.jsonl", '{"id": ' + "1" * 5_000 + ', "query": "docker"}\n')
    rc = route_main(["route", "--pool", str(pool), "--queries", str(queries), "--out", str(tmp_path / "run.jsonl"),
                     "--cache-dir", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    [line] = [line for line in err.splitlines() if line.startswith("skill-assets route: error:")]
    assert f"{queries}:1: invalid JSON (a number of more than 4300 digits)" in line
