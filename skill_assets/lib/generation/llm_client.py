"""Send many prompts to an OpenAI-compatible chat endpoint: concurrent, bounded, accounted.

The cache and journal live in ``response_cache``; ``records`` turns answers into ``llm_records`` rows.

Paid calls are the project's most expensive resource, so this module guarantees:

* **never pay twice** — every answer is appended to a local journal file the moment it arrives
  (one ``write`` + ``flush``: it survives the process being killed) and committed to the DuckDB
  response cache in small batches; a later run first folds any journal left behind into the
  cache, and never sends a request whose key is cached. A killed run therefore loses only the
  requests that were in flight, and a crash inside the batch commit loses nothing.
* **clean stops** — a circuit breaker counts failed HTTP *attempts* (connection errors, timeouts,
  5xx, unreadable bodies) across all requests, so a dead endpoint opens it after a handful of
  attempts instead of after every request has exhausted its retry back-off; it then cancels what
  is in flight. A token / dollar budget reserves a conservative estimate before each send and
  stops sending when the next request might not fit. Nothing is lost in either case: unsent
  requests come back with a reason and become FAILED records that the next run sends.
* **accounting** — tokens in/out, latency, retries and estimated cost per request.
* **no secret leaks** — the API key is scrubbed from every error text, log line and answer.

Retries with exponential backoff and ``Retry-After`` are the ``openai`` client's own (``max_retries``).
"""
from __future__ import annotations

import asyncio
import contextvars
import json
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx2
import openai

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.common.redaction import redact
from skill_assets.lib.generation.pricing import PriceTable, cost_usd, price_of

if TYPE_CHECKING:
    from skill_assets.lib.generation.response_cache import ResponseJournal

#: failure classes, the prefix of a FAILED record's ``error``
BUDGET, CIRCUIT, REQUEST, ABORTED = "budget", "circuit_open", "request", "aborted"


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
    template_version: str = ""


@dataclass(frozen=True)
class Usage:
    """What answering one request took: tokens each way, seconds, retried attempts and dollars; the budget settles
    it and a run's metadata sums it."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    retries: int = 0
    cost_usd: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class LLMResponse:
    key: str
    model: str
    status: str  # ok | failed
    text: str = ""
    usage: Usage = Usage()
    error: str = ""
    template_version: str = ""


@dataclass(frozen=True)
class GenerationLimits:
    concurrency: int = 2
    batch_size: int = 8
    #: consecutive failed HTTP attempts (over all requests) that open the circuit
    max_consecutive_failures: int = 8
    max_total_tokens: int | None = None
    max_total_cost_usd: float | None = None


@dataclass
class GenerationReport:
    requested: int = 0
    answered: int = 0
    failed: int = 0
    stop_reason: str = ""
    tokens: int = 0
    cost_usd: float = 0.0
    responses: list[LLMResponse] = field(default_factory=list)
    #: request key -> why it was not sent (``budget: …`` / ``circuit_open: …`` / ``aborted: …``)
    not_sent: dict[str, str] = field(default_factory=dict)


# --- secrets -------------------------------------------------------------------------------------

#: the key sent when none is configured (local servers ignore it): not a secret, never redacted
NO_KEY = "not-needed"


def secret_of(client: openai.AsyncOpenAI) -> str | None:
    key = getattr(client, "api_key", None)
    return key if isinstance(key, str) and len(key) >= 8 and key != NO_KEY else None


ERROR_CHARS = 300


def redacted_excerpt(text: str, secret: str | None, limit: int = ERROR_CHARS) -> str:
    """Redact first, then cut to ``limit`` characters: the order that cannot leave part of a key behind."""
    return redact(text, secret)[:limit]


# --- endpoint guard: attempt counting and the circuit breaker -------------------------------------

_current_key: contextvars.ContextVar[str | None] = contextvars.ContextVar("skill_assets_request_key", default=None)


class EndpointGuard:
    """Counts HTTP attempts per request and consecutive failed attempts over all requests.

    Counting attempts (not requests) is what makes the breaker fast: the ``openai`` client retries a
    refused connection with growing back-off, so a request-level breaker against a dead endpoint
    would wait for ``concurrency × threshold`` full retry cycles before stopping.
    """

    def __init__(self, threshold: int, on_open: Callable[[str], None] = lambda _: None) -> None:
        self.threshold = max(1, threshold)
        self.on_open = on_open
        self.consecutive = 0
        self.reason = ""
        self.attempts: Counter[str] = Counter()
        self.last_error = ""

    @property
    def is_open(self) -> bool:
        return bool(self.reason)

    def attempt(self) -> None:
        if (key := _current_key.get()) is not None:
            self.attempts[key] += 1

    def success(self) -> None:
        self.consecutive = 0

    def failure(self, what: str) -> None:
        self.consecutive += 1
        self.last_error = what
        if not self.is_open and self.consecutive >= self.threshold:
            self.reason = f"{CIRCUIT}: {self.consecutive} consecutive failed attempts (last: {what})"
            self.on_open(self.reason)


#: statuses that no retry will fix (bad key, no access, wrong model or URL): they count as failures
#: so a misconfigured run stops after a few requests instead of sending every one
_FATAL_STATUS = frozenset({401, 403, 404})


class _GuardedHttpClient(openai.DefaultAsyncHttpxClient):
    """The openai SDK's default async HTTP client, reporting each attempt's outcome to a guard.

    ``send`` reads the whole body for non-streamed calls, so truncated bodies and dropped
    connections show up here as ``httpx2.RequestError`` and are counted too.
    """

    def __init__(self, guard: EndpointGuard, **kwargs) -> None:
        super().__init__(**kwargs)
        self._guard = guard

    async def send(self, request: httpx2.Request, **kwargs) -> httpx2.Response:  # type: ignore[override]
        if self._guard.is_open:
            raise httpx2.ConnectError(self._guard.reason, request=request)
        self._guard.attempt()
        try:
            response = await super().send(request, **kwargs)
        except httpx2.RequestError as exc:
            self._guard.failure(type(exc).__name__)
            raise
        if response.status_code >= 500 or response.status_code in _FATAL_STATUS:
            self._guard.failure(f"HTTP {response.status_code}")
        elif response.status_code < 400:
            self._guard.success()
        return response  # 429 and other 4xx: the endpoint is alive, neither success nor failure


# --- budget ---------------------------------------------------------------------------------------

class TokenBudget:
    """Spent + reserved tokens and dollars; a request is sent only if its worst case fits.

    The worst case is ``max_tokens`` out plus an over-estimate of the prompt's tokens (bytes × a
    ratio that starts at 0.5 tokens/byte and then follows the largest ratio seen, plus 10%), so
    concurrent requests cannot jointly overshoot the budget.
    """

    def __init__(self, max_tokens: int | None, max_cost_usd: float | None) -> None:
        self.max_tokens = max_tokens
        self.max_cost_usd = max_cost_usd
        self.tokens = 0
        self.cost_usd = 0.0
        self.reserved_tokens = 0
        self.reserved_cost = 0.0
        self.in_flight = 0
        self._tokens_per_byte = 0.5
        self._seen_ratio = 0.0

    @property
    def limited(self) -> bool:
        return self.max_tokens is not None or self.max_cost_usd is not None

    def estimate(self, messages: list[dict], max_out: int, model: str, prices: PriceTable) -> tuple[int, float]:
        n_bytes = sum(len(str(m.get("content", "")).encode("utf-8")) + 16 for m in messages)
        tokens_in = math.ceil(n_bytes * self._tokens_per_byte)
        p = price_of(prices, model)
        return tokens_in + max_out, (tokens_in * p.input_per_m + max_out * p.output_per_m) / 1_000_000

    def fits(self, tokens: int, cost: float) -> bool:
        if self.max_tokens is not None and self.tokens + self.reserved_tokens + tokens > self.max_tokens:
            return False
        if self.max_cost_usd is not None and self.cost_usd + self.reserved_cost + cost > self.max_cost_usd + 1e-12:
            return False
        return True

    def reserve(self, tokens: int, cost: float) -> None:
        self.reserved_tokens += tokens
        self.reserved_cost += cost
        self.in_flight += 1

    def settle(self, reserved: tuple[int, float], resp: LLMResponse, messages: list[dict]) -> None:
        self.reserved_tokens -= reserved[0]
        self.reserved_cost -= reserved[1]
        self.in_flight -= 1
        self.tokens += resp.usage.tokens
        self.cost_usd += resp.usage.cost_usd
        n_bytes = sum(len(str(m.get("content", "")).encode("utf-8")) + 16 for m in messages)
        if resp.usage.prompt_tokens and n_bytes:
            self._seen_ratio = max(self._seen_ratio, resp.usage.prompt_tokens / n_bytes)
            self._tokens_per_byte = self._seen_ratio * 1.1

    def exhausted_reason(self) -> str:
        parts = []
        if self.max_tokens is not None:
            parts.append(f"{self.tokens}/{self.max_tokens} tokens spent")
        if self.max_cost_usd is not None:
            parts.append(f"${self.cost_usd:.4f}/${self.max_cost_usd:.4f} spent")
        return f"{BUDGET}: next request might not fit ({', '.join(parts)}); not sent"


# --- one request ----------------------------------------------------------------------------------

def _response_format(params: SamplingParams) -> dict | None:
    if params.json_schema is None:
        return None
    # llama.cpp's server reads "schema" beside json_object; OpenAI-style servers read json_schema
    return {"type": "json_object", "schema": params.json_schema}


async def _call(client: openai.AsyncOpenAI, model: str, params: SamplingParams, req: LLMRequest,
                guard: EndpointGuard, prices: PriceTable, secret: str | None) -> LLMResponse:
    _current_key.set(req.key)  # this task's context: the HTTP client counts attempts per key
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
        if not getattr(completion, "choices", None):
            raise ValueError("response has no choices")
    except (openai.APIError, ValueError, TypeError, AttributeError) as exc:
        if not isinstance(exc, openai.APIError):  # a 200 with an unreadable body: the endpoint misbehaves
            guard.failure(type(exc).__name__)
        return LLMResponse(req.key, model, "failed", usage=Usage(latency_s=time.perf_counter() - started,
                                                                 retries=max(0, guard.attempts[req.key] - 1)),
                           template_version=req.template_version,
                           error=redacted_excerpt(f"{REQUEST}: {type(exc).__name__}: {exc}", secret))
    counted = completion.usage
    text = completion.choices[0].message.content or ""
    tin = int(getattr(counted, "prompt_tokens", 0) or 0)
    tout = int(getattr(counted, "completion_tokens", 0) or 0)
    usage = Usage(tin, tout, latency_s=time.perf_counter() - started,
                  retries=int(getattr(raw, "retries_taken", 0) or max(0, guard.attempts[req.key] - 1)),
                  cost_usd=cost_usd(prices, model, tin, tout))
    return LLMResponse(req.key, model, "ok", text=redact(text, secret), usage=usage,
                       template_version=req.template_version)


# --- many requests --------------------------------------------------------------------------------

@dataclass(frozen=True)
class _CallSpec:
    """What every request of one ``run_requests`` call is sent with and priced by."""

    model: str
    params: SamplingParams
    prices: PriceTable
    secret: str | None  # the client's key, redacted from every error text


class _Run:
    """One ``run_requests`` call: the state its workers, its stop conditions and its drain share.

    The send loop, the stop conditions (breaker, budget, a failing ``on_batch``) and the drain of what is
    in flight all read and write the same queue, report, batch and events; as methods of one object each
    step stays short without passing that state back and forth. ``guard`` and ``budget`` may outlive it.
    """

    def __init__(self, spec: _CallSpec, requests: list[LLMRequest], on_batch: Callable[[list[LLMResponse]], None],
                 limits: GenerationLimits, log: Callable[[str], None], journal: ResponseJournal | None,
                 guard: EndpointGuard, budget: TokenBudget) -> None:
        self.model, self.params, self.prices, self.secret = spec.model, spec.params, spec.prices, spec.secret
        self.requests, self.on_batch, self.limits, self.log, self.journal = requests, on_batch, limits, log, journal
        self.guard, self.budget = guard, budget
        self.report = GenerationReport()
        self.inflight: set[asyncio.Task] = set()
        self.stop = asyncio.Event()
        # the breaker stops sending and cancels what is in flight, whichever request's attempt opened it
        guard.on_open = lambda reason: (self.stop.set(), [t.cancel() for t in list(self.inflight)])
        self.queue: list[LLMRequest] = list(reversed(requests))  # popped from the end: sent in the given order
        self.pending: list[LLMResponse] = []
        self.batch_error: list[BaseException] = []
        self.budget_cond = asyncio.Condition()

    def refused(self) -> GenerationReport:
        """The report of a call whose shared guard an earlier call already opened: nothing is sent."""
        self.report.stop_reason = self.guard.reason
        self.report.not_sent = {r.key: self.guard.reason + "; not sent" for r in self.requests}
        return self.report

    async def send_all(self, client: openai.AsyncOpenAI) -> None:
        """Run the workers over one guarded copy of ``client``; whatever ends them, the answers not yet
        handed to ``on_batch`` are flushed and the HTTP client closed."""
        http = _GuardedHttpClient(self.guard)
        guarded = client.copy(http_client=http)
        try:
            await asyncio.gather(*(self._worker(guarded) for _ in range(max(1, self.limits.concurrency))))
        finally:
            self._flush()
            await http.aclose()

    def finish(self) -> GenerationReport:
        """Why the run stopped and what it did not send; re-raises a failed ``on_batch`` once the rest is drained."""
        if self.guard.is_open and not self.report.stop_reason:
            self.report.stop_reason = self.guard.reason
        reason = self.report.stop_reason or "stopped"
        self.report.not_sent = {r.key: reason if reason.endswith("not sent") else reason + "; not sent"
                                for r in self.queue}
        if self.batch_error:
            raise self.batch_error[0]
        return self.report

    def _flush(self) -> None:
        """Hand the pending answers to ``on_batch``; after it has failed once, never again (the journal keeps them)."""
        if self.pending and not self.batch_error:
            try:
                self.on_batch(list(self.pending))
                self.pending.clear()
            except Exception as exc:  # the journal keeps these answers; stop sending, finish in-flight
                self.batch_error.append(exc)
                self.report.stop_reason = f"{ABORTED}: committing answers failed: {type(exc).__name__}"
                self.stop.set()

    async def _reserve(self, req: LLMRequest) -> tuple[int, float] | None:
        """Reserve ``req``'s worst case, waiting while requests in flight may free budget; None when it cannot
        fit (nothing in flight to wait for) or the run stops meanwhile."""
        est = self.budget.estimate(req.messages, self.params.max_tokens, self.model, self.prices)
        async with self.budget_cond:
            while not self.budget.fits(*est):
                if self.budget.in_flight == 0 or self.stop.is_set():
                    return None
                await self.budget_cond.wait()
            self.budget.reserve(*est)
        return est

    async def _worker(self, client: openai.AsyncOpenAI) -> None:
        """Take requests off the shared queue until it is empty or the run stops; a request that does not fit
        the budget goes back on the queue (reported as not sent) and stops the run."""
        while self.queue and not self.stop.is_set():
            req = self.queue.pop()
            est = await self._reserve(req)
            if est is None:
                if not self.stop.is_set():
                    self.report.stop_reason = self.budget.exhausted_reason()
                    self.stop.set()
                self.queue.append(req)
                return
            self.report.requested += 1
            self._record(req, await self._send(client, req, est))

    async def _send(self, client: openai.AsyncOpenAI, req: LLMRequest, est: tuple[int, float]) -> LLMResponse:
        """Send ``req`` as its own task, so the breaker can cancel it in flight (it then comes back failed);
        its reservation is settled either way and the workers waiting for budget are woken."""
        task = asyncio.create_task(_call(client, self.model, self.params, req, self.guard, self.prices, self.secret))
        self.inflight.add(task)
        try:
            await asyncio.wait({task})
        finally:
            self.inflight.discard(task)
        if task.cancelled():
            retries = max(0, self.guard.attempts[req.key] - 1)
            resp = LLMResponse(req.key, self.model, "failed", usage=Usage(retries=retries),
                               template_version=req.template_version,
                               error=(self.guard.reason or CIRCUIT) + "; cancelled in flight")
        else:
            resp = task.result()
        self.budget.settle(est, resp, req.messages)
        async with self.budget_cond:
            self.budget_cond.notify_all()
        return resp

    def _record(self, req: LLMRequest, resp: LLMResponse) -> None:
        """Count one answer; an ok one goes to the journal first, then into the batch for ``on_batch``."""
        report = self.report
        report.responses.append(resp)
        if resp.status == "ok":
            report.answered += 1
            report.tokens += resp.usage.tokens
            report.cost_usd += resp.usage.cost_usd
            if self.journal is not None:
                self.journal.append(resp)
            self.pending.append(resp)
            if len(self.pending) >= self.limits.batch_size:
                self._flush()
        else:
            report.failed += 1
            self.log(f"request {req.key[:8]} failed: {resp.error}")
        done = report.answered + report.failed
        if done % 10 == 0:
            self.log(f"{self.model}: {done}/{len(self.requests)} requests done ({report.failed} failed)")


async def run_requests(client: openai.AsyncOpenAI, model: str, params: SamplingParams, requests: list[LLMRequest],
                       on_batch: Callable[[list[LLMResponse]], None], limits: GenerationLimits = GenerationLimits(),
                       log: Callable[[str], None] = lambda _: None, prices: PriceTable | None = None,
                       journal: ResponseJournal | None = None, guard: EndpointGuard | None = None,
                       budget: TokenBudget | None = None) -> GenerationReport:
    """Send ``requests`` (none of them cached) and hand answers to ``on_batch`` as they arrive.

    Each answer goes to ``journal`` first (if given), then into a batch for ``on_batch``. If
    ``on_batch`` raises, no new request is sent, the ones in flight are allowed to finish (and are
    journaled, so they are not paid for again), and the error is re-raised at the end.
    ``guard`` and ``budget`` may be shared by several calls (one run over several models).
    """
    run = _Run(_CallSpec(model, params, prices or {}, secret_of(client)), requests, on_batch, limits, log, journal,
               guard or EndpointGuard(limits.max_consecutive_failures),
               budget or TokenBudget(limits.max_total_tokens, limits.max_total_cost_usd))
    if run.guard.is_open:
        return run.refused()
    await run.send_all(client)
    return run.finish()
