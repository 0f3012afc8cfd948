"""The router as an MCP server (the official ``mcp`` SDK): one tool, ``route_skills(query, top_k)``.

An agent connects over stdio (the server is its subprocess) or streamable HTTP on 127.0.0.1, and
gets the same fields as a ``skill-assets route`` run line: ``{"id", "ranking": [{"skill_id",
"score", "signals"}], "selected", "signals_used"}``, plus each ranked skill's name and description so
the agent can decide without reading the files. An agent host often gives its servers seconds to
start, so by default the server answers once BM25 is built: ``signals_used`` is ``["bm25"]`` (the
lexical fusion) while the dense and multilingual indexes build in the background, then every signal
(``Engine.start_index``); each call routes over whichever index is published when it begins.

A call's work is bounded: a query longer than ``MAX_QUERY_CHARS`` characters (counted in the decoded
request, however it was escaped) is refused, an HTTP body over ``MAX_BODY_BYTES`` is answered 413 with
the reason and never reaches the tool, ``CONCURRENT_CALLS`` calls route at once, and a call that has
not finished within ``CALL_SECONDS`` (its wait for a turn included) fails. A call whose client is
gone stops at the routing's next checkpoint, and one still waiting for its turn never starts: the SDK
cancels it on a ``notifications/cancelled``, a deleted session or the end of stdin, and ``ClientWatch``
notices an HTTP client that just closes its connection, which the SDK does not. A stdio client that
leaves ends the server cleanly. Every failure reaches the client as a tool error carrying its reason.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer  # at module level: the SDK resolves the tool's annotations by name
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skill_assets.router.routing import Router

SERVER_NAME = "skill-assets-router"
MAX_TOP_K = 50
#: longest request routed, in characters: a long task statement (about 5 pages) routes in about a second
#: here; the 4.19 MB the SDK's default body limit let through took 368 s of CPU
MAX_QUERY_CHARS = 20_000
#: HTTP request body limit: a MAX_QUERY_CHARS query with every character JSON-escaped at its longest (12 bytes: a
#: character outside the BMP as a surrogate pair, ``\ud83d\ude00``), and the envelope; the query's own limit is
#: then counted in characters, by the tool
MAX_BODY_BYTES = 12 * MAX_QUERY_CHARS + 16 * 1024
#: seconds a call may take, its wait for a turn included
CALL_SECONDS = 60.0
#: calls routed at the same time: one routing already uses every core, more would only hold more memory
CONCURRENT_CALLS = 1
#: the ASGI scope key under which ``ClientWatch`` leaves an HTTP request's "client gone" ``threading.Event``
CLIENT_GONE = "skill_assets.client_gone"

log = logging.getLogger(__name__)
T = TypeVar("T")


class CallStopped(Exception):
    """Raised at a routing checkpoint once the call's client is gone or its time is up."""


class CallGate:
    """Runs each call's routing on a worker thread, ``slots`` at a time, within ``seconds``.

    The SDK cancels a call whose client is gone, but cannot stop a thread; so the work is handed a
    ``checkpoint`` that raises ``CallStopped`` once the call is over, and routing calls it between
    its stages. The slots are taken inside the worker thread, so a call that is given up while it
    runs keeps its slot until it has stopped: abandoned work never piles up beside new work.
    """

    def __init__(self, slots: int = CONCURRENT_CALLS, seconds: float = CALL_SECONDS) -> None:
        self._slots = threading.BoundedSemaphore(slots)
        self.seconds = seconds

    async def run(self, work: Callable[[Callable[[], None]], T], gone: threading.Event | None = None) -> T:
        """``work(checkpoint)`` on a worker thread; ``gone`` is set once the client has left (``ClientWatch``)."""
        from mcp.server.mcpserver.exceptions import ToolError

        over = threading.Event()

        def checkpoint() -> None:
            if over.is_set() or (gone is not None and gone.is_set()):
                raise CallStopped

        def in_turn() -> T:
            with self._slots:
                checkpoint()  # given up while waiting for its turn: never starts
                return work(checkpoint)

        try:
            with anyio.fail_after(self.seconds):
                return await anyio.to_thread.run_sync(in_turn, abandon_on_cancel=True)
        except TimeoutError:
            raise ToolError(f"routing did not finish within {self.seconds:g} s (the wait for a turn included); "
                            "the call was stopped: try again, or send a shorter request") from None
        except CallStopped:  # ``over`` is set only once this call has stopped waiting: the work saw ``gone``
            log.info("route_skills stopped: its client closed the connection")
            raise ToolError("the client closed the connection; the call was stopped") from None
        finally:
            over.set()


def check_request(query: str, top_k: int) -> None:
    """Refuse, with the reason, a request the tool will not route."""
    from mcp.server.mcpserver.exceptions import ToolError

    if not query.strip():
        raise ToolError("query is empty: send the user's request as text")
    if len(query) > MAX_QUERY_CHARS:
        raise ToolError(f"query is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}: send the part "
                        "that says what is needed")
    if not 1 <= top_k <= MAX_TOP_K:
        raise ToolError(f"top_k is {top_k}; it must be between 1 and {MAX_TOP_K}")


def build_server(router: Router, name: str = SERVER_NAME, gate: CallGate | None = None):
    """An ``MCPServer`` whose ``route_skills`` tool routes over ``router``'s indexed pool, each call through ``gate``."""
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer(name, instructions="Call route_skills with the user's request to learn which skills to "
                                          "load: 'selected' lists them best first; 'ranking' shows the runners-up; "
                                          "'signals_used' says what ranked them (['bm25'] alone while the server's "
                                          "other indexes are still building).")
    skills = router.skill_by_id
    gate = gate or CallGate()

    def route_one(query: str, top_k: int, checkpoint: Callable[[], None]) -> dict[str, Any]:
        routed = router.route([query], top_k=top_k, checkpoint=checkpoint)[0].as_dict("query")
        for entry in routed["ranking"]:
            skill = skills[entry["skill_id"]]
            entry["name"], entry["description"] = skill.name, skill.description
        return routed

    @server.tool()
    async def route_skills(query: str, ctx: Context, top_k: int = 10) -> dict[str, Any]:
        """Rank the skill pool for a request and say which skills to load ('selected', 1 to 3)."""
        check_request(query, top_k)
        http_request = ctx.request_context.request  # None on stdio, where the SDK itself notices the client leave
        gone = http_request.scope.get(CLIENT_GONE) if http_request is not None else None
        try:
            return await gate.run(lambda checkpoint: route_one(query, top_k, checkpoint), gone)
        except ToolError:
            raise
        except Exception as exc:  # the SDK would send only "Error executing tool"; the client gets the reason
            log.exception("route_skills failed")
            raise ToolError(f"routing failed: {type(exc).__name__}: {exc}") from exc

    return server


class ClientWatch:
    """ASGI middleware around the streamable-HTTP app: sets each request's ``CLIENT_GONE`` event once its client
    disconnects, and refuses a body over ``max_body`` bytes with the reason.

    The SDK stops a call on ``notifications/cancelled`` or a deleted session, but not when its client just closes
    the connection: the response stream ends and the call's work runs on, one whole routing per abandoned request.
    So this reads the (bounded) body itself, hands it on, and keeps reading the connection while the request is
    served, whatever the app reads; the app's own ``receive`` still reports the disconnect when it happens.
    """

    def __init__(self, app: ASGIApp, max_body: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = await self._body(scope, receive, send)
        if body is None:
            return
        gone, disconnected = threading.Event(), anyio.Event()
        scope[CLIENT_GONE] = gone
        messages: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()
            disconnected.set()

        async def app_receive() -> Message:
            if messages:
                return messages.pop()
            await disconnected.wait()
            return {"type": "http.disconnect"}

        async with anyio.create_task_group() as watching:
            watching.start_soon(watch)
            try:
                await self.app(scope, app_receive, send)
            finally:
                watching.cancel_scope.cancel()

    async def _body(self, scope: Scope, receive: Receive, send: Send) -> bytes | None:
        """The whole request body; None once it is refused (413 with the reason) or its client left mid-body."""
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body:
            await self._refuse(scope, receive, send)
            return None
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body += message.get("body", b"")
            if len(body) > self.max_body:
                await self._refuse(scope, receive, send)
                return None
            if not message.get("more_body", False):
                return bytes(body)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        """413 with a JSON-RPC error that says why, where the SDK would send a bare "Request body too large"."""
        reason = (f"request body is over {self.max_body:,} bytes; route_skills takes a query of up to "
                  f"{MAX_QUERY_CHARS:,} characters: send the part that says what is needed")
        error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": reason}}
        await JSONResponse(error, status_code=413)(scope, receive, send)


def http_app(server: MCPServer) -> ClientWatch:
    """The ASGI app that serves ``server`` over streamable HTTP at ``/mcp``, each request watched by ``ClientWatch``."""
    return ClientWatch(server.streamable_http_app(max_request_body_size=MAX_BODY_BYTES))


def serve(router: Router, transport: str = "stdio", port: int = 8765) -> None:
    """Block serving ``router``: ``stdio`` or ``http`` (streamable HTTP at http://127.0.0.1:<port>/mcp)."""
    server = build_server(router)
    if transport == "stdio":
        try:
            server.run("stdio")
        except* BrokenPipeError:  # the client closed our stdout: it is gone, and the server's work with it
            log.info("the stdio client left; the server stops")
    else:
        import uvicorn

        config = uvicorn.Config(http_app(server), host="127.0.0.1", port=port,
                                log_level=server.settings.log_level.lower())
        anyio.run(uvicorn.Server(config).serve)
