"""Generation stage: ask the generator for WRITE/SKIP on every combination, then audit the queries.

Answers go to the ``llm_response_cache`` table (keyed by template version, model, sampling
parameters and rendered prompt) in small committed batches as they arrive, so a crash loses only
in-flight requests and a rerun sends only what is not cached yet.
"""

import asyncio
from collections import Counter

import dagster as dg
import polars as pl

from skill_assets.defs.metadata import table_metadata
from skill_assets.defs.resources import DUCKDB_WRITER_TAG, DuckDBStore, LLMEndpoint
from skill_assets.lib.generation import (GenerationLimits, LLMRequest, LLMResponse, SamplingParams, request_key,
                                         run_requests)
from skill_assets.lib.llm_output import parse_generator_output
from skill_assets.lib.prompts import RESPONSE_SCHEMA, TEMPLATE_VERSION, render_messages
from skill_assets.lib.query_audit import AuditWindow, audit_queries
from skill_assets.lib.tables import frame

GROUP = "generation"
CACHE_TABLE = "llm_response_cache"
CACHE_DDL = f"""CREATE TABLE IF NOT EXISTS {CACHE_TABLE} (
    request_key VARCHAR PRIMARY KEY, model VARCHAR, template_version VARCHAR, response VARCHAR,
    prompt_tokens BIGINT, completion_tokens BIGINT, latency_s DOUBLE, retries INTEGER,
    created_at TIMESTAMPTZ DEFAULT current_timestamp)"""


class GenerationSettings(dg.Config):
    temperature: float = 0.7
    max_tokens: int = 400
    seed: int = 0
    use_json_schema: bool = True
    prompt_body_chars: int = 800
    batch_size: int = 8
    max_consecutive_failures: int = 5
    max_total_tokens: int | None = None


def _cache_batch(store: DuckDBStore, template_version: str, batch: list[LLMResponse]) -> None:
    with store.connection() as con:
        con.execute(CACHE_DDL)
        con.executemany(
            f"INSERT OR REPLACE INTO {CACHE_TABLE} (request_key, model, template_version, response, prompt_tokens, "
            "completion_tokens, latency_s, retries) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [[r.key, r.model, template_version, r.text, r.prompt_tokens, r.completion_tokens, r.latency_s, r.retries]
             for r in batch])


def _cached(store: DuckDBStore, keys: list[str]) -> dict[str, dict]:
    with store.connection() as con:
        con.execute(CACHE_DDL)
        df = con.execute(f"SELECT * FROM {CACHE_TABLE} WHERE request_key IN (SELECT unnest(?))", [keys]).pl()
    return {r["request_key"]: r for r in df.to_dicts()}


@dg.asset(group_name=GROUP, kinds={"duckdb", "openai"}, deps=["skill_combinations", "skills"],
          op_tags=DUCKDB_WRITER_TAG)
def llm_records(context: dg.AssetExecutionContext, config: GenerationSettings, store: DuckDBStore, llm: LLMEndpoint):
    """One WRITE/SKIP/INVALID/FAILED decision per combination, never paying twice for a prompt."""
    combos = store.read("skill_combinations").to_dicts()
    skills = {s["skill_id"]: s for s in store.query("SELECT skill_id, name, description, body FROM skills").to_dicts()}
    params = SamplingParams(config.temperature, config.max_tokens, config.seed,
                            RESPONSE_SCHEMA if config.use_json_schema else None)
    plans = []
    for c in combos:
        model = llm.model_for_pool(c["pool"])
        messages = render_messages([skills[s] for s in c["skill_ids"]], c["direction"], c["style"],
                                   config.prompt_body_chars)
        plans.append((c, model, LLMRequest(request_key(TEMPLATE_VERSION, model, params, messages), messages)))
    cache = _cached(store, [p[2].key for p in plans])
    to_send: dict[str, list[LLMRequest]] = {}
    for _, model, req in plans:
        if req.key not in cache:
            to_send.setdefault(model, []).append(req)
    context.log.info(f"{len(plans)} combinations: {len(plans) - sum(map(len, to_send.values()))} cached")
    failures: dict[str, str] = {}
    stop_reasons = []
    limits = GenerationLimits(llm.concurrency, config.batch_size, config.max_consecutive_failures, config.max_total_tokens)
    for model, requests in to_send.items():
        report = asyncio.run(run_requests(llm.client(), model, params, requests,
                                          lambda batch: _cache_batch(store, TEMPLATE_VERSION, batch),
                                          limits, context.log.info))
        failures.update({r.key: r.error for r in report.responses if r.status == "failed"})
        if report.stop_reason:
            stop_reasons.append(f"{model}: {report.stop_reason}; {report.not_sent} not sent")
    fresh = set(k for reqs in to_send.values() for k in (r.key for r in reqs))
    cache = _cached(store, [p[2].key for p in plans])
    rows = []
    for c, model, req in plans:
        hit = cache.get(req.key)
        row = {"record_id": c["combination_id"], **c, "model": model, "template_version": TEMPLATE_VERSION,
               "request_key": req.key, "cached": req.key not in fresh}
        if hit is None:
            rows.append({**row, "decision": "FAILED", "cached": False,
                         "error": failures.get(req.key) or "not sent: " + "; ".join(stop_reasons)})
            continue
        parsed = parse_generator_output(hit["response"])
        rows.append({**row, "decision": parsed.decision, "query": parsed.query, "rationale": parsed.reason,
                     "error": parsed.parse_error, "raw_response": hit["response"],
                     "prompt_tokens": hit["prompt_tokens"], "completion_tokens": hit["completion_tokens"],
                     "latency_s": hit["latency_s"]})
    df = frame("llm_records", rows)
    store.write("llm_records", df)
    rates = Counter((r["direction"], r["k"], r["decision"]) for r in rows)
    decisions = Counter(r["decision"] for r in rows)
    meta = {f"rate/{d}/k{k}/{dec}": round(n / max(1, sum(v for (d2, k2, _), v in rates.items() if (d2, k2) == (d, k))), 3)
            for (d, k, dec), n in sorted(rates.items())}
    if stop_reasons:
        context.log.warning("generation stopped early: " + " | ".join(stop_reasons))
    return dg.MaterializeResult(metadata=table_metadata(
        "llm_records", df, requests_sent=len(fresh), tokens_in=int(df["prompt_tokens"].sum() or 0),
        tokens_out=int(df["completion_tokens"].sum() or 0), stop_reason=" | ".join(stop_reasons) or "none",
        **{f"decisions/{k}": v for k, v in sorted(decisions.items())}, **meta))


class AuditSettings(dg.Config):
    min_length: int = 50
    max_length: int = 300


@dg.asset(group_name=GROUP, kinds={"duckdb"}, deps=["llm_records"], op_tags=DUCKDB_WRITER_TAG)
def query_audit(config: AuditSettings, store: DuckDBStore):
    """Audit flags for every WRITE query: duplicates, name leakage, length, language, refusals."""
    records = store.query("""
        SELECT r.record_id, r.query, r.direction, r.k, list(s.name ORDER BY s.name) AS skill_names
        FROM llm_records r, unnest(r.skill_ids) AS u(skill_id) JOIN skills s ON s.skill_id = u.skill_id
        WHERE r.decision = 'WRITE' GROUP BY ALL ORDER BY r.record_id""").to_dicts()
    rows = audit_queries(records, AuditWindow(config.min_length, config.max_length))
    df = frame("query_audit", rows)
    store.write("query_audit", df)
    flags = ["duplicate_exact", "duplicate_normalised", "name_leakage", "length_out_of_window",
             "language_mismatch", "empty_or_refusal"]
    return dg.MaterializeResult(metadata=table_metadata(
        "query_audit", df, passed=int(df["passed"].sum() or 0),
        **{f"flag/{f}": int(df[f].sum() or 0) for f in flags}))
