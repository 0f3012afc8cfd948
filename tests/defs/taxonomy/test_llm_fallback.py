"""The optional LLM fallback against a real local HTTP server (the fault server): it asks only for what the
rules and the model leave unknown, through the generation stage's response cache and budget, so a rerun
sends nothing and a budget stops it cleanly; off by default and with the bundled SmolLM2."""
import json
from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg
import duckdb
import pytest

from skill_assets.defs.resources import DuckDBStore, LLMEndpoint
from skill_assets.defs.taxonomy.assets import skip_taxonomy, taxonomy_llm_labels
from skill_assets.lib.common import store as store_lib
from skill_assets.lib.common.tables import frame
from skill_assets.lib.generation import fault_server as fault_module
from skill_assets.lib.generation.fault_server import prompt_hash
from skill_assets.lib.generation.llm_client import TokenBudget
from skill_assets.lib.taxonomy.llm_fallback import llm_messages

RULED = "These skills cover unrelated domains: cooking and kernel debugging."
#: off-topic rationales: the rules find nothing and the model stays below its floor
UNSURE = {"u1": ("The weather was lovely, so I sat outside for a while.", "forced_chaining"),
          "u2": ("今天天气不错，我去买了杯咖啡。", "audience_mismatch"),
          "u3": ("Lorem ipsum dolor sit amet, consectetur adipiscing elit.", "domain_mismatch")}


@pytest.fixture
def db(tmp_path, fault_server, monkeypatch):
    """A store with one rule-labelled SKIP and three off-topic ones; the server answers each prompt with its class."""
    answers = {prompt_hash(llm_messages(text)): label for text, label in UNSURE.values()}
    monkeypatch.setattr(fault_module, "decision_text",
                        lambda h, decision=None: json.dumps({"label": answers.get(h, "unknown")}))
    path = tmp_path / "store.duckdb"
    texts = {"r1": RULED, **{r: text for r, (text, _) in UNSURE.items()}}
    store_lib.replace_table(path, "llm_records", frame("llm_records", [
        {"record_id": r, "combination_id": r, "pool": "test", "direction": "en2en", "k": 2, "skill_ids": ["a/x", "b/y"],
         "decision": "SKIP", "rationale": text, "model": "test"} for r, text in texts.items()]))
    return path


def _endpoint(fault_server) -> LLMEndpoint:
    return LLMEndpoint(base_url=fault_server.url, model="fault-model", timeout_s=2.0, max_retries=1, concurrency=1)


def _run(db, asset, llm=None, **config) -> dg.ExecuteInProcessResult:
    resources = {"store": DuckDBStore(database=str(db))} | ({"llm": llm} if llm is not None else {})
    run_config = {"ops": {asset.op.name: {"config": config}}} if config else {}
    result = dg.materialize([asset], resources=resources, run_config=run_config)
    assert result.success
    return result


def _rows(db, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def _meta(result, name: str) -> dict:
    return {k: v.value for k, v in result.asset_materializations_for_node(name)[0].metadata.items()}


def test_the_llm_labels_what_stays_unknown_and_a_rerun_sends_nothing(db, fault_server):
    _run(db, skip_taxonomy)
    unsure = dict(_rows(db, "SELECT record_id, method FROM skip_taxonomy WHERE record_id <> 'r1'"))
    assert unsure == {r: "none" for r in UNSURE}
    assert _rows(db, "SELECT method, rule_id FROM skip_taxonomy WHERE record_id = 'r1'") == [("rule", "domain.en")]

    first = _run(db, taxonomy_llm_labels, _endpoint(fault_server), enabled=True)
    assert fault_server.total_requests == len(UNSURE)  # the rule-labelled SKIP is not asked about
    assert dict(_rows(db, "SELECT record_id, label FROM taxonomy_llm_labels")) == {r: c for r, (_, c) in UNSURE.items()}
    assert _meta(first, "taxonomy_llm_labels")["requests_sent"] == len(UNSURE)

    fault_server.reset_counts()
    again = _run(db, taxonomy_llm_labels, _endpoint(fault_server), enabled=True)
    assert fault_server.total_requests == 0  # every answer comes from the response cache
    assert _rows(db, "SELECT bool_and(cached), count(*) FROM taxonomy_llm_labels") == [(True, len(UNSURE))]
    assert _meta(again, "taxonomy_llm_labels")["requests_sent"] == 0

    _run(db, skip_taxonomy)  # folds the answers in: method llm, the model's confidence kept
    labelled = {r: (label, method) for r, label, method in _rows(
        db, "SELECT record_id, label, method FROM skip_taxonomy WHERE record_id <> 'r1'")}
    assert labelled == {r: (c, "llm") for r, (_, c) in UNSURE.items()}
    assert _rows(db, "SELECT method FROM skip_taxonomy WHERE record_id = 'r1'") == [("rule",)]

    fault_server.reset_counts()  # after the fold-in the same rows are still the LLM's: still nothing sent
    _run(db, taxonomy_llm_labels, _endpoint(fault_server), enabled=True)
    assert fault_server.total_requests == 0 and len(_rows(db, "SELECT * FROM taxonomy_llm_labels")) == len(UNSURE)


def test_the_budget_stops_cleanly_and_the_next_run_sends_only_the_rest(db, fault_server):
    _run(db, skip_taxonomy)
    budget = max(TokenBudget(None, None).estimate(llm_messages(text), 32, "fault-model", {})[0]
                 for text, _ in UNSURE.values())  # room for the first request, not for all three
    stopped = _run(db, taxonomy_llm_labels, _endpoint(fault_server), enabled=True, max_total_tokens=budget)
    sent = fault_server.total_requests
    assert 1 <= sent < len(UNSURE)
    meta = _meta(stopped, "taxonomy_llm_labels")
    assert meta["stop_reason"].startswith("fault-model: budget:") and meta["requests_sent"] == sent
    unsent = _rows(db, "SELECT label, answer, error FROM taxonomy_llm_labels WHERE answer IS NULL")
    assert len(unsent) == len(UNSURE) - sent and all(label is None and error.startswith("budget:")
                                                     for label, _, error in unsent)
    spent = _rows(db, "SELECT sum(prompt_tokens + completion_tokens) FROM llm_response_cache")[0][0]
    assert spent <= budget

    fault_server.reset_counts()
    _run(db, taxonomy_llm_labels, _endpoint(fault_server), enabled=True)
    assert fault_server.total_requests == len(UNSURE) - sent  # what was answered is never asked again
    assert _rows(db, "SELECT count(label) FROM taxonomy_llm_labels") == [(len(UNSURE),)]


class _BundledSmolLM2(LLMEndpoint):
    """The ``llm`` resource as it is with no endpoint configured (the bundled SmolLM2), without starting it."""

    @contextmanager
    def yield_for_execution(self, context) -> Iterator[LLMEndpoint]:
        yield self


@pytest.mark.parametrize("enabled", [False, True])
def test_off_by_default_and_with_the_bundled_smollm2(db, fault_server, enabled):
    _run(db, skip_taxonomy)
    default = _run(db, taxonomy_llm_labels, _endpoint(fault_server))  # enabled is false by default
    bundled = _run(db, taxonomy_llm_labels, _BundledSmolLM2(base_url=None), enabled=enabled)
    assert fault_server.total_requests == 0
    assert _meta(default, "taxonomy_llm_labels")["state"] == "off (enabled: false)"
    assert _meta(bundled, "taxonomy_llm_labels")["state"].startswith("off")
    assert _rows(db, "SELECT count(*) FROM taxonomy_llm_labels") == [(0,)]
    _run(db, skip_taxonomy)
    assert _rows(db, "SELECT count(*) FROM skip_taxonomy WHERE method = 'llm'") == [(0,)]
