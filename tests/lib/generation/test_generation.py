"""Reliability of LLM generation over real HTTP against a scripted fault server.

What must hold whatever the endpoint does: every record ends WRITE, SKIP, INVALID or FAILED with
a reason; no record twice; a prompt that was answered is never paid for again (warm rerun, crash
in the commit, killed process); failures and budget stops are completed by the next run; a dead
endpoint stops the run within seconds; the API key appears nowhere but in the request header.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import openai
import pytest

from skill_assets.defs.resources import LOCAL_SERVER
from skill_assets.lib.common.processes import live_stats
from skill_assets.lib.generation.fault_server import FaultServer, prompt_hash, synthetic_items
from skill_assets.lib.generation.llm_client import GenerationLimits, LLMResponse, SamplingParams, Usage, request_key
from skill_assets.lib.generation.local_llm_server import free_port
from skill_assets.lib.generation.pricing import ModelPrice
from skill_assets.lib.generation.records import DECISIONS, generate, summarize
from skill_assets.lib.generation.response_cache import CACHE_TABLE, ResponseCache, ResponseJournal

REPO = Path(__file__).resolve().parents[3]
SENTINEL = "sk-SENTINEL-do-not-leak-0123456789abcdef"
PARAMS = SamplingParams()


def client_for(url: str, timeout: float = 60.0, max_retries: int = 2, key: str = "not-needed") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=url, api_key=key, timeout=timeout, max_retries=max_retries)


def hashes(items) -> dict[str, str]:
    """record id -> the fault server's prompt hash."""
    return {it.record_id: prompt_hash(it.messages) for it in items}


def assert_all_decided(rows: list[dict], items) -> None:
    assert [r["record_id"] for r in rows] == [it.record_id for it in items]  # one row each, in order
    for r in rows:
        assert r["decision"] in DECISIONS
        if r["decision"] in ("INVALID", "FAILED"):
            assert r["error"], r
        if r["decision"] == "WRITE":
            assert r["query"]
        if r["decision"] == "SKIP":
            assert r["rationale"]


def cache_keys(db: Path) -> set[str]:
    with duckdb.connect(str(db)) as con:
        return {k for (k,) in con.execute(f"SELECT request_key FROM {CACHE_TABLE}").fetchall()}


FAULTS = ["429:0.2", "500", "slow:30", "malformed", "truncated", "drop", "invalid", "500_echo_auth"]


def test_every_record_ends_decided_and_rerun_sends_only_the_failed(fault_server, tmp_path):
    items = synthetic_items(24)
    for i, it in enumerate(items[:16]):
        fault = FAULTS[i % len(FAULTS)]
        # the first 8 recover on retry (except "malformed": a 200 with a broken body is not retried by
        # the client, the record fails and the next run asks again); the next 8 fail every attempt
        fault_server.script(it.messages, [fault] if i < 8 else [fault, fault])
    db = tmp_path / "s.duckdb"
    out = generate(items, client_for(fault_server.url, timeout=5, max_retries=1), PARAMS, ResponseCache(db),
                   GenerationLimits(concurrency=4, batch_size=3, max_consecutive_failures=50),
                   journal_path=tmp_path / "journal" / "t.jsonl")
    assert_all_decided(out.rows, items)
    by_id = {r["record_id"]: r for r in out.rows}
    h = hashes(items)
    assert by_id["r000000"]["decision"] in ("WRITE", "SKIP") and by_id["r000000"]["retries"] == 1  # 429 then ok
    assert by_id["r000006"]["decision"] == "INVALID"  # answered, unreadable: paid for, kept
    failed = {r["record_id"] for r in out.rows if r["decision"] == "FAILED"}
    assert by_id["r000014"]["decision"] == "INVALID"  # "invalid" is an answer, not a failure
    assert failed == {it.record_id for it in items[8:16]} - {"r000014"} | {"r000003"}
    assert all(by_id[f]["error"].startswith("request:") for f in failed)
    assert {r["request_key"] for r in out.rows if r["decision"] != "FAILED"} == cache_keys(db)
    for it in items:  # an answer the client received was never requested again in this run
        if by_id[it.record_id]["decision"] != "FAILED" and it.record_id not in ("r000002",):  # slow: late write
            assert fault_server.completed[h[it.record_id]] <= 1
    assert not (tmp_path / "journal" / "t.jsonl").exists()  # committed, then discarded

    fault_server.reset_counts()
    fault_server.clear_scripts()  # the endpoint has recovered
    again = generate(items, client_for(fault_server.url, timeout=5, max_retries=1), PARAMS, ResponseCache(db),
                     GenerationLimits(concurrency=4, batch_size=3), journal_path=tmp_path / "journal" / "t.jsonl")
    assert_all_decided(again.rows, items)
    assert set(fault_server.requests) == {h[f] for f in failed}
    assert all(n == 1 for n in fault_server.requests.values())
    assert all(r["decision"] != "FAILED" for r in again.rows)
    assert {r["record_id"] for r in again.rows if not r["cached"]} == failed


def test_warm_rerun_makes_zero_requests(fault_server, tmp_path):
    items = synthetic_items(30)
    db = tmp_path / "s.duckdb"
    first = generate(items, client_for(fault_server.url), PARAMS, ResponseCache(db), GenerationLimits(concurrency=4))
    assert first.requests_sent == 30 and fault_server.total_requests == 30
    fault_server.reset_counts()
    second = generate(items, client_for(fault_server.url), PARAMS, ResponseCache(db), GenerationLimits(concurrency=4))
    assert fault_server.total_requests == 0 and second.requests_sent == 0
    assert all(r["cached"] for r in second.rows)
    assert [r["decision"] for r in second.rows] == [r["decision"] for r in first.rows]


def test_a_poisoned_cached_answer_is_an_invalid_record_on_every_run(fault_server, tmp_path):
    """An answer that made the JSON parser recurse (3,000 nested ``[``) failed the partition; being cached, every
    rerun failed again without a request. Now it is an INVALID record with its reason, run after run."""
    items = synthetic_items(4)
    fault_server.script(items[1].messages, ["poisoned"])
    db = tmp_path / "s.duckdb"
    first = generate(items, client_for(fault_server.url), PARAMS, ResponseCache(db), GenerationLimits(concurrency=2))
    fault_server.reset_counts()
    again = generate(items, client_for(fault_server.url), PARAMS, ResponseCache(db), GenerationLimits(concurrency=2))
    assert fault_server.total_requests == 0 and again.requests_sent == 0
    for out in (first, again):
        assert_all_decided(out.rows, items)
        poisoned = out.rows[1]
        assert poisoned["decision"] == "INVALID" and poisoned["raw_response"].endswith("[" * 100)
        assert [r["decision"] for r in out.rows[::2]] == [r["decision"] for r in first.rows[::2]] != ["INVALID"] * 2


def test_identical_prompts_are_sent_once(fault_server, tmp_path):
    items = synthetic_items(3)
    twin = synthetic_items(1)[0]
    twin.record_id = "twin"
    out = generate(items + [twin], client_for(fault_server.url), PARAMS, ResponseCache(tmp_path / "s.duckdb"))
    assert fault_server.total_requests == 3
    assert out.rows[0]["raw_response"] == out.rows[3]["raw_response"]


def test_retry_after_is_honoured(fault_server, tmp_path):
    items = synthetic_items(1)
    fault_server.script(items[0].messages, ["429:1"])
    started = time.monotonic()
    out = generate(items, client_for(fault_server.url, max_retries=2), PARAMS, ResponseCache(tmp_path / "s.duckdb"))
    row = out.rows[0]
    assert row["decision"] in ("WRITE", "SKIP") and row["retries"] == 1
    arrivals = fault_server.arrivals[prompt_hash(items[0].messages)]
    assert len(arrivals) == 2 and arrivals[1] - arrivals[0] >= 0.95  # waited as told, not the 0.5 s default
    assert time.monotonic() - started >= 0.95


def test_circuit_breaker_stops_quickly_against_a_dead_endpoint(tmp_path):
    items = synthetic_items(40)
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    out = generate(items, client_for(dead, max_retries=4), PARAMS, ResponseCache(tmp_path / "s.duckdb"),
                   GenerationLimits(concurrency=4, max_consecutive_failures=5), journal_path=tmp_path / "j" / "x.jsonl")
    assert_all_decided(out.rows, items)
    assert all(r["decision"] == "FAILED" for r in out.rows)
    assert sum(r["error"].startswith("circuit_open") for r in out.rows) >= 30
    assert out.stop_reasons and "circuit_open" in out.stop_reasons[0]
    assert out.requests_sent <= 8


def test_circuit_breaker_opens_on_persistent_server_errors(tmp_path):
    with FaultServer(default="500") as fs:
        items = synthetic_items(30)
        out = generate(items, client_for(fs.url, max_retries=3), PARAMS, ResponseCache(tmp_path / "s.duckdb"),
                       GenerationLimits(concurrency=2, max_consecutive_failures=6))
        assert fs.total_requests <= 8
        assert all(r["decision"] == "FAILED" for r in out.rows)
        fs.default = "ok"  # endpoint healthy again: the rerun completes everything
        again = generate(items, client_for(fs.url), PARAMS, ResponseCache(tmp_path / "s.duckdb"))
        assert all(r["decision"] in ("WRITE", "SKIP") for r in again.rows)


def test_bad_api_key_stops_the_run_after_a_few_requests(tmp_path):
    with FaultServer(default="401") as fs:
        out = generate(synthetic_items(40), client_for(fs.url), PARAMS, ResponseCache(tmp_path / "s.duckdb"),
                       GenerationLimits(concurrency=2, max_consecutive_failures=4))
        assert fs.total_requests <= 6  # not 40: a 401 is not retried, but it opens the circuit
        assert all(r["decision"] == "FAILED" for r in out.rows)
        assert any("AuthenticationError" in r["error"] for r in out.rows)
        assert sum(r["error"].startswith("circuit_open") for r in out.rows) >= 30


def test_token_budget_stops_cleanly_and_rerun_completes(fault_server, tmp_path):
    items = synthetic_items(20)
    db = tmp_path / "s.duckdb"
    out = generate(items, client_for(fault_server.url), PARAMS, ResponseCache(db),
                   GenerationLimits(concurrency=4, max_total_tokens=2_000))
    assert_all_decided(out.rows, items)
    spent = sum(r["prompt_tokens"] + r["completion_tokens"] for r in out.rows)
    assert 0 < spent <= 2_000
    unsent = [r for r in out.rows if r["decision"] == "FAILED"]
    assert unsent and all(r["error"].startswith("budget") for r in unsent)
    assert fault_server.total_requests == 20 - len(unsent)
    assert summarize(out)["failed/budget"] == len(unsent)
    fault_server.reset_counts()
    again = generate(items, client_for(fault_server.url), PARAMS, ResponseCache(db), GenerationLimits(concurrency=4))
    assert fault_server.total_requests == len(unsent)
    assert all(r["decision"] in ("WRITE", "SKIP") for r in again.rows)


def test_cost_budget_and_price_table(fault_server, tmp_path):
    items = synthetic_items(20)
    prices = {"fault-model": ModelPrice(input_per_m=1000.0, output_per_m=4000.0)}
    out = generate(items, client_for(fault_server.url), PARAMS, ResponseCache(tmp_path / "s.duckdb"),
                   GenerationLimits(concurrency=4, max_total_cost_usd=4.0), prices)
    answered = [r for r in out.rows if r["decision"] != "FAILED"]
    assert answered and all(r["cost_usd"] > 0 for r in answered)
    assert abs(answered[0]["cost_usd"] - (answered[0]["prompt_tokens"] * 1000 + answered[0]["completion_tokens"] * 4000)
               / 1e6) < 1e-9
    assert sum(r["cost_usd"] for r in answered) <= 4.0
    assert any(r["error"].startswith("budget") for r in out.rows)
    stats = summarize(out)
    assert stats["cost_usd_run"] == pytest.approx(sum(r["cost_usd"] for r in answered), abs=1e-5)
    assert stats["unpriced_models"] == "none"


class _CrashingCache(ResponseCache):
    """Commits ``ok_batches`` batches, then raises: a crash in the middle of the run."""

    def __init__(self, db: Path, ok_batches: int) -> None:
        super().__init__(db)
        self.ok_batches = ok_batches

    def put(self, batch: list[LLMResponse]) -> None:
        if not batch:
            return
        if self.ok_batches <= 0:
            raise RuntimeError("simulated crash while committing")
        self.ok_batches -= 1
        super().put(batch)


def test_crash_in_commit_loses_nothing_and_rerun_sends_only_the_missing(fault_server, tmp_path):
    items = synthetic_items(60)
    db = tmp_path / "s.duckdb"
    journal = tmp_path / "journal" / "x.jsonl"
    with pytest.raises(RuntimeError, match="simulated crash"):
        generate(items, client_for(fault_server.url), PARAMS, _CrashingCache(db, ok_batches=2),
                 GenerationLimits(concurrency=4, batch_size=5), journal_path=journal)
    first = set(fault_server.requests)
    assert 10 < len(first) < 60 and len(cache_keys(db)) == 10
    assert len(ResponseJournal.read(journal)) >= len(first) - 0  # every received answer is in the journal
    out = generate(items, client_for(fault_server.url), PARAMS, ResponseCache(db),
                   GenerationLimits(concurrency=4, batch_size=5), journal_path=journal)
    assert out.recovered_from_journal >= len(first)
    assert max(fault_server.requests.values()) == 1  # 0 completed records requested twice
    assert set(fault_server.requests) == set(hashes(items).values())
    assert all(r["decision"] in ("WRITE", "SKIP") for r in out.rows)


def test_a_journal_line_keeps_its_flat_format_both_ways(tmp_path):
    """A journal a killed run left behind is read after an upgrade: a line is one flat object, usage keys among
    the answer's own, written and read exactly so (a torn line and a foreign one are passed over)."""
    line = ('{"key": "k1", "model": "m", "status": "ok", "text": "答", "prompt_tokens": 12, "completion_tokens": 5, '
            '"latency_s": 0.25, "retries": 1, "error": "", "template_version": "v2", "cost_usd": 0.003}')
    old = tmp_path / "old.jsonl"
    old.write_text(line + "\n" + '{"key": "k2", "usage": {}}\n' + line[:40] + "\n", encoding="utf-8")
    (answer,) = ResponseJournal.read(old)
    assert answer == LLMResponse("k1", "m", "ok", "答", Usage(12, 5, 0.25, 1, 0.003), "", "v2")
    journal = ResponseJournal(tmp_path / "new.jsonl")
    journal.append(answer)
    journal.close()
    assert (tmp_path / "new.jsonl").read_text(encoding="utf-8") == line + "\n"


def test_killed_process_loses_at_most_in_flight_requests(tmp_path):
    n, concurrency = 120, 4
    items = synthetic_items(n)
    db = tmp_path / "s.duckdb"
    key_of = {prompt_hash(it.messages): request_key(it.template_version, it.model, PARAMS, it.messages) for it in items}
    with FaultServer(latency_s=0.05) as fs:
        proc = subprocess.Popen([sys.executable, "-m", "skill_assets.lib.generation.fault_server", "generate", "--db", str(db),
                                 "--url", fs.url, "--n", str(n), "--concurrency", str(concurrency)], cwd=REPO)
        deadline = time.monotonic() + 1800  # a hang guard only
        while sum(fs.completed.values()) < 40 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        served_before = {h for h, c in fs.completed.items() if c}
        received = cache_keys(db) if db.exists() else set()
        journal_dir = tmp_path / "llm_journal"
        received |= {r.key for f in journal_dir.glob("*.jsonl") for r in ResponseJournal.read(f)}
        assert 40 <= len(served_before) < n
        fs.reset_counts()
        out = generate(items, client_for(fs.url), PARAMS, ResponseCache(db), GenerationLimits(concurrency=4),
                       journal_path=journal_dir / "synthetic.jsonl")
        rerequested = {key_of[h] for h in fs.requests}
        assert not (rerequested & received)  # 0 answers the client had received were requested twice
        served_twice = {key_of[h] for h in served_before} & rerequested
        assert len(served_twice) <= concurrency  # only what was in flight when the process died
        assert len(received) + len(rerequested) == n
        assert all(r["decision"] in ("WRITE", "SKIP") for r in out.rows)


def test_api_key_never_leaks(fault_server, tmp_path, caplog, monkeypatch):
    monkeypatch.setenv("SKILL_ASSETS_LLM_API_KEY", SENTINEL)
    items = synthetic_items(6)
    fault_server.script(items[0].messages, ["500_echo_auth"])  # recovers on retry
    fault_server.script(items[1].messages, ["500_echo_auth"] * 3)  # fails: the error text echoes the key
    fault_server.script(items[2].messages, ["429:0.1"])
    lines: list[str] = []
    caplog.set_level(logging.DEBUG)
    client = client_for(fault_server.url, max_retries=2, key=os.environ["SKILL_ASSETS_LLM_API_KEY"])
    db = tmp_path / "s.duckdb"
    out = generate(items, client, PARAMS, ResponseCache(db), GenerationLimits(concurrency=2), journal_path=tmp_path /
                   "j" / "x.jsonl", log=lines.append)
    assert f"Bearer {SENTINEL}" in fault_server.auth_headers  # the key was really used
    failed = [r for r in out.rows if r["decision"] == "FAILED"]
    assert failed and "[REDACTED]" in failed[0]["error"]
    everything = json.dumps(out.rows, default=str) + "\n".join(lines) + caplog.text + json.dumps(summarize(out))
    with duckdb.connect(str(db)) as con:
        everything += json.dumps(con.execute(f"SELECT * FROM {CACHE_TABLE}").fetchall(), default=str)
    assert SENTINEL not in everything
    assert "SENTINEL" not in everything


def test_real_local_llama_cpp_server(tmp_path):
    """Two requests to the bundled SmolLM2 behind llama.cpp's OpenAI server: the real wire format."""
    pytest.importorskip("llama_cpp")
    from skill_assets.lib.generation.local_llm_server import bundled_gguf, serve_gguf
    from skill_assets.lib.generation.prompts import RESPONSE_SCHEMA

    try:
        gguf = bundled_gguf()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    items = synthetic_items(2, model="smollm2-135m-instruct")
    params = SamplingParams(temperature=0.0, max_tokens=64, json_schema=RESPONSE_SCHEMA)
    with serve_gguf(gguf, n_ctx=2048, log_path=tmp_path / "llm.log") as url:
        # the settings the pipeline gives a single-slot server: one request at a time, a generation's
        # timeout, no retry piling onto a generation still running
        client = openai.AsyncOpenAI(base_url=url, api_key="not-needed", timeout=LOCAL_SERVER["timeout_s"],
                                    max_retries=LOCAL_SERVER["max_retries"])
        out = generate(items, client, params, ResponseCache(tmp_path / "s.duckdb"),
                       GenerationLimits(concurrency=LOCAL_SERVER["concurrency"]))
        assert_all_decided(out.rows, items)
        assert all(r["decision"] != "FAILED" for r in out.rows), out.rows
        assert all(r["prompt_tokens"] > 0 and r["completion_tokens"] > 0 for r in out.rows)
        again = generate(items, client, params, ResponseCache(tmp_path / "s.duckdb"))
        assert again.requests_sent == 0 and all(r["cached"] for r in again.rows)
        # one thread: llama.cpp's spinning threads collapse to seconds a token beside another CPU-heavy job
        (server,) = [args for args in _child_command_lines() if "llama_cpp.server" in args]
        assert server[server.index("--n_threads") + 1] == "1" and server[server.index("--n_threads_batch") + 1] == "1"


def _child_command_lines() -> list[list[str]]:
    """The command lines of this process's children, from ``/proc``."""
    found = []
    for pid, (_, fields) in live_stats().items():
        if int(fields[1]) == os.getpid():
            try:
                found.append(Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1])
            except OSError:
                continue  # the process ended while being read
    return found
