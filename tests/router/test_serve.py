"""``skill-assets serve``: the MCP tool round trip with the SDK's own client, over stdio and streamable HTTP, a
stdio client that leaves mid-call, and the file tools over a copy of the pool with files beside its SKILL.md files."""
import asyncio
import json
import os
import shutil
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


def _serve_args(toy, *extra: str, pool: Path | None = None) -> list[str]:
    *_, model, root = toy
    return ["-m", "skill_assets.cli", "serve", "--pool", str(pool or root / "pool"), "--cache-dir", str(root / "cache"),
            "--fusion", str(model), "--db", str(root / "no-store.duckdb"), "--ready", "full", *extra]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


async def _call(server) -> dict:
    async with Client(server, read_timeout_seconds=300) as client:
        tools = await client.list_tools()
        assert [t.name for t in tools.tools] == ["route_skills", "open_skill", "read_skill_file"]
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
    assert payload["signals_used"] == ["bm25", "dense", "multilingual", "gloss"]  # --ready full: every index before serving
    assert len(payload["ranking"]) == 3
    assert payload["ranking"][0]["skill_id"] == "devops/docker-compose-networking"
    assert {"skill_id", "score", "signals", "name", "description"} <= set(payload["ranking"][0])
    assert set(payload["ranking"][0]["signals"]) == {"bm25", "dense", "multilingual", "gloss", "fused"}
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


def test_open_skill_and_read_skill_file_over_stdio(toy, tmp_path):
    """Issue 34, MCP tools: the real server serves a routed skill's SKILL.md and files, and refuses what lies outside
    its folder or is not text, with the reason."""
    *_, root = toy
    pool = shutil.copytree(root / "pool", tmp_path / "pool")
    folder = pool / "devops" / "docker-compose-networking"
    (folder / "scripts").mkdir()
    (folder / "scripts" / "check.sh").write_text("docker network ls\n", encoding="utf-8")
    (folder / "diagram.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (tmp_path / "secret.txt").write_text("outside the pool\n", encoding="utf-8")
    (folder / "outside.md").symlink_to(tmp_path / "secret.txt")
    params = StdioServerParameters(command=sys.executable, args=_serve_args(toy, pool=pool), env=_env(),
                                   cwd=str(REPO))

    async def main():
        async with Client(params, read_timeout_seconds=300) as client:
            routed = await client.call_tool("route_skills", {"query": QUERY, "top_k": 3})
            skill_id = routed.structured_content["selected"][0]
            opened = await client.call_tool("open_skill", {"skill_id": skill_id})
            read = await client.call_tool("read_skill_file", {"skill_id": skill_id, "path": "scripts/check.sh"})
            asked = ((skill_id, "../../vcs/git-interactive-rebase/SKILL.md"), (skill_id, str(folder / "SKILL.md")),
                     (skill_id, "outside.md"), (skill_id, "diagram.png"), ("nope", "SKILL.md"))
            refused = [await client.call_tool("read_skill_file", {"skill_id": sid, "path": p}) for sid, p in asked]
            return skill_id, opened, read, refused

    skill_id, opened, read, refused = asyncio.run(main())
    assert skill_id == "devops/docker-compose-networking"
    assert not opened.is_error and not read.is_error, (opened, read)
    skill_md = (folder / "SKILL.md").read_text(encoding="utf-8")
    assert opened.structured_content["skill_md"]["text"] == skill_md and skill_md.startswith("---\nname:")
    assert {f["path"] for f in opened.structured_content["files"]} == {"SKILL.md", "diagram.png", "scripts/check.sh"}
    assert read.structured_content["text"] == "docker network ls\n"
    reasons = ["contains '..'", "is absolute", "leads outside the skill's folder", "binary: file contains NUL bytes",
               "no skill 'nope' in the pool"]
    for result, reason in zip(refused, reasons, strict=True):
        assert result.is_error and reason in result.content[0].text, (reason, result)
