"""No part of the API key reaches a table, a log, the Dagster run storage or stderr (issues 17.5 and 21.4).

An endpoint that answers 401 and echoes the key at several offsets of its message — around
character 300, where the error text used to be cut *before* it was redacted, leaving
``token: sk-test-SE`` — must leave no run of the key of 6 characters or more anywhere.
"""
from __future__ import annotations

import json
import logging

import dagster as dg
import duckdb
import openai
import pytest
from generation_inputs import single_skill_combinations, synthetic_skills, write_generation_inputs

from skill_assets.lib.generation.fault_server import synthetic_items
from skill_assets.lib.generation.llm_client import GenerationLimits, SamplingParams, redact, redacted_excerpt
from skill_assets.lib.generation.records import generate, summarize
from skill_assets.lib.generation.response_cache import CACHE_TABLE, ResponseCache

KEY = "sk-test-SEcretKey-0123456789abcdefghij"
OFFSETS = [0, 150, 200, 215, 220, 225, 230, 235, 240, 250, 290, 300, 1000]


def leaked(text: str) -> bool:
    """Any run of at least 6 characters of the key (a cut at any place leaves a prefix of one of its tails)."""
    return any(KEY[i : i + 6] in text for i in range(len(KEY) - 5))


def test_redact_replaces_the_key_and_any_prefix_of_it():
    assert redact(f"a {KEY} b", KEY) == "a [REDACTED] b"
    assert redact(f"cut here: {KEY[:10]}", KEY) == "cut here: [REDACTED]"
    assert redact(f"{KEY}{KEY}x", KEY) == "[REDACTED][REDACTED]x"
    assert redact("sk-te is too short to be the key", KEY) == "sk-te is too short to be the key"
    for cut in range(280, 320):
        text = "x" * 290 + KEY + " tail"
        assert not leaked(redacted_excerpt(text, KEY, cut))


def test_redact_replaces_any_piece_of_the_key_not_only_its_prefixes():
    """A tail or a middle piece of 6+ characters used to pass untouched (issue 21, finding 4)."""
    assert redact(f"echo: ...{KEY[-14:]}", KEY) == "echo: ...[REDACTED]"
    for start in range(len(KEY) - 5):
        for end in range(start + 6, len(KEY) + 1):
            assert not leaked(redact(f"<{KEY[start:end]}>", KEY)), (start, end)
    assert redact(f"{KEY[20:]} {KEY[:9]}", KEY) == "[REDACTED] [REDACTED]"
    assert redact("sk-te", "sk-te") == "[REDACTED]"  # a key shorter than the run length is replaced whole


def test_key_echoed_at_any_offset_leaks_nowhere(fault_server, tmp_path, caplog, capfd):
    items = synthetic_items(len(OFFSETS))
    for item, offset in zip(items, OFFSETS):
        fault_server.script(item.messages, [f"401_echo_key:{offset}"] * 3)
    caplog.set_level(logging.DEBUG)
    lines: list[str] = []
    client = openai.AsyncOpenAI(base_url=fault_server.url, api_key=KEY, timeout=60, max_retries=0)
    db = tmp_path / "s.duckdb"
    out = generate(items, client, SamplingParams(), ResponseCache(db),
                   GenerationLimits(concurrency=2, max_consecutive_failures=len(OFFSETS) + 1),
                   journal_path=tmp_path / "j" / "x.jsonl", log=lines.append)
    assert f"Bearer {KEY}" in fault_server.auth_headers  # the key really went out
    echoed = [r for r in out.rows if "[REDACTED]" in (r["error"] or "")]
    assert len(echoed) >= 5  # where the key starts within the 300 kept characters; later ones are cut off whole
    captured = capfd.readouterr()
    everything = (json.dumps(out.rows, default=str) + "\n".join(lines) + caplog.text + json.dumps(summarize(out))
                  + captured.out + captured.err)
    with duckdb.connect(str(db)) as con:
        everything += json.dumps(con.execute(f"SELECT * FROM {CACHE_TABLE}").fetchall(), default=str)
    assert not leaked(everything)


@pytest.mark.parametrize("fault", ["401_echo_key:225",  # the key spans character 300 of the stored error
                                   "401_echo_piece:-14,", "401_echo_piece:9,24"])  # a tail, a middle piece
def test_llm_records_asset_keeps_the_key_out_of_the_run_storage(fault, fault_server, tmp_path, monkeypatch, capfd):
    from skill_assets.defs.generation.assets import llm_records
    from skill_assets.defs.resources import DuckDBStore, LLMEndpoint

    monkeypatch.setenv("SKILL_ASSETS_LLM_API_KEY", KEY)
    db = tmp_path / "s.duckdb"
    write_generation_inputs(db, synthetic_skills(3), single_skill_combinations(3))
    fault_server.default = fault
    home = tmp_path / "dagster_home"
    home.mkdir()
    with dg.DagsterInstance.local_temp(str(home)) as instance:
        result = dg.materialize([llm_records], partition_key="en2en", instance=instance,
                                resources={"store": DuckDBStore(database=str(db)),
                                           "llm": LLMEndpoint(base_url=fault_server.url, model="fault-model",
                                                              timeout_s=2.0, max_retries=0)})
        assert result.success
        events = instance.all_logs(result.run_id)
        storage = json.dumps([str(e) for e in events])
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT * FROM llm_records").fetchall()
    assert {r[0] for r in rows} == {"en2en-0", "en2en-1", "en2en-2"}
    files = "".join(p.read_bytes().decode(errors="replace") for p in home.rglob("*") if p.is_file())  # incl. SQLite
    captured = capfd.readouterr()
    assert "[REDACTED]" in json.dumps(rows, default=str)
    assert not leaked(json.dumps(rows, default=str) + storage + files + captured.out + captured.err)
