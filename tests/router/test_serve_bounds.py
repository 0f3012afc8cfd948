"""The MCP server bounds each call and says why one fails (issue 21, findings 5 and 9).

The router here is a test double whose stages the test holds and releases, so nothing depends on
timing: a call that waits is released by an event, not by a sleep. ``test_serve.py`` drives the real
server over stdio and HTTP, and checks the same errors there.
"""
from __future__ import annotations

import json
import threading

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
    escaped = json.dumps({"query": "\u2028" * MAX_QUERY_CHARS})  # every character escaped as \uXXXX
    assert len(escaped) < serve_module.MAX_BODY_BYTES < 1024 * 1024


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
