"""The router as an MCP server (the official ``mcp`` SDK): ``route_skills(query, top_k)``, then ``open_skill(skill_id)``
and ``read_skill_file(skill_id, path)`` to read what it found (progressive disclosure, as peer skill servers offer).

An agent connects over stdio (the server is its subprocess) or streamable HTTP on 127.0.0.1, and
gets the same fields as a ``skill-assets route`` run line: ``{"id", "ranking": [{"skill_id",
"score", "signals"}], "selected", "signals_used"}``, plus each ranked skill's name and description so
the agent can decide without reading the files. Where no skill fits the request (small talk, a task the
library does not cover), ``selected`` is empty, ``no_fit`` says so ("no skill fits: …") and ``ranking``
still lists the nearest skills. An agent host often gives its servers seconds to
start, so by default the server answers once BM25 is built: ``signals_used`` is ``["bm25"]`` (the
lexical fusion) while the dense and multilingual indexes build in the background, then every signal
(``Engine.start_index``); each call routes over whichever index is published when it begins. With ``--watch``
(``watch.PoolWatcher``) the pool is re-indexed as its files change, so every tool looks its skills up per call.

A call's work is bounded: a query longer than ``MAX_QUERY_CHARS`` characters (counted in the decoded
request, however it was escaped) is refused, an HTTP body over ``MAX_BODY_BYTES`` is answered 413 with
the reason and never reaches the tool, ``CONCURRENT_CALLS`` calls route at once, and a call that has
not finished within ``CALL_SECONDS`` (its wait for a turn included) fails. A call whose client is
gone stops at the routing's next checkpoint, and one still waiting for its turn never starts: the SDK
cancels it on a ``notifications/cancelled``, a deleted session or the end of stdin, and ``ClientWatch``
notices an HTTP client that just closes its connection, which the SDK does not. A stdio client that
leaves ends the server cleanly. Every failure reaches the client as a tool error carrying its reason.

The file tools serve a skill's folder as the pool was indexed from it (the folder of its ``SKILL.md``; a JSONL
pool's skills have none, and the tools say so). What they return lies inside that folder: a path with ``..`` or an
absolute one is refused before any file is touched, one that resolves outside the folder (a symbolic link) is
refused, and the file itself is read under ingest's rules (``skill_files.read_skill_bytes``: regular files only,
UTF-8 text only), its first ``MAX_FILE_BYTES`` bytes when longer, said so. ``.git`` is never served: its config can
hold credentials. Reads are cheap, so they have their own ``CallGate`` and never wait behind a routing.
"""
from __future__ import annotations

import logging
import os
import stat
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer  # at module level: the SDK resolves the tool's annotations by name
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skill_assets.lib.core.frontmatter import SkillParseError
from skill_assets.lib.core.skill_files import (
    SKILL_FILE_NAME,
    SKIPPED_FOLDERS,
    FolderReject,
    decode_skill_bytes,
    read_skill_bytes,
    walk_skill_paths,
)
from skill_assets.lib.retrieval.give_way import answering
from skill_assets.lib.retrieval.pools import Skill
from skill_assets.router.routing import Router
from skill_assets.router.watch import PoolWatcher

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
#: the most of one file (``SKILL.md`` included) the file tools return, in bytes: about 50,000 tokens, a fifth of the
#: pool's own cap on a SKILL.md; a longer file's head comes back, marked cut
MAX_FILE_BYTES = 200_000
#: files ``open_skill`` lists: a skill folder that is a whole repository must not fill the agent's context
MAX_LISTED_FILES = 200
#: longest ``skill_id`` or ``path`` a file tool takes, in characters (ids and paths are far shorter)
MAX_NAME_CHARS = 1_000
#: a file tool's time bound and how many read at once: a read takes milliseconds, unless the disk hangs
FILE_CALL_SECONDS = 10.0
FILE_CALLS = 4
#: characters of a refused id or path quoted back in the reason
SHOWN_CHARS = 200

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

    def __init__(self, slots: int = CONCURRENT_CALLS, seconds: float = CALL_SECONDS, what: str = "routing",
                 hint: str = "try again, or send a shorter request") -> None:
        self._slots = threading.BoundedSemaphore(slots)
        self.seconds = seconds
        self.what, self.hint = what, hint  # the gated work, and what to do once it ran out of time, for the reasons

    async def run(self, work: Callable[[Callable[[], None]], T], gone: threading.Event | None = None,
                  tool: str = "route_skills") -> T:
        """``work(checkpoint)`` on a worker thread; ``gone`` is set once the client has left (``ClientWatch``)."""
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
            raise ToolError(f"{self.what} did not finish within {self.seconds:g} s (the wait for a turn included); "
                            f"the call was stopped: {self.hint}") from None
        except CallStopped:  # ``over`` is set only once this call has stopped waiting: the work saw ``gone``
            log.info("%s stopped: its client closed the connection", tool)
            raise ToolError("the client closed the connection; the call was stopped") from None
        finally:
            over.set()


def check_request(query: str, top_k: int) -> None:
    """Refuse, with the reason, a request the tool will not route."""
    if not query.strip():
        raise ToolError("query is empty: send the user's request as text")
    if len(query) > MAX_QUERY_CHARS:
        raise ToolError(f"query is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}: send the part "
                        "that says what is needed")
    if not 1 <= top_k <= MAX_TOP_K:
        raise ToolError(f"top_k is {top_k}; it must be between 1 and {MAX_TOP_K}")


#: what ``read_skill_bytes`` says of a file that is not UTF-8 text
TEXT_ONLY = ("binary", "not_utf8")
#: every tool only reads: an agent host may call them without asking its user
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


class _Listed(Exception):
    """Raised by ``list_files``' folder callback once the list is full: the rest of the folder is not walked."""


def _shown(text: str) -> str:
    """``text`` quoted for a reason, at most ``SHOWN_CHARS`` of it: a refused argument can be megabytes long."""
    return repr(text[:SHOWN_CHARS]) + ("…" if len(text) > SHOWN_CHARS else "")


def skill_folder(skill: Skill) -> Path | None:
    """The folder a folder pool's skill was indexed from (its ``SKILL.md``'s parent); None for a JSONL pool's record,
    whose ``source`` is ``file:line``: it has no folder."""
    source = Path(skill.source)
    return source.parent if source.name.lower() == SKILL_FILE_NAME else None


def find_skill(router: Router, skill_id: str) -> Skill:
    """The skill ``skill_id`` names in the pool published now (looked up per call: the pool can change under a
    running server); refused with the reason if there is none."""
    skill = router.pool.skill(skill_id) if len(skill_id) <= MAX_NAME_CHARS else None
    if skill is None:
        raise ToolError(f"no skill {_shown(skill_id)} in the pool: pass a skill_id from route_skills' answer")
    return skill


def no_folder(skill: Skill) -> str:
    """Why a JSONL pool's skill has no file to read."""
    return (f"skill {skill.id!r} is a record of the JSONL pool {skill.source}, not a folder: it has no SKILL.md and "
            "no other files")


def check_path(path: str) -> None:
    """Refuse, with the reason and before any file is touched, a path that is not relative to a skill's folder and
    inside it (``..``, absolute), or that names ``.git``."""
    shown = _shown(path)
    if not path.strip():
        raise ToolError("path is empty: pass one of the paths open_skill lists under 'files'")
    if len(path) > MAX_NAME_CHARS:
        raise ToolError(f"path is {len(path):,} characters; the limit is {MAX_NAME_CHARS:,}")
    if "\x00" in path:
        raise ToolError(f"path {shown} holds a NUL character")
    if os.path.isabs(path):
        raise ToolError(f"path {shown} is absolute: pass a path relative to the skill's folder, as open_skill lists "
                        "them")
    parts = PurePosixPath(path).parts
    if ".." in parts:
        raise ToolError(f"path {shown} contains '..': only files inside the skill's folder are served; pass a path "
                        "relative to it, as open_skill lists them")
    if SKIPPED_FOLDERS.intersection(parts):
        raise ToolError(f"path {shown} is inside .git, which is never served")


def _text(data: bytes) -> tuple[str, bool]:
    """``data`` (as ``read_skill_bytes(..., MAX_FILE_BYTES, cut=True)`` returns it: one byte past the cap when the file
    goes on) as text, and whether it was cut, before a character rather than inside one; SkillParseError
    (``TEXT_ONLY``) for anything but UTF-8 text."""
    cut = len(data) > MAX_FILE_BYTES
    end = MAX_FILE_BYTES if cut else len(data)
    while cut and end > MAX_FILE_BYTES - 3 and data[end] & 0xC0 == 0x80:  # the first byte left out continues one
        end -= 1
    return decode_skill_bytes(data[:end]), cut


def read_in_folder(folder: Path, path: str) -> dict[str, Any]:
    """The file at ``path`` (passed by ``check_path``) in ``folder``: ``{"path", "bytes", "text", "cut"}``, the text its
    first ``MAX_FILE_BYTES`` bytes at most, and a ``note`` when cut. Refused with the reason if it resolves outside the
    folder, or is anything but a UTF-8 text file there."""
    shown = _shown(path)
    full = folder / path
    if not Path(os.path.realpath(full)).is_relative_to(os.path.realpath(folder)):
        raise ToolError(f"path {shown} leads outside the skill's folder (through a symbolic link): only files inside "
                        "it are served")
    try:
        text, cut = _text(read_skill_bytes(full, folder, MAX_FILE_BYTES, cut=True))
        size = os.stat(full).st_size
    except FileNotFoundError:
        raise ToolError(f"no file {shown} in the skill's folder: open_skill lists its files") from None
    except SkillParseError as exc:
        text_only = " (only UTF-8 text files are served)" if exc.code in TEXT_ONLY else ""
        raise ToolError(f"path {shown} is not served: {exc.code}: {exc.message}{text_only}") from None
    except OSError as exc:
        raise ToolError(f"path {shown} cannot be read: {type(exc).__name__}: {exc.strerror or exc}") from None
    answer: dict[str, Any] = {"path": path, "bytes": size, "text": text, "cut": cut}
    if cut:
        answer["note"] = f"cut: the file is {size:,} bytes; only its first {MAX_FILE_BYTES:,} bytes at most are shown"
    return answer


def list_files(folder: Path, checkpoint: Callable[[], None]) -> tuple[list[dict[str, Any]], bool, dict[str, int]]:
    """The files ``read_skill_file`` can serve in ``folder`` (``{"path", "bytes"}``, the folder's own first, then its
    subfolders' in name order), whether the list stopped at ``MAX_LISTED_FILES``, and how many entries were left out
    by reason. The walk is ingest's (``walk_skill_paths``): folder links are not followed and ``.git`` is skipped."""
    inside = os.path.realpath(folder)
    files: list[dict[str, Any]] = []
    left_out: Counter[str] = Counter()

    def on_folder(path: str, names: list[str]) -> None:
        checkpoint()
        for name in names:
            full = os.path.join(path, name)
            try:
                st = os.lstat(full)
                link = stat.S_ISLNK(st.st_mode)
                if link:
                    st = os.stat(full)
            except OSError:
                left_out["broken_symlink" if os.path.islink(full) else "unreadable"] += 1
                continue
            if stat.S_ISDIR(st.st_mode):
                continue  # the walk enters it, or reports it as a folder link
            if link and not Path(os.path.realpath(full)).is_relative_to(inside):
                left_out["link_outside_folder"] += 1
            elif not stat.S_ISREG(st.st_mode):
                left_out["not_regular_file"] += 1
            elif len(files) == MAX_LISTED_FILES:
                raise _Listed
            else:
                files.append({"path": Path(full).relative_to(folder).as_posix(), "bytes": st.st_size})

    try:
        for entry in walk_skill_paths(folder, on_folder):
            if isinstance(entry, FolderReject):
                left_out[entry.code] += 1
    except _Listed:
        return files, True, dict(left_out)
    except OSError as exc:
        raise ToolError(f"the skill's folder {folder} cannot be listed: {type(exc).__name__}: "
                        f"{exc.strerror or exc}") from None
    return files, False, dict(left_out)


def open_answer(skill: Skill, checkpoint: Callable[[], None]) -> dict[str, Any]:
    """``open_skill``'s answer: the skill's SKILL.md and its folder's files, or a JSONL record's body, said so."""
    answer: dict[str, Any] = {"skill_id": skill.id, "name": skill.name, "description": skill.description}
    folder = skill_folder(skill)
    if folder is None:
        body, cut = _text(skill.body.encode("utf-8")[:MAX_FILE_BYTES + 1])
        return {**answer, "folder": None, "skill_md": None, "files": [], "body": body, "body_cut": cut,
                "note": f"{no_folder(skill)}; 'body' is the record's body"}
    skill_md = read_in_folder(folder, Path(skill.source).name)
    files, files_cut, left_out = list_files(folder, checkpoint)
    answer |= {"folder": os.path.abspath(folder), "skill_md": skill_md, "files": files, "files_cut": files_cut}
    if files_cut:
        answer["files_note"] = (f"more than {MAX_LISTED_FILES} files: the first {MAX_LISTED_FILES} are listed, the "
                                "folder's own first, then its subfolders' in name order")
    if left_out:
        answer["not_listed"] = left_out
    return answer


def build_server(router: Router, name: str = SERVER_NAME, gate: CallGate | None = None,
                 files_gate: CallGate | None = None):
    """An ``MCPServer`` over ``router``'s indexed pool: ``route_skills``, each call through ``gate``, and the file tools
    ``open_skill`` and ``read_skill_file``, each call through ``files_gate`` (reads never wait behind a routing)."""
    server = MCPServer(name, instructions="Call route_skills with the user's request to learn which skills to "
                                          "load: 'selected' lists them best first; 'ranking' shows the runners-up; "
                                          "where no skill fits, 'selected' is empty, 'no_fit' says why and "
                                          "'ranking' lists the nearest skills (load none of them unless one "
                                          "clearly serves the request); "
                                          "'signals_used' says what ranked them (['bm25'] alone while the server's "
                                          "other indexes are still building). Then call open_skill on a selected "
                                          "skill to read its SKILL.md and see its files, and read_skill_file for a "
                                          "file the SKILL.md refers to.")
    gate = gate or CallGate()
    files_gate = files_gate or CallGate(FILE_CALLS, FILE_CALL_SECONDS, what="reading the skill's files",
                                        hint="try again")

    def route_one(query: str, top_k: int, checkpoint: Callable[[], None]) -> dict[str, Any]:
        # the skills are looked up per call, before and after routing: ``serve --watch`` can publish a new pool
        # meanwhile, and the routed skills are those of the one published when the routing began
        before = router.pool
        routed = router.route([query], top_k=top_k, checkpoint=checkpoint)[0].as_dict("query")
        after = router.pool
        for entry in routed["ranking"]:
            skill = after.skill(entry["skill_id"]) or before.skill(entry["skill_id"])
            entry["name"], entry["description"] = skill.name, skill.description
        return routed

    async def gated(through: CallGate, ctx: Context, tool: str,
                    work: Callable[[Callable[[], None]], dict[str, Any]]) -> dict[str, Any]:
        """``work`` run through ``through``; any failure reaches the client as a ToolError with the reason."""
        http_request = ctx.request_context.request  # None on stdio, where the SDK itself notices the client leave
        gone = http_request.scope.get(CLIENT_GONE) if http_request is not None else None
        try:
            return await through.run(work, gone, tool)
        except ToolError:
            raise
        except Exception as exc:  # the SDK would send only "Error executing tool"; the client gets the reason
            log.exception("%s failed", tool)
            raise ToolError(f"{through.what} failed: {type(exc).__name__}: {exc}") from exc

    @server.tool(annotations=READ_ONLY)
    async def route_skills(query: str, ctx: Context, top_k: int = 10) -> dict[str, Any]:
        """Call first, with the user's request: ranks the skill pool and says which skills to load ('selected', best
        first, 1 to 3; 'ranking' shows the runners-up with their names and descriptions). Where no skill fits the
        request, 'selected' is empty and 'no_fit' says "no skill fits" and why; 'ranking' still lists the nearest
        skills. Then open_skill a selected skill to read it."""
        check_request(query, top_k)
        return await gated(gate, ctx, "route_skills", lambda checkpoint: route_one(query, top_k, checkpoint))

    @server.tool(annotations=READ_ONLY, description=(
        "Call after route_skills, with a skill_id it returned, to read that skill before following it: returns its "
        f"whole SKILL.md, front matter included ('skill_md': a file over {MAX_FILE_BYTES:,} bytes comes back cut, "
        f"'cut': true), and the files in its folder ('files': paths relative to the folder and sizes, up to "
        f"{MAX_LISTED_FILES}). Then call read_skill_file for a file the SKILL.md refers to. A skill from a JSONL pool "
        "has no folder: its 'body' comes back instead, and 'note' says so."))
    async def open_skill(skill_id: str, ctx: Context) -> dict[str, Any]:
        skill = find_skill(router, skill_id)
        return await gated(files_gate, ctx, "open_skill", lambda checkpoint: open_answer(skill, checkpoint))

    @server.tool(annotations=READ_ONLY, description=(
        "Call after open_skill, to read one file of that skill's folder that its SKILL.md refers to (a script, a "
        "reference, a template): 'path' is one of the paths open_skill listed, relative to the skill's folder. "
        f"Returns the file's text; a file over {MAX_FILE_BYTES:,} bytes comes back cut ('cut': true). Refused, with "
        "the reason: a path with '..', an absolute path, one that leads out of the folder through a link, .git, "
        "and a file that is not UTF-8 text."))
    async def read_skill_file(skill_id: str, path: str, ctx: Context) -> dict[str, Any]:
        skill = find_skill(router, skill_id)
        folder = skill_folder(skill)
        if folder is None:
            raise ToolError(f"{no_folder(skill)}; open_skill returns its body")
        check_path(path)
        return await gated(files_gate, ctx, "read_skill_file",
                           lambda checkpoint: {"skill_id": skill.id, **read_in_folder(folder, path)})

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

        # a POST is a call (a GET holds a session's event stream open): a re-index gives way to it from its body's
        # arrival until its handling ends, the response and what the SDK does after sending it included (``give_way``)
        with answering() if scope["method"] == "POST" else nullcontext():
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


def serve(router: Router, transport: str = "stdio", port: int = 8765,
          watch: Sequence[str | Path] | None = None) -> None:
    """Block serving ``router``: ``stdio`` or ``http`` (streamable HTTP at http://127.0.0.1:<port>/mcp). ``watch``: the
    pool roots to follow while serving (``serve --watch``: ``watch.PoolWatcher`` re-indexes them as they change)."""
    server = build_server(router)
    watcher = PoolWatcher(router, watch).start() if watch else None
    try:
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
    finally:
        if watcher is not None:
            watcher.stop()
