"""``skill-assets``: materialize the asset graph from scripts and CI, run the users' SQL, route and serve requests.

Every failure a user can cause (a bad selection, SQL file or pool) is one line on stderr and a
non-zero exit status, never a traceback.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import NoReturn

from skill_assets.router.cli import add_index_parser, add_route_parser, add_serve_parser


def run_sql(path: str | None, command: str | None) -> int:
    """Print the result of a SQL file, or of ``command`` (``-c``), run read-only (sandboxed) against the store;
    2 if refused, 1 if it fails.

    Both forms pass the same checks (``user_sql``): only where the text comes from differs, so a quick
    question typed on the command line can do no more than a file can.
    """
    from skill_assets.lib.common.store import resolve_db
    from skill_assets.user_sql import UserSqlError, checked_statements, run_statements

    if path is not None and command is not None:
        print("skill-assets sql: error: give a SQL file or -c \"SELECT …\", not both", file=sys.stderr)
        return 2
    if path is None and command is None:
        print("skill-assets sql: error: name a SQL file or give the SQL with -c \"SELECT …\"", file=sys.stderr)
        return 2
    db = str(resolve_db())
    if command is not None:
        where, sql = "-c", command
    else:
        where = str(path)
        try:
            sql = Path(where).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            print(f"skill-assets sql: error: cannot read {where}: {exc}", file=sys.stderr)
            return 2
    try:
        statements = checked_statements(sql, where)
    except UserSqlError as exc:
        print(f"skill-assets sql: error: {exc}", file=sys.stderr)
        return 2
    try:
        df = run_statements(db, statements, where)
    except UserSqlError as exc:
        print(f"skill-assets sql: error: {exc}", file=sys.stderr)
        return 1
    import polars as pl

    with pl.Config(tbl_rows=200, tbl_cols=20, fmt_str_lengths=80, tbl_hide_dataframe_shape=True):
        print(df)
    return 0


def build_default_router(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Refit the shipped router (or only its lexical path, or only its abstention), printing each card's figures as
    one JSON line. The abstention is fitted over the shipped fusion, so it follows a full rebuild of the shipped
    folder: one fitted over an older fusion would be left out by every router (its digest differs)."""
    from skill_assets.lib.retrieval.defaults import SHIPPED_DIR
    from skill_assets.router.routing import stderr_log
    from skill_assets.router.shipped_abstention import build_shipped_abstention
    from skill_assets.router.shipped_router import build_shipped_router

    out = Path(args.out) if args.out else SHIPPED_DIR
    whole_shipped = out.resolve() == SHIPPED_DIR.resolve() and args.first is None and not args.lexical_only
    if args.abstention_only and not whole_shipped:
        parser.error("--abstention-only refits the shipped router's abstention over the whole pool: it takes no "
                     "--lexical-only, --first or another --out")
    if not args.abstention_only:
        fitted = build_shipped_router(args.pool, out, args.cache_dir, args.first, stderr_log, args.lexical_only)
        print(json.dumps({"kind": fitted.card["kind"], "params": fitted.card["params"], "dev": fitted.card["dev"],
                          "data": fitted.card["data"]}, ensure_ascii=False))
    if whole_shipped:
        abstention = build_shipped_abstention(args.pool, args.cache_dir, stderr_log)
        print(json.dumps({"abstention": {"threshold": abstention.threshold, "dev": abstention.card["dev"]}},
                         ensure_ascii=False))
    return 0


def end_process(code: int) -> NoReturn:
    """End a one-shot ``route`` once its answer is out: flush, then ``os._exit``, skipping the interpreter's teardown.

    Unloading torch, transformers and sentence-transformers and freeing every object took 1.5 to 2.5 s after the
    answer was printed (2 cores, load average 2.6; 4 s at 10). Nothing ``route`` writes is left to the teardown: its
    run file is renamed into place (``atomic_output``) before this.
    """
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # a closed pipe: the answer did not reach the reader
        code = code or 1
    logging.shutdown()
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    """The command line; ``argv`` None means this process is the command line itself (a one-shot ``route`` then
    ends without the interpreter's teardown: ``end_process``), a list means a caller that wants the status back."""
    parser = argparse.ArgumentParser(prog="skill-assets", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("materialize", help="materialize assets (default: the whole graph)")
    m.add_argument("--select", action="append", help="Dagster asset selection, e.g. 'key:skills+' (repeatable)")
    m.add_argument("--config", help="YAML run config ({ops: {op_name: {config: {...}}}})")
    m.add_argument("--partition", action="append", help="partition key for partitioned assets (repeatable)")
    s = sub.add_parser("sql", help="run a SQL file, or -c SQL, against the store (read-only, no file access) and "
                                   "print the result")
    s.add_argument("file", nargs="?", help="a file of SQL statements (or give them with -c)")
    s.add_argument("-c", dest="sql", metavar="SQL",
                   help='the statements themselves, e.g. -c "SELECT count(*) FROM skills"')
    add_route_parser(sub)
    add_serve_parser(sub)
    add_index_parser(sub)
    b = sub.add_parser("build-default-router", help="refit the shipped router (fusion + selection cut, then its "
                                                    "no-fit abstention) on hand-written requests over the shared "
                                                    "corpus")
    b.add_argument("--pool", required=True, help="the shared GitHub skill corpus (…/github-skills/repos)")
    b.add_argument("--out", help="model folder to write (default: the package's shipped router)")
    b.add_argument("--cache-dir", help="index cache (default ~/.cache/skill-assets/index)")
    b.add_argument("--first", type=int, help="fit over the first N pool skills plus every ground-truth skill "
                                              "(default: the whole pool)")
    b.add_argument("--lexical-only", action="store_true",
                   help="refit only the lexical path (lexical/: BM25 alone, what answers while a new pool's encoder "
                        "indexes build); indexes BM25 alone, so it takes about a minute")
    b.add_argument("--abstention-only", action="store_true",
                   help="refit only the shipped router's abstention (abstention.json: when no skill fits, select "
                        "none) over its current fusion; a full rebuild of the shipped router refits it too")
    args = parser.parse_args(argv)
    if args.command == "materialize":
        from skill_assets.materialize import materialize

        return materialize(args.select, args.config, args.partition)
    if args.command in ("route", "serve", "index"):
        code = args.func(args)
        if argv is None and args.command == "route":
            end_process(code)
        return code
    if args.command == "build-default-router":
        return build_default_router(parser, args)
    return run_sql(args.file, args.sql)


if __name__ == "__main__":
    raise SystemExit(main())
