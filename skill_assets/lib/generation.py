"""Call an OpenAI-compatible chat endpoint for many prompts: concurrent, cached, bounded.

Paid calls are the project's most expensive resource, so this module guarantees three things:
every answered request is handed to ``on_batch`` (which the caller commits to the response
cache) in small batches as answers arrive; a request whose key is already cached is never sent;
and the run stops cleanly — not with a crash that loses the batch in hand — when the endpoint is
down (circuit breaker) or the token budget is spent. Retries with exponential backoff and
``Retry-After`` are the ``openai`` client's own (``max_retries``).
"""
from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import openai

from skill_assets.lib.hashing import digest


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 0.7
    max_tokens: int = 400
    seed: int | None = 0
    json_schema: dict | None = None

    def as_key(self) -> str:
        return json.dumps({"t": self.temperature, "m": self.max_tokens, "s": self.seed,
                           "schema": self.json_schema is not None}, sort_keys=True)


def request_key(template_version: str, model: str, params: SamplingParams, messages: list[dict]) -> str:
    return digest("\x1e".join([template_version, model, params.as_key(), json.dumps(messages, sort_keys=True)]))


@dataclass
class LLMRequest:
    key: str
    messages: list[dict]


@dataclass
class LLMResponse:
    key: str
    model: str
    status: str  # ok | failed
    text: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    retries: int = 0
    error: str = ""


@dataclass
class GenerationLimits:
    concurrency: int = 2
    batch_size: int = 8
    max_consecutive_failures: int = 5
    max_total_tokens: int | None = None


@dataclass
class GenerationReport:
    requested: int = 0
    answered: int = 0
    failed: int = 0
    not_sent: int = 0
    stop_reason: str = ""
    tokens: int = 0
    responses: list[LLMResponse] = field(default_factory=list)


def _response_format(params: SamplingParams) -> dict | None:
    if params.json_schema is None:
        return None
    # llama.cpp's server reads "schema" beside json_object; OpenAI-style servers read json_schema
    return {"type": "json_object", "schema": params.json_schema}


async def _call(client: openai.AsyncOpenAI, model: str, params: SamplingParams, req: LLMRequest) -> LLMResponse:
    started = time.perf_counter()
    kwargs: dict = {"model": model, "messages": req.messages, "temperature": params.temperature,
                    "max_tokens": params.max_tokens}
    if params.seed is not None:
        kwargs["seed"] = params.seed
    if (fmt := _response_format(params)) is not None:
        kwargs["response_format"] = fmt
    try:
        raw = await client.chat.completions.with_raw_response.create(**kwargs)
        completion = raw.parse()
    except (openai.APIError, ValueError) as exc:
        return LLMResponse(req.key, model, "failed", latency_s=time.perf_counter() - started,
                           error=f"{type(exc).__name__}: {str(exc)[:300]}")
    usage = completion.usage
    text = completion.choices[0].message.content if completion.choices else ""
    return LLMResponse(req.key, model, "ok", text=text or "",
                       prompt_tokens=usage.prompt_tokens if usage else 0,
                       completion_tokens=usage.completion_tokens if usage else 0,
                       latency_s=time.perf_counter() - started, retries=getattr(raw, "retries_taken", 0))


async def run_requests(client: openai.AsyncOpenAI, model: str, params: SamplingParams, requests: list[LLMRequest],
                       on_batch: Callable[[list[LLMResponse]], None], limits: GenerationLimits = GenerationLimits(),
                       log: Callable[[str], None] = lambda _: None) -> GenerationReport:
    """Send ``requests`` (none of them cached) and hand answers to ``on_batch`` as they arrive."""
    report = GenerationReport()
    queue: asyncio.Queue[LLMRequest] = asyncio.Queue()
    for r in requests:
        queue.put_nowait(r)
    pending: list[LLMResponse] = []
    consecutive_failures = 0
    stop = asyncio.Event()

    def flush() -> None:
        if pending:
            on_batch(list(pending))
            pending.clear()

    async def worker() -> None:
        nonlocal consecutive_failures
        while not stop.is_set():
            try:
                req = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            report.requested += 1
            resp = await _call(client, model, params, req)
            report.responses.append(resp)
            if resp.status == "ok":
                consecutive_failures = 0
                report.answered += 1
                report.tokens += resp.prompt_tokens + resp.completion_tokens
                pending.append(resp)
                if len(pending) >= limits.batch_size:
                    flush()
            else:
                consecutive_failures += 1
                report.failed += 1
                log(f"request {req.key[:8]} failed: {resp.error}")
            if consecutive_failures >= limits.max_consecutive_failures:
                report.stop_reason = f"circuit open after {consecutive_failures} consecutive failures"
                stop.set()
            elif limits.max_total_tokens is not None and report.tokens >= limits.max_total_tokens:
                report.stop_reason = f"token budget of {limits.max_total_tokens} spent"
                stop.set()
            done = report.answered + report.failed
            if done % 10 == 0:
                log(f"{done}/{len(requests)} requests done ({report.failed} failed)")

    try:
        await asyncio.gather(*(worker() for _ in range(max(1, limits.concurrency))))
    finally:
        flush()
    report.not_sent = queue.qsize()
    return report
