"""A scripted, misbehaving OpenAI-compatible server: the faults real endpoints produce, on demand.

The reliability tests, the generation bench and a user checking a generator setup all inject
faults through it (``python -m skill_assets.lib.generation.fault_server generate ...``).

Real endpoints rate-limit, fail, stall, send broken bodies and drop connections; the generation
code must survive all of it without losing or double-paying an answer. This server answers
``POST /v1/chat/completions`` and ``GET /v1/models`` on 127.0.0.1 (free port, one thread per
connection) and plays a per-prompt script of actions; unscripted requests get the default
action (pass-through: a valid JSON decision after a fixed latency). It counts requests and
completed answers per prompt hash, so tests can prove that nothing was requested twice.

Actions (``name`` or ``name:arg``):
  ok            valid completion after ``latency_s`` (decision WRITE or SKIP, fixed per prompt)
  write / skip  valid completion with that decision
  invalid       valid completion whose text is not a decision (the record becomes INVALID)
  poisoned      valid completion whose text is hostile: a SKIP object whose reason opens 3,000 nested lists
  429[:s]       rate limited, ``Retry-After: s`` (default 1)
  500           server error
  401           bad API key (no retry fixes it)
  500_echo_auth server error whose body echoes the Authorization header (a careless proxy)
  401_echo_key:N 401 whose error message holds the bearer key at character N of the message
  401_echo_piece:A,B 401 whose error message holds only ``key[A:B]`` (a tail, a middle piece)
  slow[:s]      sleep ``s`` seconds (past the client timeout), then answer
  malformed     HTTP 200 with a body that is not JSON
  truncated     HTTP 200 whose body stops before Content-Length, then the connection closes
  drop          the connection closes without any response

Also a tiny CLI used by the kill-and-resume test and bench: ``python -m
skill_assets.lib.generation.fault_server generate --db D --url U --n N`` runs :func:`skill_assets.lib.generation.records.generate` over
:func:`synthetic_items`.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import socket
import sys
import threading
import time
from collections import Counter, defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MODEL = "fault-model"


def prompt_hash(messages: list[dict]) -> str:
    """The server's identity of a prompt: the same on the client side (tests) and here."""
    return hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def decision_text(h: str, decision: str | None = None) -> str:
    decision = decision or ("WRITE" if int(h, 16) % 2 == 0 else "SKIP")
    return json.dumps({
        "thought": f"prompt {h}",
        "decision": decision,
        "query": f"Please help me with task {h}: " + "details " * 20 if decision == "WRITE" else "",
        "reason": "" if decision == "WRITE" else f"the skills of {h} do not meet in one realistic request",
    })


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: FaultServer

    def handle_error(self, request, client_address) -> None:
        """A client that timed out or was killed resets its connection: expected here, not an error."""
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]}).encode())
        else:
            self._send(404, b'{"error": "not found"}')

    def do_POST(self) -> None:
        fs = self.server.owner
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, b'{"error": "not found"}')
            return
        try:
            payload = json.loads(body)
        except json.JSONDecodeError:
            self._send(400, b'{"error": {"message": "bad json"}}')
            return
        messages = payload.get("messages", [])
        h = prompt_hash(messages)
        action = fs._next_action(h, self.headers.get("Authorization", ""))
        name, _, arg = action.partition(":")
        try:
            self._play(fs, h, name, arg, messages, payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) or was killed

    def _play(self, fs: FaultServer, h: str, name: str, arg: str, messages: list[dict], payload: dict) -> None:
        if name == "429":
            self._send(429, b'{"error": {"message": "rate limited", "type": "rate_limit"}}',
                       {"Retry-After": arg or "1"})
        elif name == "500":
            self._send(500, b'{"error": {"message": "internal error"}}')
        elif name == "401":
            self._send(401, b'{"error": {"message": "invalid api key", "type": "invalid_request_error"}}')
        elif name == "500_echo_auth":
            msg = json.dumps({"error": {"message": f"upstream rejected headers: {self.headers.get('Authorization')}"}})
            self._send(500, msg.encode())
        elif name == "401_echo_key":
            key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            filler = "invalid api key; the request was rejected by the upstream gateway " * 20
            msg = filler[: int(arg or 0)] + key + " was not accepted"
            self._send(401, json.dumps({"error": {"message": msg, "type": "invalid_request_error"}}).encode())
        elif name == "401_echo_piece":
            key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            start, end = (int(x) if x else None for x in arg.split(","))
            msg = f"invalid api key ...{key[start:end]}... was not accepted"
            self._send(401, json.dumps({"error": {"message": msg, "type": "invalid_request_error"}}).encode())
        elif name == "malformed":
            self._send(200, b'{"id": "x", "choices": [ this is not json')
        elif name == "truncated":
            full = self._completion(fs, h, "ok", messages, payload)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(full)))
            self.end_headers()
            self.wfile.write(full[: len(full) // 2])
            self.wfile.flush()
            self.close_connection = True
        elif name == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        else:
            with fs.slot:  # a single-slot server (llama.cpp's) queues the rest and never stops a started generation
                with fs._lock:
                    fs.generations[h] += 1
                time.sleep(float(arg or fs.slow_s) if name == "slow" else fs.latency_s)
            self._send(200, self._completion(fs, h, name, messages, payload))
            with fs._lock:
                fs.completed[h] += 1

    @staticmethod
    def _completion(fs: FaultServer, h: str, name: str, messages: list[dict], payload: dict) -> bytes:
        if name == "invalid":
            text = "I am not sure what you want me to do here."
        elif name == "poisoned":
            text = '{"decision": "SKIP", "reason": ' + "[" * 3000
        else:
            text = decision_text(h, {"write": "WRITE", "skip": "SKIP"}.get(name))
        prompt_chars = sum(len(str(m.get("content", ""))) for m in messages)
        return json.dumps({
            "id": f"chatcmpl-{h}", "object": "chat.completion", "created": int(time.time()),
            "model": payload.get("model", MODEL),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": max(1, prompt_chars // 4), "completion_tokens": max(1, len(text) // 4),
                      "total_tokens": max(1, prompt_chars // 4) + max(1, len(text) // 4)},
        }).encode()


class FaultServer:
    """Start with ``with FaultServer() as fs:``; ``fs.url`` is the OpenAI base URL."""

    def __init__(self, latency_s: float = 0.0, slow_s: float = 3.0, default: str = "ok", slots: int | None = None) -> None:
        """``slots``: generations run at once (None: one per connection); the others wait their turn."""
        self.latency_s = latency_s
        self.slot = threading.Semaphore(slots) if slots else contextlib.nullcontext()
        self.generations: Counter[str] = Counter()
        self.slow_s = slow_s
        self.default = default
        self._scripts: dict[str, list[str]] = defaultdict(list)
        self._lock = threading.Lock()
        self.requests: Counter[str] = Counter()
        self.completed: Counter[str] = Counter()
        self.arrivals: dict[str, list[float]] = defaultdict(list)
        self.actions: list[tuple[str, str]] = []
        self.auth_headers: set[str] = set()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # scripting -----------------------------------------------------------------------------------
    def script(self, messages_or_hash: list[dict] | str, actions: list[str]) -> None:
        """Play ``actions`` on the next requests for this prompt, then the default."""
        h = messages_or_hash if isinstance(messages_or_hash, str) else prompt_hash(messages_or_hash)
        with self._lock:
            self._scripts[h].extend(actions)

    def clear_scripts(self) -> None:
        with self._lock:
            self._scripts.clear()

    def reset_counts(self) -> None:
        with self._lock:
            self.requests.clear()
            self.generations.clear()
            self.completed.clear()
            self.arrivals.clear()
            self.actions.clear()

    def _next_action(self, h: str, auth: str) -> str:
        with self._lock:
            self.requests[h] += 1
            self.arrivals[h].append(time.monotonic())
            self.auth_headers.add(auth)
            action = self._scripts[h].pop(0) if self._scripts.get(h) else self.default
            self.actions.append((h, action))
            return action

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())

    # lifecycle -----------------------------------------------------------------------------------
    def start(self) -> FaultServer:
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# --- synthetic work for tests and the bench ---------------------------------------------------------

DIRECTIONS = ("en2en", "en2zh", "zh2en", "zh2zh")


def synthetic_items(n: int, model: str = MODEL, prefix: str = "r") -> list:
    """``n`` distinct prompts shaped like the generator's (a system and a user message)."""
    from skill_assets.lib.generation.records import GenerationItem

    return [GenerationItem(f"{prefix}{i:06d}", model,
                           [{"role": "system", "content": "You build evaluation data for a skill router."},
                            {"role": "user", "content": f"Combination {prefix}{i}: judge skills A{i} and B{i}. "
                                                        + "Skill body text. " * 30}],
                           "tv-test", {"combination_id": f"{prefix}{i:06d}", "direction": DIRECTIONS[i % 4],
                                       "k": 1 + i % 3})
            for i in range(n)]


def _cli(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--db", required=True)
    g.add_argument("--url", required=True)
    g.add_argument("--n", type=int, required=True)
    g.add_argument("--concurrency", type=int, default=4)
    g.add_argument("--batch-size", type=int, default=8)
    args = ap.parse_args(argv)
    import openai

    from skill_assets.lib.generation.llm_client import GenerationLimits, SamplingParams
    from skill_assets.lib.generation.records import generate
    from skill_assets.lib.generation.response_cache import ResponseCache

    client = openai.AsyncOpenAI(base_url=args.url, api_key="not-needed", timeout=10, max_retries=2)
    out = generate(synthetic_items(args.n), client, SamplingParams(), ResponseCache(args.db),
                   GenerationLimits(concurrency=args.concurrency, batch_size=args.batch_size),
                   journal_path=Path(args.db).parent / "llm_journal" / "synthetic.jsonl")
    print(json.dumps({"requests_sent": out.requests_sent, "records": len(out.rows)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(_cli())
