"""``llm_records`` as a Dagster asset: direction partitions, checks, metadata, no secret in any output.

Runs the real asset against the fault server over HTTP in a temp DuckDB holding a few skills and
combinations of two directions.
"""
from __future__ import annotations

import json

import dagster as dg
import duckdb
import pytest
from generation_inputs import synthetic_skills, write_generation_inputs

from skill_assets.defs.generation.assets import llm_records, query_audit
from skill_assets.defs.generation.checks import llm_records_cover_combinations, llm_records_decided_with_reason
from skill_assets.defs.generation.partitions import direction_partitions
from skill_assets.defs.resources import DuckDBStore, LLMEndpoint

SENTINEL = "sk-SENTINEL-asset-never-leak-987654321"


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "s.duckdb"
    combos = [{"combination_id": f"{d}-{j}", "pool": "train", "direction": d, "k": 1 + j % 2,
               "skill_ids": [f"s{j}"] if j % 2 == 0 else [f"s{j}", f"s{j + 1}"], "neighbourhood": "any",
               "style": "task_direct"} for d in ("en2en", "en2zh") for j in range(4)]
    write_generation_inputs(path, synthetic_skills(6), combos)
    return path


def _materialize(fault_server, db, partition: str, instance, config: dict | None = None):
    resources = {"store": DuckDBStore(database=str(db)),
                 "llm": LLMEndpoint(base_url=fault_server.url, model="fault-model", timeout_s=2.0, max_retries=1)}
    return dg.materialize([llm_records, llm_records_cover_combinations, llm_records_decided_with_reason],
                          partition_key=partition, resources=resources, instance=instance,
                          run_config={"ops": {"llm_records": {"config": config or {}}}})


def _rows(db, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_partitions_are_the_directions():
    assert direction_partitions.get_partition_keys() == ["en2en", "en2zh", "zh2en", "zh2zh"]
    assert llm_records.partitions_def == direction_partitions
    mapping = query_audit.get_partition_mapping(dg.AssetKey("llm_records"))
    assert query_audit.partitions_def is None and isinstance(mapping, dg.AllPartitionMapping)


def test_each_direction_partition_writes_only_its_rows(fault_server, db, monkeypatch, caplog):
    monkeypatch.setenv("SKILL_ASSETS_LLM_API_KEY", SENTINEL)
    instance = dg.DagsterInstance.ephemeral()
    r1 = _materialize(fault_server, db, "en2en", instance, {"prices": {"fault-model": {"input_per_m": 2.0,
                                                                                        "output_per_m": 8.0}}})
    assert r1.success and all(e.passed for e in r1.get_asset_check_evaluations())
    assert _rows(db, "SELECT DISTINCT direction FROM llm_records") == [("en2en",)]
    r2 = _materialize(fault_server, db, "en2zh", instance)
    assert r2.success and all(e.passed for e in r2.get_asset_check_evaluations())
    before = dict(_rows(db, "SELECT record_id, request_key FROM llm_records WHERE direction = 'en2zh'"))
    assert len(before) == 4 and len(_rows(db, "SELECT * FROM llm_records")) == 8
    # a changed prompt setting for en2en re-asks only en2en; en2zh rows are untouched
    fault_server.reset_counts()
    r3 = _materialize(fault_server, db, "en2en", instance, {"prompt_body_chars": 50})
    assert r3.success and fault_server.total_requests == 4
    assert dict(_rows(db, "SELECT record_id, request_key FROM llm_records WHERE direction = 'en2zh'")) == before
    assert _rows(db, "SELECT count(*) FROM llm_records")[0][0] == 8
    # the same partition again: everything from the cache, zero requests
    fault_server.reset_counts()
    r4 = _materialize(fault_server, db, "en2en", instance, {"prompt_body_chars": 50})
    assert r4.success and fault_server.total_requests == 0
    meta = r4.asset_materializations_for_node("llm_records")[0].metadata
    assert meta["requests_sent"].value == 0 and meta["answered_from_cache"].value == 4
    assert meta["direction"].value == "en2en"
    assert {"rate/en2en/k1/WRITE", "rate/en2en/k2/SKIP", "rate/en2en/k1/FAILED", "tokens_in_records",
            "cost_usd_run", "decisions/INVALID", "latency_p95_s"} <= set(meta)
    m1 = r1.asset_materializations_for_node("llm_records")[0].metadata
    assert m1["cost_usd_run"].value > 0 and m1["unpriced_models"].value == "none"
    # downstream, unpartitioned, reads every direction
    qa = dg.materialize([query_audit], resources={"store": DuckDBStore(database=str(db))}, instance=instance,
                        selection=[query_audit])
    assert qa.success
    n_write = _rows(db, "SELECT count(*) FROM llm_records WHERE decision = 'WRITE'")[0][0]
    assert _rows(db, "SELECT count(*) FROM query_audit")[0][0] == n_write

    # the API key was sent, and is nowhere in tables, event logs, metadata or captured logs
    assert f"Bearer {SENTINEL}" in fault_server.auth_headers
    with duckdb.connect(str(db), read_only=True) as con:
        dump = "".join(json.dumps(con.execute(f'SELECT * FROM "{t}"').fetchall(), default=str)
                       for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall())
    logs = "".join(str(e) for r in (r1, r2, r3, r4, qa) for e in instance.all_logs(r.run_id))
    assert SENTINEL not in dump + logs + caplog.text


def test_budget_stop_marks_unsent_records_failed(fault_server, db, monkeypatch):
    instance = dg.DagsterInstance.ephemeral()
    r = _materialize(fault_server, db, "en2zh", instance, {"max_total_tokens": 700})
    assert r.success and all(e.passed for e in r.get_asset_check_evaluations())
    rows = _rows(db, "SELECT decision, error FROM llm_records WHERE direction = 'en2zh'")
    assert len(rows) == 4 and any(d == "FAILED" and e.startswith("budget") for d, e in rows)
    meta = r.asset_materializations_for_node("llm_records")[0].metadata
    assert "budget" in meta["stop_reason"].value and meta["failed/budget"].value >= 1


def test_replacing_rows_migrates_an_older_table(fault_server, db):
    """A table from an older column contract (here: an extra and a missing column) is migrated in place."""
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE llm_records AS SELECT 'old-1' AS record_id, 'zh2zh' AS direction, 1 AS legacy")
    r = _materialize(fault_server, db, "en2en", dg.DagsterInstance.ephemeral())
    assert r.success
    cols = [c for (c,) in _rows(db, "SELECT column_name FROM information_schema.columns WHERE table_name = "
                                    "'llm_records' ORDER BY ordinal_position")]
    assert "legacy" not in cols and "decision" in cols
    assert ("old-1", "zh2zh") in _rows(db, "SELECT record_id, direction FROM llm_records")


def test_a_slow_single_slot_server_answers_every_record_with_no_wasted_generation(db):
    """The bundled llama.cpp server generates one request at a time and never stops one it started. Against a
    slow single-slot server the bundled-server settings write every record, each prompt generated once; the
    endpoint settings (2 in flight, a timeout that counts the queue, SDK retries) waste generations and fail."""
    from skill_assets.defs.generation.assets import JOURNAL_DIR
    from skill_assets.defs.resources import LOCAL_SERVER
    from skill_assets.lib.generation.fault_server import FaultServer
    from skill_assets.materialize import configured_resources

    instance = dg.DagsterInstance.ephemeral()
    with FaultServer(latency_s=1.0, slots=1) as slow:
        base = {"store": DuckDBStore(database=str(db)), "llm": LLMEndpoint(base_url=slow.url, model="fault-model")}
        hurried = configured_resources(base, {"llm": {"config": {"concurrency": 2, "timeout_s": 1.5,
                                                                  "max_retries": 2}}})
        dg.materialize([llm_records], partition_key="en2en", resources=hurried, instance=instance)
        wasted = sum(slow.generations.values()) - len(slow.generations)
        assert wasted > 0  # the second request in flight always waits out its timeout in the queue, then retries

        slow.reset_counts()
        with duckdb.connect(str(db)) as con:  # a fresh start: nothing cached from the hurried run
            con.execute("DROP TABLE IF EXISTS llm_records; DROP TABLE IF EXISTS llm_response_cache")
        for journal in (db.parent / JOURNAL_DIR).glob("*.jsonl"):
            journal.unlink()
        patient = configured_resources(base, {"llm": {"config": LOCAL_SERVER}})
        result = dg.materialize([llm_records, llm_records_cover_combinations], partition_key="en2en",
                                resources=patient, instance=instance)
    assert result.success and all(e.passed for e in result.get_asset_check_evaluations())
    decisions = _rows(db, "SELECT decision, count(*) FROM llm_records GROUP BY ALL")
    assert "FAILED" not in dict(decisions) and sum(n for _, n in decisions) == 4
    assert len(slow.generations) == 4 and set(slow.generations.values()) == {1}  # each prompt generated once


def test_the_bundled_server_gets_one_request_at_a_time_no_retries_and_a_generation_timeout():
    local, remote = LLMEndpoint(base_url=None), LLMEndpoint(base_url="http://127.0.0.1:9/v1")
    assert (local.effective_concurrency, local.client().max_retries, local.client().timeout) == (1, 0, 900.0)
    assert (remote.effective_concurrency, remote.client().max_retries, remote.client().timeout) == (2, 4, 120.0)
    assert LLMEndpoint(base_url=None, concurrency=3, max_retries=1).client().max_retries == 1
