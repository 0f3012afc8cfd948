"""The MCP server bounds each call and says why one fails (issue 21, findings 5 and 9; issue 31, item 6).

The router here is a test double whose stages the test holds and releases, so nothing depends on
timing: a call that waits is released by an event, not by a sleep. ``test_serve.py`` drives the real
server over stdio and HTTP, and checks the same errors there. The HTTP tests here serve the app
``skill-assets serve --transport http`` serves (``http_app``) under a real uvicorn, and talk to it
from raw sockets, so they can send any bytes and drop a connection mid-call.
"""
from __future__ import annotations

import http.client
import json
import logging
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import anyio
import pytest
from mcp import Client

from skill_assets.lib.retrieval.results import RankedSkill, RoutedRequest
from skill_assets.router import serve as serve_module
from skill_assets.router.cli import main as cli_main
from skill_assets.router.serve import MAX_QUERY_CHARS, MAX_TOP_K, CallGate, build_server

pytestmark = pytest.mark.timeout(600)


class Skill:
    name, description = "docker", "compose networking"


class HeldRouter:
    """Routes in stages (as ``Router.route`` does, a checkpoint before each); stage 1 waits for ``go``."""

    skill_by_id = {"s": Skill()}

    def __init__(self) -> None:
        self.started, self.go, self.stopped = threading.Event(), threading.Event(), threading.Event()
        self.stages_run = 0

    def route(self, queries, top_k, checkpoint):
        try:
            for stage in range(3):
                checkpoint()
                self.stages_run += 1
                if stage == 0:
                    self.started.set()
                    self.go.wait(60)
        except BaseException:
            self.stopped.set()
            raise
        return [RoutedRequest([RankedSkill("s", 1.0, {"fused": 1.0})], ["s"])]


class PollingRouter(HeldRouter):
    """Like ``HeldRouter``, but stage 1 keeps reaching checkpoints while it waits for ``go``, as a long routing
    does between its chunks: the call stops there once it is over, with no release from the test."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def route(self, queries, top_k, checkpoint):
        self.calls += 1
        try:
            checkpoint()
            self.stages_run += 1
            self.started.set()
            for _ in range(1200):  # a hang guard only: 60 s
                if self.go.wait(0.05):
                    break
                checkpoint()
            for _ in range(2):
                checkpoint()
                self.stages_run += 1
        except BaseException:
            self.stopped.set()
            raise
        return [RoutedRequest([RankedSkill("s", 1.0, {"fused": 1.0})], ["s"])]


class CountingGate(CallGate):
    """A ``CallGate`` that counts the calls handed to it, so a test knows a call reached it before its client left."""

    def __init__(self, slots: int) -> None:
        super().__init__(slots=slots)
        self.entered = 0

    async def run(self, *args):
        self.entered += 1
        return await super().run(*args)


class FailingRouter(HeldRouter):
    def route(self, queries, top_k, checkpoint):
        raise ValueError("index is corrupt")


def _text(result) -> str:
    return " ".join(c.text for c in result.content)


async def _call(server, **arguments):
    async with Client(server) as client:
        return await client.call_tool("route_skills", arguments)


@pytest.mark.parametrize(("arguments", "reason"), [
    ({"query": "docker", "top_k": 0}, f"top_k is 0; it must be between 1 and {MAX_TOP_K}"),
    ({"query": "docker", "top_k": -1}, f"top_k is -1; it must be between 1 and {MAX_TOP_K}"),
    ({"query": "docker", "top_k": 10**9}, f"top_k is 1000000000; it must be between 1 and {MAX_TOP_K}"),
    ({"query": "  \n"}, "query is empty"),
    ({"query": "x" * (MAX_QUERY_CHARS + 1)}, f"the limit is {MAX_QUERY_CHARS:,}"),
])
def test_every_refusal_carries_its_reason(arguments, reason):
    router = HeldRouter()
    result = anyio.run(lambda: _call(build_server(router), **arguments))
    assert result.is_error and reason in _text(result), _text(result)
    assert router.stages_run == 0  # refused before any work


def test_an_unexpected_failure_carries_its_reason():
    result = anyio.run(lambda: _call(build_server(FailingRouter()), query="docker"))
    assert result.is_error and "routing failed: ValueError: index is corrupt" in _text(result), _text(result)


def test_a_call_past_its_time_fails_with_the_reason_and_its_work_stops():
    router = HeldRouter()
    gate = CallGate(seconds=0.2)

    async def main():
        result = await _call(build_server(router, gate=gate), query="docker")
        router.go.set()  # release stage 1 only after the client has its answer
        return result

    result = anyio.run(main)
    assert result.is_error and "did not finish within 0.2 s" in _text(result), _text(result)
    assert router.stopped.wait(30) and router.stages_run == 1  # stopped at the next checkpoint


def test_a_call_whose_client_is_gone_stops_and_a_queued_one_never_starts():
    running, queued = HeldRouter(), HeldRouter()
    gate = CallGate(slots=1)

    async def main():
        async with Client(build_server(running, gate=gate)) as a, Client(build_server(queued, gate=gate)) as b:
            async with anyio.create_task_group() as tg:
                tg.start_soon(a.call_tool, "route_skills", {"query": "first"})
                await anyio.to_thread.run_sync(running.started.wait, 30)
                tg.start_soon(b.call_tool, "route_skills", {"query": "second"})  # waits for the one slot
                await anyio.sleep(0.2)
                tg.cancel_scope.cancel()  # both clients give up
        running.go.set()

    anyio.run(main)
    assert running.stopped.wait(30) and running.stages_run == 1
    assert queued.stages_run == 0 and not queued.started.is_set()


def test_a_call_that_finishes_returns_the_run_line_fields():
    router = HeldRouter()
    router.go.set()
    result = anyio.run(lambda: _call(build_server(router), query="docker", top_k=1))
    payload = result.structured_content or json.loads(_text(result))
    assert not result.is_error and payload["selected"] == ["s"]
    assert payload["ranking"][0] == {"skill_id": "s", "score": 1.0, "signals": {"fused": 1.0},
                                     "name": "docker", "description": "compose networking"}


def test_http_body_limit_admits_the_longest_query():
    escaped = json.dumps({"query": "\U0001F600" * MAX_QUERY_CHARS})  # every character as 12 bytes: \ud83d\ude00
    assert len(escaped) < serve_module.MAX_BODY_BYTES < 1024 * 1024


@contextmanager
def http_server(router, gate: CallGate | None = None) -> Iterator[int]:
    """Serve ``router`` as ``skill-assets serve --transport http`` does (``http_app`` under uvicorn); yields the
    port. On exit the router is released, so no call outlives the test."""
    import uvicorn

    app = serve_module.http_app(build_server(router, gate=gate))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    listening = socket.create_server(("127.0.0.1", 0))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    try:
        for _ in range(600):  # a hang guard only: 60 s
            if server.started or not thread.is_alive():
                break
            time.sleep(0.1)
        assert server.started, "uvicorn did not start"
        yield listening.getsockname()[1]
    finally:
        router.go.set()
        server.should_exit = True
        thread.join(60)
        listening.close()


HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def _post(port: int, body: bytes | Iterable[bytes], headers: dict[str, str]) -> tuple[int, dict[str, str], str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        connection.request("POST", "/mcp", body, headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode()
    finally:
        connection.close()


def _open_session(port: int) -> dict[str, str]:
    """Initialize an MCP session; the headers every later request of it carries."""
    version = "2025-06-18"
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    status, headers, _ = _post(port, json.dumps(hello).encode(), HEADERS)
    assert status == 200, status
    session = {**HEADERS, "mcp-session-id": headers["mcp-session-id"], "mcp-protocol-version": version}
    status, _, _ = _post(port, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(), session)
    assert status == 202, status
    return session


def _call_body(query: str, request_id: int = 2) -> bytes:
    """A tools/call with every non-ASCII character escaped, as ``json.dumps`` writes it by default."""
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": "route_skills", "arguments": {"query": query}}}).encode()


def _send(port: int, session: dict[str, str], body: bytes) -> socket.socket:
    """Send a request whole on a raw connection, which the test then closes unread, as a client that gives up."""
    head = "".join(f"{name}: {value}\r\n" for name, value in session.items())
    raw = socket.create_connection(("127.0.0.1", port))
    raw.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{head}Content-Length: {len(body)}\r\n\r\n"
                .encode() + body)
    return raw


def _sse_result(text: str) -> dict:
    """The JSON-RPC result carried by an SSE answer's data line."""
    data = [line[len("data: "):] for line in text.splitlines() if line.startswith("data: ")]
    return json.loads(data[-1])["result"]


def test_http_calls_whose_clients_close_the_connection_stop_and_queued_ones_never_start(caplog):
    caplog.set_level(logging.INFO, logger=serve_module.log.name)
    router, gate = PollingRouter(), CountingGate(slots=1)
    with http_server(router, gate=gate) as port:
        session = _open_session(port)
        first = _send(port, session, _call_body("first", 2))
        assert router.started.wait(30)
        queued = [_send(port, session, _call_body("queued", i)) for i in (3, 4)]  # the first holds the one slot
        for _ in range(300):  # a hang guard only: 30 s for them to reach the gate (a request whose client
            if gate.entered == 3:  # leaves before its body is read is never dispatched at all)
                break
            time.sleep(0.1)
        assert gate.entered == 3
        for client in (first, *queued):
            client.close()  # every client gives up: no cancel notification, no session delete

        def stops() -> int:
            return sum("route_skills stopped" in r.getMessage() for r in caplog.records)

        for _ in range(300):  # a hang guard only: 30 s for the three calls to be seen stopped
            if stops() == 3:
                break
            time.sleep(0.1)
        assert stops() == 3, [r.getMessage() for r in caplog.records]
        assert router.stopped.is_set() and router.stages_run == 1  # stopped mid-stage 1, with no release
        assert router.calls == 1  # the queued calls never started


@pytest.mark.parametrize(("characters", "routed"), [(MAX_QUERY_CHARS - 1, True), (MAX_QUERY_CHARS + 1, False)])
def test_http_limits_count_characters_of_the_decoded_query(characters, routed):
    router = HeldRouter()
    router.go.set()
    body = _call_body("\U0001F600" * characters)  # 12 bytes a character on the wire: \ud83d\ude00
    assert len(body) > 6 * MAX_QUERY_CHARS  # the old byte limit refused it with a bare 413
    with http_server(router) as port:
        status, _, text = _post(port, body, _open_session(port))
    assert status == 200, (status, text[:200])
    result = _sse_result(text)
    if routed:
        assert not result.get("isError") and result["structuredContent"]["selected"] == ["s"], text[:500]
    else:
        assert result["isError"] and f"query is {characters:,} characters; the limit is {MAX_QUERY_CHARS:,}" in \
            result["content"][0]["text"], text[:500]
        assert router.stages_run == 0


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_an_http_body_over_the_byte_limit_is_refused_with_the_reason(declared):
    router = HeldRouter()
    body = _call_body("docker") + b" " * serve_module.MAX_BODY_BYTES
    with http_server(router) as port:
        session = _open_session(port)
        if declared:
            status, headers, text = _post(port, body, session)
        else:
            chunks = iter(body[i:i + 65536] for i in range(0, len(body), 65536))
            status, headers, text = _post(port, chunks, session)  # no length: http.client sends it chunked
    assert status == 413 and headers.get("content-type") == "application/json", (status, headers)
    message = json.loads(text)["error"]["message"]
    assert f"request body is over {serve_module.MAX_BODY_BYTES:,} bytes" in message, message
    assert f"a query of up to {MAX_QUERY_CHARS:,} characters" in message, message
    assert router.stages_run == 0


@pytest.mark.parametrize("port", ["99999", "0", "-1"])
def test_serve_refuses_a_bad_port_in_one_line_before_indexing(port, tmp_path, capsys, monkeypatch):
    def must_not_index(args):
        raise AssertionError("the pool was indexed before the port was checked")

    monkeypatch.setattr("skill_assets.router.cli.open_router", must_not_index)
    rc = cli_main(["serve", "--pool", str(tmp_path), "--transport", "http", "--port", port])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err == f"skill-assets serve: error: --port {port} is not a TCP port (1 to 65535)"


def test_serve_refuses_a_port_in_use_in_one_line_before_indexing(tmp_path, capsys, monkeypatch):
    import socket

    monkeypatch.setattr("skill_assets.router.cli.open_router", lambda args: pytest.fail("indexed first"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        rc = cli_main(["serve", "--pool", str(tmp_path), "--transport", "http", "--port", str(port)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and f"cannot listen on 127.0.0.1:{port}" in err
