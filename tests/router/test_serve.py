"""``skill-assets serve``: the MCP tool round trip with the SDK's own client, over stdio and streamable HTTP, and a
stdio client that leaves mid-call."""
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from skill_assets.router.serve import MAX_QUERY_CHARS  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
QUERY = "我的 docker compose 里的几个容器互相访问不到"


def _serve_args(toy, *extra: str) -> list[str]:
    *_, model, root = toy
    return ["-m", "skill_assets.cli", "serve", "--pool", str(root / "pool"), "--cache-dir", str(root / "cache"),
            "--fusion", str(model), "--db", str(root / "no-store.duckdb"), "--ready", "full", *extra]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


async def _call(server) -> dict:
    async with Client(server, read_timeout_seconds=300) as client:
        tools = await client.list_tools()
        assert [t.name for t in tools.tools] == ["route_skills"]
        result = await client.call_tool("route_skills", {"query": QUERY, "top_k": 3})
        assert not result.is_error, result
        for bad, reason in (({"query": QUERY, "top_k": 0}, "top_k is 0; it must be between 1 and 50"),
                            ({"query": " "}, "query is empty"),
                            ({"query": "x" * (MAX_QUERY_CHARS + 1)}, f"the limit is {MAX_QUERY_CHARS:,}")):
            refused = await client.call_tool("route_skills", bad)  # the real server says why, not just "Error"
            assert refused.is_error and reason in refused.content[0].text, refused
        return result.structured_content or json.loads(result.content[0].text)


def _check(payload: dict) -> None:
    assert set(payload) >= {"id", "ranking", "selected", "signals_used"}
    assert payload["signals_used"] == ["bm25", "dense", "multilingual"]  # --ready full: every index before serving
    assert len(payload["ranking"]) == 3
    assert payload["ranking"][0]["skill_id"] == "devops/docker-compose-networking"
    assert {"skill_id", "score", "signals", "name", "description"} <= set(payload["ranking"][0])
    assert set(payload["ranking"][0]["signals"]) == {"bm25", "dense", "multilingual", "fused"}
    assert payload["selected"] and payload["selected"][0] == payload["ranking"][0]["skill_id"]


def test_route_skills_over_stdio(toy):
    params = StdioServerParameters(command=sys.executable, args=_serve_args(toy), env=_env(), cwd=str(REPO))
    _check(asyncio.run(_call(params)))


def test_route_skills_over_streamable_http_on_localhost(toy):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, *_serve_args(toy, "--transport", "http", "--port", str(port))],
                            env=_env(), cwd=str(REPO), stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 1800  # a hang guard only
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"server exited: {proc.stderr.read()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        _check(asyncio.run(_call(f"http://127.0.0.1:{port}/mcp")))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_stdio_client_that_leaves_mid_call_ends_the_server_cleanly(toy, tmp_path):
    """Issue 31, item 6: the server exited with a ``BrokenPipeError`` traceback (exit 1) once its client had gone."""
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "route_skills", "arguments": {"query": QUERY * 600}}}  # 18,000 characters
    with open(tmp_path / "stderr.txt", "w+") as err:
        proc = subprocess.Popen([sys.executable, *_serve_args(toy)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=err, env=_env(), cwd=str(REPO))
        try:
            proc.stdin.write(json.dumps(hello).encode() + b"\n")
            proc.stdin.flush()
            assert b'"id":1' in proc.stdout.readline()  # serving
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode() + b"\n")
            proc.stdout.close()  # the client stops reading first, so whatever the server answers meets a closed pipe
            proc.stdin.write(json.dumps(call).encode() + b"\n")
            proc.stdin.close()  # and leaves mid-call
            rc = proc.wait(timeout=300)  # a hang guard only
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        err.seek(0)
        stderr = err.read()
    assert rc == 0 and "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr[-3000:]
