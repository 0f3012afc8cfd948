"""One generation run: prompts in, one ``llm_records`` row per item out (WRITE, SKIP, INVALID or FAILED).

Identical prompts are sent once, cached answers are never paid for again, and every item that
got no answer becomes a FAILED row with the reason, so the next run sends exactly those.
"""
from __future__ import annotations

import asyncio
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import openai

from skill_assets.lib.generation.llm_output import parse_generator_output
from skill_assets.lib.generation.llm_client import (
    ABORTED,
    EndpointGuard,
    GenerationLimits,
    LLMRequest,
    LLMResponse,
    SamplingParams,
    TokenBudget,
    redact,
    request_key,
    run_requests,
    secret_of,
)
from skill_assets.lib.generation.pricing import PriceTable, cost_usd, unpriced
from skill_assets.lib.generation.response_cache import ResponseCache, ResponseJournal

DECISIONS = ("WRITE", "SKIP", "INVALID", "FAILED")


# --- a whole generation run -----------------------------------------------------------------------

@dataclass
class GenerationItem:
    """One record to produce: its id, the model to ask, the prompt and columns copied to the row."""

    record_id: str
    model: str
    messages: list[dict]
    template_version: str
    fields: dict = field(default_factory=dict)


@dataclass
class GenerationOutcome:
    rows: list[dict]
    requests_sent: int
    stop_reasons: list[str]
    elapsed_s: float
    recovered_from_journal: int
    unpriced_models: list[str]
    fresh_responses: list[LLMResponse]


def generate(items: list[GenerationItem], client: openai.AsyncOpenAI, params: SamplingParams,
             cache: ResponseCache, limits: GenerationLimits = GenerationLimits(), prices: PriceTable | None = None,
             journal_path: Path | None = None, log: Callable[[str], None] = lambda _: None) -> GenerationOutcome:
    """One row per item: WRITE, SKIP or INVALID from an answer (cached or new), else FAILED with a reason.

    Identical prompts (same request key) are sent once. Journals left by a killed run in
    ``journal_path``'s folder are committed to the cache before anything is looked up.
    """
    started = time.perf_counter()
    prices = prices or {}
    secret = secret_of(client)
    safe_log = (lambda msg: log(redact(msg, secret)))
    recovered = cache.recover(journal_path.parent, own=journal_path) if journal_path is not None else 0
    if recovered:
        safe_log(f"committed {recovered} answers left in journals by an interrupted run")
    keys = [request_key(it.template_version, it.model, params, it.messages) for it in items]
    cached = cache.lookup(keys)
    to_send: dict[str, dict[str, LLMRequest]] = defaultdict(dict)
    for it, key in zip(items, keys):
        if key not in cached:
            to_send[it.model].setdefault(key, LLMRequest(key, it.messages, it.template_version))
    n_send = sum(len(v) for v in to_send.values())
    safe_log(f"{len(items)} records, {len(set(keys))} distinct prompts: {len(set(keys)) - n_send} cached, "
             f"{n_send} to send")
    journal = ResponseJournal(journal_path) if journal_path is not None else None
    failures: dict[str, LLMResponse] = {}
    not_sent: dict[str, str] = {}
    stop_reasons: list[str] = []
    fresh: list[LLMResponse] = []
    sent = [0]

    async def send_all() -> None:
        guard = EndpointGuard(limits.max_consecutive_failures)
        budget = TokenBudget(limits.max_total_tokens, limits.max_total_cost_usd)
        for model, reqs in to_send.items():
            report = await run_requests(client, model, params, list(reqs.values()), cache.put, limits, safe_log,
                                        prices, journal, guard, budget)
            sent[0] += report.requested
            fresh.extend(r for r in report.responses if r.status == "ok")
            failures.update({r.key: r for r in report.responses if r.status == "failed"})
            not_sent.update(report.not_sent)
            if report.stop_reason:
                stop_reasons.append(f"{model}: {report.stop_reason}")

    try:
        if n_send:
            asyncio.run(send_all())
    finally:
        if journal is not None:
            journal.close()  # on an error the file stays: the next run commits what it holds
    if journal is not None:
        journal.discard()  # every answer in it is committed (run_requests raised otherwise)
    answers = {**cached, **cache.lookup(r.key for r in fresh)}
    for r in fresh:  # the cache has no cost column: cost and attempt counts come from this run
        if r.key in answers:
            answers[r.key] = r
    rows = []
    for it, key in zip(items, keys):
        row = {"record_id": it.record_id, **it.fields, "model": it.model, "template_version": it.template_version,
               "request_key": key, "cached": key in cached}
        hit = answers.get(key)
        if hit is None:
            failed = failures.get(key)
            rows.append({**row, "decision": "FAILED", "cached": False, "query": None, "rationale": None,
                         "error": failed.error if failed else not_sent.get(key, f"{ABORTED}: no answer"),
                         "raw_response": None, "prompt_tokens": 0, "completion_tokens": 0,
                         "latency_s": failed.usage.latency_s if failed else 0.0,
                         "retries": failed.usage.retries if failed else 0,
                         "cost_usd": 0.0})
            continue
        parsed, used = parse_generator_output(hit.text), hit.usage
        rows.append({**row, "decision": parsed.decision, "query": parsed.query, "rationale": parsed.reason,
                     "error": parsed.parse_error, "raw_response": hit.text, "prompt_tokens": used.prompt_tokens,
                     "completion_tokens": used.completion_tokens, "latency_s": used.latency_s, "retries": used.retries,
                     "cost_usd": cost_usd(prices, it.model, used.prompt_tokens, used.completion_tokens)})
    return GenerationOutcome(rows, sent[0], stop_reasons, time.perf_counter() - started, recovered,
                             unpriced(prices, {it.model for it in items}), fresh)


# --- accounting -----------------------------------------------------------------------------------

def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * len(values)))], 4)


def summarize(outcome: GenerationOutcome) -> dict[str, float | int | str]:
    """Totals of a run and WRITE/SKIP/INVALID/FAILED rates by direction and k, as flat metadata."""
    rows = outcome.rows
    decisions = Counter(r["decision"] for r in rows)
    groups: dict[tuple[str, int], Counter] = defaultdict(Counter)
    for r in rows:
        groups[(str(r.get("direction")), int(r.get("k") or 0))][r["decision"]] += 1
    out: dict[str, float | int | str] = {
        "records": len(rows),
        "requests_sent": outcome.requests_sent,
        "answered_from_cache": sum(bool(r["cached"]) for r in rows),
        "recovered_from_journal": outcome.recovered_from_journal,
        "tokens_in_run": sum(r.usage.prompt_tokens for r in outcome.fresh_responses),
        "tokens_out_run": sum(r.usage.completion_tokens for r in outcome.fresh_responses),
        "cost_usd_run": round(sum(r.usage.cost_usd for r in outcome.fresh_responses), 6),
        "tokens_in_records": sum(int(r["prompt_tokens"] or 0) for r in rows),
        "tokens_out_records": sum(int(r["completion_tokens"] or 0) for r in rows),
        "cost_usd_records": round(sum(float(r["cost_usd"] or 0.0) for r in rows), 6),
        "retries_run": sum(r.usage.retries for r in outcome.fresh_responses),
        "latency_p50_s": _pct([r.usage.latency_s for r in outcome.fresh_responses], 0.5),
        "latency_p95_s": _pct([r.usage.latency_s for r in outcome.fresh_responses], 0.95),
        "records_per_s": round(len(rows) / outcome.elapsed_s, 2) if outcome.elapsed_s > 0 else 0.0,
        "stop_reason": " | ".join(outcome.stop_reasons) or "none",
        "unpriced_models": ", ".join(outcome.unpriced_models) or "none",
    }
    out.update({f"decisions/{d}": decisions.get(d, 0) for d in DECISIONS})
    failed = Counter(str(r["error"]).split(":", 1)[0] for r in rows if r["decision"] == "FAILED")
    out.update({f"failed/{reason}": n for reason, n in sorted(failed.items())})
    for (direction, k), c in sorted(groups.items()):
        total = sum(c.values())
        out.update({f"rate/{direction}/k{k}/{d}": round(c.get(d, 0) / total, 3) for d in DECISIONS})
    if outcome.fresh_responses:
        out["latency_mean_s"] = round(statistics.fmean(r.usage.latency_s for r in outcome.fresh_responses), 4)
    return out
