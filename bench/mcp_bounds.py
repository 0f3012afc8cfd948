"""What one MCP client can cost the server: `skill-assets serve --transport http` under hostile and crowded use.

    .venv/bin/python bench/mcp_bounds.py [--pool-size 10000] [--sessions 240] [--abandoned 8] [--work-dir DIR]

Builds the pool as ``bench/first_answer.py`` does (the shared corpus beside the repository, padded with
deterministic variants, one JSONL file in a fresh folder; nothing is copied into the repository), starts
the real server over streamable HTTP on 127.0.0.1 with every index built (``--ready full``), and reads
the server process's CPU seconds and resident memory from ``/proc`` (its peak is reset before each phase
through ``clear_refs``) while it is driven with the MCP SDK's own client:

1. the longest request the tool routes (``MAX_QUERY_CHARS`` characters of corpus text): wall time,
   server CPU, peak memory over the baseline;
2. a 4.19 MB request body (what the SDK's default limit let through before): the HTTP status, server CPU;
3. ``--abandoned`` clients that each send the longest request and disconnect after ``--disconnect-after``
   seconds: server CPU spent after the last one left, seconds until the server is idle again, memory then;
   once with the SDK's client, once with raw TCP sockets (no HTTP client library: the bytes of an
   ``initialize``, its notification and a call of ``MAX_QUERY_CHARS`` - 1 characters, then ``close()``
   mid-call, as issue 31 finding 6 left);
4. ``--sessions`` sessions at once, each with its own client and one request: how many were answered
   with the same ranking a lone sequential call got, the errors by reason, wall time and peak memory.

The figures the issue (21, finding 5) names: the 4.19 MB query took 368 s of CPU and +650 MB; disconnected
clients left about 250 s of work running and memory went 1.9 → 4.4 GB and stayed at 3.0 GB; 240 concurrent
sessions were answered correctly. Ends with ONE JSON line of the figures and writes its section into
docs/RESULTS.md.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import numpy as np
from mcp.types import LATEST_PROTOCOL_VERSION

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from first_answer import call, load, write_jsonl_pool  # noqa: E402
from results_doc import write_section  # noqa: E402
from route_latency import sample_queries  # noqa: E402
from shared_corpus import add_pool_arguments, corpus_pool  # noqa: E402

from skill_assets.lib.common.processes import read_stat  # noqa: E402
from skill_assets.router.routing import stderr_log  # noqa: E402
from skill_assets.router.serve import CALL_SECONDS, CONCURRENT_CALLS, MAX_BODY_BYTES, MAX_QUERY_CHARS  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
#: the body that reached the tool before the limit (the SDK's default allowed 4 MiB): 4.19 MB of JSON
OVERSIZE_BODY_BYTES = 4_190_000
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class ServerProcess:
    """The server's CPU seconds and memory, read from ``/proc/<pid>``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def cpu_s(self) -> float:
        stat = read_stat(self.pid)
        if stat is None:
            raise RuntimeError(f"the server (pid {self.pid}) has exited")
        return (int(stat[1][11]) + int(stat[1][12])) / CLOCK_TICKS  # utime + stime, every thread

    def _status_mb(self, key: str) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return round(int(line.split()[1]) / 1024, 1)
        raise KeyError(key)

    def rss_mb(self) -> float:
        return self._status_mb("VmRSS")

    def peak_mb(self) -> float:
        return self._status_mb("VmHWM")

    def reset_peak(self) -> None:
        Path(f"/proc/{self.pid}/clear_refs").write_text("5")  # VmHWM back to the current RSS

    async def idle_after(self, since: float, quiet_s: float = 2.0, busy_share: float = 0.1,
                         max_wait: float = 900.0) -> float:
        """Seconds from ``since`` (a ``perf_counter``) until the server used under ``busy_share`` of a core for
        ``quiet_s`` seconds on end: how long work nobody is waiting for kept running."""
        window: list[tuple[float, float]] = [(time.perf_counter(), self.cpu_s())]
        while time.perf_counter() - since < max_wait:
            await asyncio.sleep(0.25)
            window.append((time.perf_counter(), self.cpu_s()))
            while window[-1][0] - window[1][0] >= quiet_s:
                window.pop(0)
            (t0, c0), (t1, c1) = window[0], window[-1]
            if t1 - t0 >= quiet_s and (c1 - c0) / (t1 - t0) < busy_share:
                return round(t0 - since, 2)
        raise TimeoutError(f"the server was still busy {max_wait:.0f} s after its clients left")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def add_server_arguments(ap: argparse.ArgumentParser) -> None:
    """The options of a bench that starts the server over a work folder (``start_server``)."""
    ap.add_argument("--max-wait", type=float, default=7200.0, help="give up on the server's start after this long")
    ap.add_argument("--work-dir", help="folder for the pool, the index cache and the server's log (default: a new "
                                       "temporary folder, removed at the end); reused, its cache makes a rerun fast")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--no-results-doc", action="store_true", help="do not write docs/RESULTS.md")


def start_server(pool_path: Path, cache: Path, port: int, log_path: Path, max_wait: float,
                 extra: Sequence[str] = ()) -> subprocess.Popen:
    """``skill-assets serve --transport http --ready full`` (and ``extra`` options), once it listens."""
    argv = [sys.executable, "-m", "skill_assets.cli", "serve", "--pool", str(pool_path), "--cache-dir", str(cache),
            "--db", str(cache.parent / "no-store.duckdb"), "--ready", "full", "--transport", "http",
            "--port", str(port), *extra]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(argv, env=env, cwd=str(REPO), stderr=log_path.open("w"), stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + max_wait  # a hang guard: the first build of a large pool takes minutes
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited ({proc.returncode}); its log: {log_path}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise TimeoutError(f"the server did not listen within {max_wait:.0f} s")


def longest_query(pool) -> str:
    """``MAX_QUERY_CHARS`` characters of real skill text, as a pasted log or spec would be."""
    text = ""
    for skill in pool:
        text += skill.body + "\n"
        if len(text) >= MAX_QUERY_CHARS:
            break
    return text[:MAX_QUERY_CHARS]


async def measured(server: ServerProcess, work) -> tuple[object, dict]:
    """``work``'s result, its wall seconds, the server's CPU seconds and peak memory over the RSS before."""
    server.reset_peak()
    rss, cpu, t = server.rss_mb(), server.cpu_s(), time.perf_counter()
    result = await work
    return result, {"s": round(time.perf_counter() - t, 2), "cpu_s": round(server.cpu_s() - cpu, 2),
                    "peak_over_mb": round(server.peak_mb() - rss, 1)}


async def one_call(url: str, query: str, timeout: float) -> dict:
    from mcp import Client

    async with Client(url, read_timeout_seconds=timeout) as client:
        return await call(client, query)


async def longest_phase(url: str, server: ServerProcess, query: str) -> dict:
    answer, figures = await measured(server, one_call(url, query, 900))
    return {**figures, "chars": len(query), "answered": bool(answer["ranking"])}


async def oversize_phase(url: str, server: ServerProcess) -> dict:
    import httpx

    envelope = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "route_skills", "arguments": {"query": ""}}}
    padding = OVERSIZE_BODY_BYTES - len(json.dumps(envelope))
    envelope["params"]["arguments"]["query"] = "x" * padding
    body = json.dumps(envelope).encode()

    async def post() -> int:
        async with httpx.AsyncClient(timeout=900) as http:
            response = await http.post(url, content=body, headers={"Content-Type": "application/json",
                                                                  "Accept": "application/json, text/event-stream"})
            return response.status_code

    status, figures = await measured(server, post())
    return {**figures, "bytes": len(body), "status": status}


async def raw_socket_call(port: int, query: str) -> dict:
    """One route_skills call written as bytes on a TCP socket (no HTTP client library), its answer awaited there;
    cancelled, the socket is closed mid-call and nothing tells the server why. One request of the current
    protocol (``LATEST_PROTOCOL_VERSION``): its version and the client's capabilities travel in ``params._meta``
    and are repeated in the ``Mcp-*`` headers, so no ``initialize`` or session comes first."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "route_skills", "arguments": {"query": query, "top_k": 10},
        "_meta": {"io.modelcontextprotocol/protocolVersion": LATEST_PROTOCOL_VERSION,
                  "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
    head = ["POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", "Content-Type: application/json",
            "Accept: application/json, text/event-stream", f"Content-Length: {len(body)}",
            f"Mcp-Protocol-Version: {LATEST_PROTOCOL_VERSION}", "Mcp-Method: tools/call", "Mcp-Name: route_skills",
            "Connection: close"]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await writer.drain()
        answer = await reader.read()  # to the end: "Connection: close" ends it once the call is answered
        status, _, rest = answer.partition(b"\r\n")
        if not status.startswith(b"HTTP/1.1 200") or b'"result"' not in rest:
            raise RuntimeError(f"the raw call was not answered: {answer[:300].decode('utf-8', 'replace')}")
        return {"answer_bytes": len(answer)}
    finally:
        writer.close()


async def abandoned_phase(server: ServerProcess, client: Callable[[], Awaitable[dict]], clients: int,
                          after: float) -> dict:
    """``clients`` sessions each make one call with ``client()`` and are gone ``after`` seconds later, unanswered."""
    rss, cpu = server.rss_mb(), server.cpu_s()
    server.reset_peak()
    tasks = [asyncio.create_task(client()) for _ in range(clients)]
    await asyncio.sleep(after)
    for task in tasks:
        task.cancel()
    outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    errors = Counter(f"{type(o).__name__}: {o}"[:160] for o in outcomes
                     if isinstance(o, BaseException) and not isinstance(o, asyncio.CancelledError))
    left, cpu_left = time.perf_counter(), server.cpu_s()
    idle_s = await server.idle_after(left)
    return {"clients": clients, "disconnect_after_s": after,
            "answered_before_leaving": sum(isinstance(o, dict) for o in outcomes),
            "errors": dict(errors),
            "cpu_s_before_leaving": round(cpu_left - cpu, 2),
            "cpu_s_after_leaving": round(server.cpu_s() - cpu_left, 2),
            "busy_after_leaving_s": idle_s, "peak_over_mb": round(server.peak_mb() - rss, 1),
            "rss_before_mb": rss, "rss_after_mb": server.rss_mb()}


async def sessions_phase(url: str, server: ServerProcess, queries: list[str]) -> dict:
    """One lone call per query in one session (the reference), then every query at once, a session each."""
    from mcp import Client

    async with Client(url, read_timeout_seconds=900) as client:
        reference = {}
        lone_ms = []
        for q in queries:
            t = time.perf_counter()
            reference[q] = [r["skill_id"] for r in (await call(client, q))["ranking"]]
            lone_ms.append((time.perf_counter() - t) * 1000)

    async def ranking(q: str) -> list[str]:
        return [r["skill_id"] for r in (await one_call(url, q, 900))["ranking"]]

    outcomes, figures = await measured(server, asyncio.gather(*(ranking(q) for q in queries), return_exceptions=True))
    errors = Counter(str(o).split(";")[0][:120] for o in outcomes if isinstance(o, BaseException))
    return {**figures, "sessions": len(queries),
            "answered": sum(not isinstance(o, BaseException) for o in outcomes),
            "same_as_alone": sum(o == reference[q] for q, o in zip(queries, outcomes)),
            "errors": dict(errors), "lone_call_p50_ms": round(float(np.percentile(lone_ms, 50)), 1),
            "lone_call_p95_ms": round(float(np.percentile(lone_ms, 95)), 1)}


async def warm_up(url: str, query: str, tries: int = 3) -> None:
    """One answered call, so models and indexes are loaded before anything is measured. From a warm index cache the
    server loads its query encoders at the first call, which on a busy machine can pass the server's call limit
    (``CALL_SECONDS``): that call is tried again."""
    for attempt in range(1, tries + 1):
        try:
            await one_call(url, query, 900)
            return
        except Exception as exc:  # noqa: BLE001 - the SDK client wraps the tool's refusal in an ExceptionGroup
            if attempt == tries:
                raise
            stderr_log(f"warm-up call {attempt} not answered ({type(exc).__name__}); trying again")


async def drive(url: str, port: int, server: ServerProcess, pool, queries: list[str], args) -> dict:
    query = longest_query(pool)
    await warm_up(url, queries[0])
    out = {"rss_warm_mb": server.rss_mb()}
    out["longest_query"] = await longest_phase(url, server, query)
    stderr_log(f"longest query: {out['longest_query']}")
    out["oversize_body"] = await oversize_phase(url, server)
    stderr_log(f"oversize body: {out['oversize_body']}")
    out["abandoned"] = await abandoned_phase(server, lambda: one_call(url, query, 900), args.abandoned,
                                             args.disconnect_after)
    stderr_log(f"abandoned calls: {out['abandoned']}")
    raw_query = query[:MAX_QUERY_CHARS - 1]
    out["abandoned_raw_socket"] = {**await abandoned_phase(server, lambda: raw_socket_call(port, raw_query),
                                                           args.abandoned, args.disconnect_after),
                                   "chars": len(raw_query)}
    stderr_log(f"abandoned raw-socket calls: {out['abandoned_raw_socket']}")
    out["concurrent"] = await sessions_phase(url, server, queries)
    stderr_log(f"concurrent sessions: {out['concurrent']}")
    out["rss_end_mb"] = server.rss_mb()
    return out


def table(out: dict) -> str:
    lq, ob, ab, cs = out["longest_query"], out["oversize_body"], out["abandoned"], out["concurrent"]
    raw = out["abandoned_raw_socket"]
    limits = out["limits"]
    rows = [
        (f"longest request routed ({lq['chars']:,} characters)", f"{lq['s']} s wall, {lq['cpu_s']} s CPU, "
         f"+{lq['peak_over_mb']} MB peak", "a 4.19 MB query: 368 s CPU, +650 MB"),
        (f"{ob['bytes'] / 1e6:.2f} MB request body", f"HTTP {ob['status']}, {ob['cpu_s']} s CPU, "
         f"+{ob['peak_over_mb']} MB peak", "routed: 368 s CPU"),
        (f"{ab['clients']} clients gone after {ab['disconnect_after_s']} s", f"busy {ab['busy_after_leaving_s']} s "
         f"after, {ab['cpu_s_after_leaving']} s CPU after; RSS {ab['rss_before_mb']} → {ab['rss_after_mb']} MB "
         f"(peak +{ab['peak_over_mb']} MB)", "about 250 s of work left running; 1.9 → 4.4 GB, stayed at 3.0 GB"),
        (f"{raw['clients']} raw TCP clients ({raw['chars']:,}-character call) closed after "
         f"{raw['disconnect_after_s']} s",
         f"busy {raw['busy_after_leaving_s']} s after, {raw['cpu_s_after_leaving']} s CPU after; "
         f"{raw['answered_before_leaving']} answered before leaving",
         "issue 31: 8 clients gone 0.3 s into a 19,999-character call left 16.6 s of CPU running"),
        (f"{cs['sessions']} sessions at once", f"{cs['answered']} answered, {cs['same_as_alone']} with the lone "
         f"call's ranking, in {cs['s']} s; peak +{cs['peak_over_mb']} MB; errors {cs['errors'] or 'none'}",
         "240 answered correctly"),
    ]
    lines = [f"`skill-assets serve --transport http --ready full` over a {out['pool']:,}-skill JSONL pool "
             f"({out['parsed']:,} corpus skills, padded with variants), {out['cores']} cores; the server's limits: "
             f"{limits['max_query_chars']:,} characters a request, {limits['max_body_bytes']:,}-byte HTTP bodies, "
             f"{limits['call_seconds']:g} s a call (its wait for a turn included), {limits['concurrent_calls']} call "
             f"routed at a time. Server RSS warm {out['rss_warm_mb']} MB, at the end {out['rss_end_mb']} MB. "
             f"Load average (1, 5, 15 min) at the start {out['load_at_start']}, at the end {out['load_at_end']} "
             "(the bench's own server counts in it).", "",
             "| case | measured | before the bounds (issue 21) |", "|---|---|---|",
             *(f"| {a} | {b} | {c} |" for a, b, c in rows), "",
             f"A lone call's round trip (one session, {cs['sessions']} requests in turn): "
             f"p50 {cs['lone_call_p50_ms']} ms, p95 {cs['lone_call_p95_ms']} ms.", "",
             "```json", json.dumps(out, ensure_ascii=False), "```"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_pool_arguments(ap)
    ap.add_argument("--sessions", type=int, default=240, help="concurrent sessions, one request each")
    ap.add_argument("--abandoned", type=int, default=8, help="clients that send the longest request and leave")
    ap.add_argument("--disconnect-after", type=float, default=1.0, help="seconds before those clients leave")
    add_server_arguments(ap)
    args = ap.parse_args(argv)

    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="mcp-bounds-"))
    work.mkdir(parents=True, exist_ok=True)
    proc = None
    try:
        pool, parsed, rejected = corpus_pool(Path(args.corpus), args.pool_size)
        pool_path = work / "pool.jsonl"
        write_jsonl_pool(pool, pool_path)
        queries = sample_queries(pool, args.sessions, args.seed)
        port = free_port()
        out: dict = {"pool": len(pool), "parsed": parsed, "rejected": rejected,
                     "cores": len(os.sched_getaffinity(0)), "load_at_start": load(),
                     "limits": {"max_query_chars": MAX_QUERY_CHARS, "max_body_bytes": MAX_BODY_BYTES,
                                "call_seconds": CALL_SECONDS, "concurrent_calls": CONCURRENT_CALLS}}
        t = time.perf_counter()
        proc = start_server(pool_path, work / "cache", port, work / "serve.log", args.max_wait)
        out["server_ready_s"] = round(time.perf_counter() - t, 1)
        stderr_log(f"server listening after {out['server_ready_s']} s on a {len(pool)}-skill pool")
        out.update(asyncio.run(drive(f"http://127.0.0.1:{port}/mcp", port, ServerProcess(proc.pid), pool, queries,
                                     args)))
        out["load_at_end"] = load()
        if not args.no_results_doc:
            write_section("mcp-bounds", table(out))
        print(json.dumps(out, ensure_ascii=False))
        return 0
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=60)
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
