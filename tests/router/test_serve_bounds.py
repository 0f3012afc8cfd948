"""The MCP server bounds each call and says why one fails (issue 21, findings 5 and 9; issue 31, item 6), and its
file tools serve a skill's folder and nothing outside it (issue 34, MCP tools).

The router here is a test double whose stages the test holds and releases, so nothing depends on
timing: a call that waits is released by an event, not by a sleep. ``test_serve.py`` drives the real
server over stdio and HTTP, and checks the same errors there. The HTTP tests here serve the app
``skill-assets serve --transport http`` serves (``http_app``) under a real uvicorn, and talk to it
from raw sockets, so they can send any bytes and drop a connection mid-call. The file tools' tests
read a real pool (``load_pool``) written into a temporary folder, links and binary files included.
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
from pathlib import Path

import anyio
import pytest
from mcp import Client

from skill_assets.lib.retrieval import give_way
from skill_assets.lib.retrieval.pools import load_pool
from skill_assets.lib.retrieval.results import RankedSkill, RoutedRequest
from skill_assets.router import serve as serve_module
from skill_assets.router.cli import main as cli_main
from skill_assets.router.serve import (
    MAX_FILE_BYTES,
    MAX_LISTED_FILES,
    MAX_QUERY_CHARS,
    MAX_TOP_K,
    CallGate,
    build_server,
)

pytestmark = pytest.mark.timeout(600)


class Skill:
    id, name, description = "s", "docker", "compose networking"


class Pool(dict):
    """A published pool as the server reads it, per call: ``skill(id)``, or None (``PoolIndex.skill``)."""

    def skill(self, sid: str):
        return self.get(sid)


class HeldRouter:
    """Routes in stages (as ``Router.route`` does, a checkpoint before each); stage 1 waits for ``go``."""

    def __init__(self, skills: Iterable = (Skill(),)) -> None:
        self.pool = Pool({s.id: s for s in skills})  # what the server reads per call (``Engine.pool``)
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


def none_in_flight() -> bool:
    """Whether the answers in flight come back to none: the SDK may still be handing a message on after it sent its
    response (a notification's 202), and the count drops when the request's handling ends (a hang guard, not a
    timing)."""
    for _ in range(600):  # 60 s
        if give_way.answers._in_flight == 0:
            return True
        time.sleep(0.1)
    return False


def test_an_http_call_is_an_answer_in_flight_until_its_response_is_sent():
    """A re-index gives way to a call from the arrival of its POST's body until its response is sent (``give_way``):
    the stand-in router marks nothing itself, so what is in flight while it holds the call is the HTTP request."""
    router = HeldRouter()
    with http_server(router) as port:
        session = _open_session(port)
        assert none_in_flight()  # the session's own POSTs are over
        answered: list[int] = []
        caller = threading.Thread(target=lambda: answered.append(_post(port, _call_body("docker"), session)[0]))
        caller.start()
        assert router.started.wait(60)
        held = give_way.answers._in_flight
        router.go.set()
        caller.join(60)
        assert held == 1 and answered == [200] and none_in_flight()


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


LINT_MD = "---\nname: lint\ndescription: Lint Python files.\n---\nRun scripts/run.py; the rules: references/rules.md.\n"
RUN_PY, RULES_MD = "print('lint')\n", "# Rules\nNo unused imports.\n"
#: a long file whose cap falls inside a two-byte character: 1 + 2 * 150,000 bytes
LONG_TEXT = "a" + "é" * 150_000


def write_pool(root: Path) -> Path:
    """A folder pool: ``tools/lint`` with a script, a reference, a binary, ``.git``, and links out of its folder (to a
    file, to a folder); ``big`` whose SKILL.md and notes are over ``MAX_FILE_BYTES``; ``many`` with more files than
    ``open_skill`` lists; and ``other``, which ``tools/lint/../../other`` would reach."""
    pool = root / "pool"
    lint = pool / "tools" / "lint"
    for folder in (lint / "scripts", lint / "references", lint / ".git", pool / "big", pool / "many", pool / "other"):
        folder.mkdir(parents=True)
    (lint / "SKILL.md").write_text(LINT_MD, encoding="utf-8")
    (lint / "scripts" / "run.py").write_text(RUN_PY, encoding="utf-8")
    (lint / "references" / "rules.md").write_text(RULES_MD, encoding="utf-8")
    (lint / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (lint / ".git" / "config").write_text("[remote]\n url = https://token@example.com/x\n", encoding="utf-8")
    (root / "secret.txt").write_text("outside the pool\n", encoding="utf-8")
    (lint / "outside.md").symlink_to(root / "secret.txt")
    (lint / "linked").symlink_to(root, target_is_directory=True)
    (lint / "same.md").symlink_to(lint / "references" / "rules.md")  # a link inside the folder is served
    (pool / "big" / "SKILL.md").write_text(f"---\nname: big\ndescription: A long skill.\n---\n{LONG_TEXT}",
                                           encoding="utf-8")
    (pool / "big" / "notes.md").write_text(LONG_TEXT, encoding="utf-8")
    (pool / "many" / "SKILL.md").write_text("---\nname: many\ndescription: Many files.\n---\nSee the files.\n",
                                            encoding="utf-8")
    for i in range(MAX_LISTED_FILES + 5):
        (pool / "many" / f"f{i:04d}.txt").write_text(str(i), encoding="utf-8")
    (pool / "other" / "SKILL.md").write_text("---\nname: other\ndescription: Another skill.\n---\nBody.\n",
                                             encoding="utf-8")
    return pool


class PoolRouter(HeldRouter):
    """``HeldRouter`` over a real pool's skills, as ``load_pool`` reads them (from folders or a JSONL file)."""

    def __init__(self, pool: Path) -> None:
        load = load_pool(pool)
        assert {r.code for r in load.rejected} <= {"folder_symlink"}, load.rejected  # ``linked``, listed, not followed
        super().__init__(load.skills)


def _tool(router, tool: str, **arguments):
    async def main():
        async with Client(build_server(router)) as client:
            return await client.call_tool(tool, arguments)

    return anyio.run(main)


def _payload(result) -> dict:
    assert not result.is_error, _text(result)
    return result.structured_content or json.loads(_text(result))


@pytest.fixture
def pool_router(tmp_path) -> PoolRouter:
    return PoolRouter(write_pool(tmp_path))


def test_the_tools_tell_an_agent_when_to_use_each():
    async def main():
        async with Client(build_server(HeldRouter())) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    tools = anyio.run(main)
    assert list(tools) == ["route_skills", "open_skill", "read_skill_file"]
    assert "Call first" in tools["route_skills"].description
    assert "after route_skills" in tools["open_skill"].description
    assert "after open_skill" in tools["read_skill_file"].description
    assert all(t.annotations.read_only_hint for t in tools.values())


def test_open_skill_returns_the_whole_skill_md_and_the_files_of_its_folder(pool_router):
    payload = _payload(_tool(pool_router, "open_skill", skill_id="tools/lint"))
    assert payload["skill_id"] == "tools/lint" and payload["name"] == "lint"
    assert payload["skill_md"] == {"path": "SKILL.md", "bytes": len(LINT_MD), "text": LINT_MD, "cut": False}
    assert Path(payload["folder"]).is_absolute() and Path(payload["folder"]).name == "lint"
    listed = {f["path"]: f["bytes"] for f in payload["files"]}
    assert listed == {"SKILL.md": len(LINT_MD), "logo.png": 16, "same.md": len(RULES_MD),
                      "references/rules.md": len(RULES_MD), "scripts/run.py": len(RUN_PY)}  # not .git, no link out
    assert payload["files_cut"] is False
    assert payload["not_listed"] == {"link_outside_folder": 1, "folder_symlink": 1}


def test_open_skill_lists_a_bounded_number_of_files_and_says_so(pool_router):
    payload = _payload(_tool(pool_router, "open_skill", skill_id="many"))
    assert len(payload["files"]) == MAX_LISTED_FILES and payload["files_cut"] is True
    assert payload["files"][0]["path"] == "SKILL.md"
    assert f"more than {MAX_LISTED_FILES} files" in payload["files_note"]


@pytest.mark.parametrize("path", ["scripts/run.py", "./scripts/run.py", "same.md"])
def test_read_skill_file_returns_one_file_of_the_folder(pool_router, path):
    payload = _payload(_tool(pool_router, "read_skill_file", skill_id="tools/lint", path=path))
    expected = RUN_PY if "run" in path else RULES_MD
    assert payload == {"skill_id": "tools/lint", "path": path, "bytes": len(expected), "text": expected, "cut": False}


@pytest.mark.parametrize(("tool", "arguments"), [
    ("read_skill_file", {"skill_id": "big", "path": "notes.md"}),
    ("open_skill", {"skill_id": "big"}),
])
def test_an_over_size_file_comes_back_cut_and_says_so(pool_router, tool, arguments):
    payload = _payload(_tool(pool_router, tool, **arguments))
    answer = payload if tool == "read_skill_file" else payload["skill_md"]
    whole = (Path(pool_router.pool.skill("big").source).parent / answer["path"]).read_text(encoding="utf-8")
    assert answer["cut"] is True and answer["bytes"] == len(whole.encode("utf-8")) > MAX_FILE_BYTES
    assert whole.startswith(answer["text"])  # the head, cut before a character, not inside one
    assert MAX_FILE_BYTES - 3 < len(answer["text"].encode("utf-8")) <= MAX_FILE_BYTES
    assert f"the file is {answer['bytes']:,} bytes; only its first {MAX_FILE_BYTES:,}" in answer["note"]


@pytest.mark.parametrize(("tool", "arguments", "reason"), [
    ("read_skill_file", {"skill_id": "tools/lint", "path": "../../other/SKILL.md"}, "contains '..'"),
    ("read_skill_file", {"skill_id": "tools/lint", "path": "scripts/../../lint/SKILL.md"}, "contains '..'"),
    ("read_skill_file", {"skill_id": "tools/lint", "path": "/etc/passwd"}, "is absolute"),
    ("read_skill_file", {"skill_id": "tools/lint", "path": "outside.md"}, "leads outside the skill's folder"),
    ("read_skill_file", {"skill_id": "tools/lint", "path": "linked/secret.txt"}, "leads outside the skill's folder"),
    ("read_skill_file", {"skill_id": "tools/lint", "path": "logo.png"},
     "is not served: binary: file contains NUL bytes (only UTF-8 text files are served)"),
    ("read_skill_file", {"skill_id": "tools/lint", "path": ".git/config"}, "inside .git, which is never served"),
    ("read_skill_file", {"skill_id": "tools/lint", "path": "scripts"}, "not_regular_file"),
    ("read_skill_file", {"skill_id": "tools/lint", "path": "missing.md"}, "no file 'missing.md' in the skill's folder"),
    ("read_skill_file", {"skill_id": "tools/lint", "path": " "}, "path is empty"),
    ("read_skill_file", {"skill_id": "nope", "path": "SKILL.md"}, "no skill 'nope' in the pool"),
    ("open_skill", {"skill_id": "nope"}, "no skill 'nope' in the pool: pass a skill_id from route_skills' answer"),
    ("open_skill", {"skill_id": "x" * 5000}, "no skill 'xxxx"),
], ids=["dotdot", "dotdot-inside", "absolute", "link-out", "folder-link-out", "binary", "git", "folder", "missing",
        "empty", "unknown-id", "open-unknown-id", "open-long-id"])
def test_every_file_tool_refusal_carries_its_reason(pool_router, tool, arguments, reason):
    result = _tool(pool_router, tool, **arguments)
    assert result.is_error and reason in _text(result), _text(result)
    assert "outside the pool" not in _text(result)  # the file out of the folder is never read
    assert len(_text(result)) < 1000  # a long argument is not echoed whole


def test_a_jsonl_pool_skill_has_no_folder_and_the_file_tools_say_so(tmp_path):
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"id": "lint", "name": "lint", "description": "Lint Python files.",
                                "body": "Run ruff."}) + "\n", encoding="utf-8")
    router = PoolRouter(pool)
    payload = _payload(_tool(router, "open_skill", skill_id="lint"))
    assert payload["folder"] is None and payload["skill_md"] is None and payload["files"] == []
    assert payload["body"] == "Run ruff." and payload["body_cut"] is False
    assert "is a record of the JSONL pool" in payload["note"] and "no SKILL.md" in payload["note"]
    refused = _tool(router, "read_skill_file", skill_id="lint", path="SKILL.md")
    assert refused.is_error and f"is a record of the JSONL pool {pool}:1, not a folder" in _text(refused)


def test_the_file_tools_answer_while_a_routing_holds_the_one_routing_slot(pool_router):
    """Reads have their own gate: an agent opening a skill never waits behind another client's routing."""
    server = build_server(pool_router, gate=CallGate(slots=1))

    async def main():
        async with Client(server) as routing, Client(server) as reading:
            async with anyio.create_task_group() as tg:
                tg.start_soon(routing.call_tool, "route_skills", {"query": "lint"})
                assert await anyio.to_thread.run_sync(pool_router.started.wait, 30)
                opened = await reading.call_tool("open_skill", {"skill_id": "tools/lint"})
                stages_meanwhile = pool_router.stages_run  # still 1: the routing is held in its first stage
                tg.cancel_scope.cancel()
        return opened, stages_meanwhile

    opened, stages_meanwhile = anyio.run(main)
    pool_router.go.set()
    assert _payload(opened)["skill_md"]["text"] == LINT_MD and stages_meanwhile == 1
    assert pool_router.stopped.wait(30)
