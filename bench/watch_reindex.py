"""`skill-assets serve --watch` over a 10,000-skill folder pool: how soon an edit is routed, and answers meanwhile.

    .venv/bin/python bench/watch_reindex.py [--pool-size 10000] [--queries 100] [--work-dir DIR]

Builds the pool as ``bench/first_answer.py`` does (the shared corpus beside the repository, padded with
deterministic variants: ``shared_corpus.corpus_pool``), but as a user's pool is: one folder with a ``SKILL.md``
each, written under a fresh folder (nothing is copied into the repository). Starts the real server over streamable
HTTP with ``--watch --ready full`` (``mcp_bounds.start_server``: it listens once the full hybrid index is built)
and drives it with the MCP SDK's client:

1. quiet: ``route_skills`` round trips, ``--queries`` sampled requests in turn (p50 / p95), once the watcher has
   logged that it follows the pool (its start-up work, keeping BM25's tokens, is done);
2. three changes, one after another, each once the previous one is routed: an edit (a skill's description gains a
   word no other skill has, fresh each run so its document is never cached), a new skill, a deleted one. After
   each write the bench calls in turn a probe (the edited or new skill's word, or the deleted skill's description)
   and a sampled request, until the probe's answer shows the change and the server has logged the end of the
   re-index: the seconds from the write to that answer (and to the first call that saw the re-index begin: the
   debounce and the look at the pool), and the round trips of the calls made while the server re-indexed (between
   its "reloading the pool" and "pool reloaded" lines, read from its log as it is written).

The targets (issue 34): a change routed ≤ 5 s after the write; p95 during a re-index ≤ 2× the quiet p95. The load
average is recorded at each phase: the bench's own client and server share the cores. Ends with ONE JSON line of
the figures and writes its section into docs/RESULTS.md.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from first_answer import call, load  # noqa: E402
from mcp_bounds import add_server_arguments, free_port, start_server  # noqa: E402
from results_doc import write_section  # noqa: E402
from route_latency import sample_queries  # noqa: E402
from shared_corpus import add_pool_arguments, corpus_pool  # noqa: E402

from skill_assets.lib.retrieval.pools import Skill  # noqa: E402
from skill_assets.router.routing import stderr_log  # noqa: E402

TARGET_ROUTED_S = 5.0
TARGET_P95_RATIO = 2.0
#: the watcher's log lines: it follows the pool (its start-up work is done), a re-index opens and closes
#: (``watch.PoolWatcher``)
FOLLOWING, REINDEX_START, REINDEX_END = "watch: following", "reloading the pool", "watch: pool reloaded"


def write_folder_pool(pool: list[Skill], root: Path) -> None:
    """Each skill as ``root/<id>/SKILL.md`` (the id is the folder, as the pool loader reads it back)."""
    for s in pool:
        skill_md(root / s.id / "SKILL.md", s.name, s.description, s.body)


def skill_md(path: Path, name: str, description: str, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = yaml.safe_dump({"name": name, "description": description}, allow_unicode=True, width=1 << 30)
    path.write_text(f"---\n{header}---\n{body}\n", encoding="utf-8")


def fresh_word(rng: random.Random) -> str:
    """A word no skill has: one BM25 token, letters only."""
    return "watchz" + "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(8))


def lone_skills(pool: list[Skill], n: int, rng: random.Random) -> list[Skill]:
    """``n`` skills whose description no other skill shares (no padded variant of them) and says enough to route."""
    count: dict[str, int] = {}
    for s in pool:
        count[s.description] = count.get(s.description, 0) + 1
    fit = [s for s in pool if count[s.description] == 1 and len(s.description.split()) >= 8 and "~v" not in s.id]
    return rng.sample(fit, n)


class ServerLog:
    """The server's stderr as it is written: whether it is re-indexing now, and how many re-indexes it finished."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.reindexing, self.finished = path, 0, False, 0
        self.lines: list[str] = []

    def read(self) -> None:
        with self.path.open(encoding="utf-8", errors="replace") as fh:
            fh.seek(self.offset)
            text = fh.read()
        cut = text.rfind("\n") + 1  # a line still being written is read next time
        self.offset += len(text[:cut].encode("utf-8"))
        for line in text[:cut].splitlines():
            self.lines.append(line)
            if REINDEX_START in line:
                self.reindexing = True
            elif line.startswith(REINDEX_END):
                self.reindexing, self.finished = False, self.finished + 1


async def timed(client, query: str) -> tuple[dict, float]:
    t = time.perf_counter()
    answer = await call(client, query)
    return answer, (time.perf_counter() - t) * 1000


async def change(client, log: ServerLog, queries: list[str], write, probe: str, shows, max_wait: float) -> dict:
    """``write()`` the change, then probe and sampled calls in turn until the probe ``shows`` it and the re-index
    it started has ended: seconds from the write to the first answer that shows it, and the re-index's calls."""
    log.read()
    finished = log.finished
    t0 = time.perf_counter()
    write()
    routed_s, began_s, during_ms, i = None, None, [], 0
    while routed_s is None or log.finished == finished:
        if time.perf_counter() - t0 > max_wait:
            raise TimeoutError(f"the change was not routed within {max_wait:.0f} s (routed at {routed_s} s)")
        for query in (probe, queries[i % len(queries)]):
            log.read()
            reindexing = log.reindexing
            if began_s is None and (reindexing or log.finished > finished):
                began_s = round(time.perf_counter() - t0, 2)  # seen at the call after the line: within one call
            answer, ms = await timed(client, query)
            if reindexing:
                during_ms.append(ms)
            if query is probe and routed_s is None and shows(answer):
                routed_s = round(time.perf_counter() - t0, 2)
        i += 1
    return {"routed_s": routed_s, "reload_seen_s": began_s, "reindex_calls": len(during_ms), "during_ms": during_ms,
            "reload_line": next(line for line in reversed(log.lines) if line.startswith(REINDEX_END)),
            "load": load()}


def top_is(sid: str, word: str):
    def shows(answer: dict) -> bool:
        first = answer["ranking"][0]
        return first["skill_id"] == sid and word in first["description"]
    return shows


async def drive(url: str, log: ServerLog, pool_dir: Path, pool: list[Skill], queries: list[str],
                args) -> dict:
    from mcp import Client

    rng = random.Random(time.time_ns())  # the new words are fresh each run: their documents are never cached
    edited, deleted = lone_skills(pool, 2, random.Random(args.seed))
    edit_word, add_word = fresh_word(rng), fresh_word(rng)
    added_id = f"watch-bench/{add_word}"
    t = time.perf_counter()
    while not any(line.startswith(FOLLOWING) for line in log.lines):  # quiet means after the watcher's start-up
        if time.perf_counter() - t > args.max_change_wait:
            raise TimeoutError("the watcher did not say it follows the pool")
        await asyncio.sleep(0.2)
        log.read()
    async with Client(url, read_timeout_seconds=900) as client:
        for q in queries[:3]:
            await call(client, q)  # warm
        quiet = [(await timed(client, q))[1] for q in queries]
        out: dict = {"load_quiet": load()}
        stderr_log(f"quiet: p50 {np.percentile(quiet, 50):.1f} ms, p95 {np.percentile(quiet, 95):.1f} ms")
        edit_desc = f"{edit_word} {edited.description}"
        out["edit"] = await change(
            client, log, queries,
            lambda: skill_md(pool_dir / edited.id / "SKILL.md", edited.name, edit_desc, edited.body),
            f"{edit_word} {edited.description}", top_is(edited.id, edit_word), args.max_change_wait)
        stderr_log(f"edit routed at {out['edit']['routed_s']} s; {out['edit']['reload_line']}")
        add_desc = f"{add_word}: keep a {add_word} ledger of weekly sourdough bakes and their starter feeds."
        out["add"] = await change(
            client, log, queries,
            lambda: skill_md(pool_dir / added_id / "SKILL.md", add_word, add_desc, f"Write each bake to the {add_word}."),
            add_desc, top_is(added_id, add_word), args.max_change_wait)
        stderr_log(f"add routed at {out['add']['routed_s']} s; {out['add']['reload_line']}")
        first = (await call(client, deleted.description))["ranking"]
        out["deleted_ranked_before"] = deleted.id in [r["skill_id"] for r in first]
        out["delete"] = await change(
            client, log, queries, lambda: shutil.rmtree(pool_dir / deleted.id), deleted.description,
            lambda answer: deleted.id not in [r["skill_id"] for r in answer["ranking"]], args.max_change_wait)
        stderr_log(f"delete routed at {out['delete']['routed_s']} s; {out['delete']['reload_line']}")
    during = [ms for key in ("edit", "add", "delete") for ms in out[key].pop("during_ms")]
    out |= {"quiet_calls": len(quiet), "quiet_p50_ms": pct(quiet, 50), "quiet_p95_ms": pct(quiet, 95),
            "reindex_calls": len(during), "reindex_p50_ms": pct(during, 50), "reindex_p95_ms": pct(during, 95),
            "reindex_max_ms": round(max(during), 1) if during else None}
    return out


def pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 1) if values else None


def table(out: dict) -> str:
    ratio = out["p95_ratio"]
    rows = [(f"quiet round trip p50 / p95 ({out['quiet_calls']} calls)",
             f"{out['quiet_p50_ms']} / {out['quiet_p95_ms']} ms", "", out["load_quiet"]),
            *((f"{what}, after the write", f"{out[key]['routed_s']} s (re-index seen to begin at "
               f"{out[key]['reload_seen_s']} s)", f"≤ {TARGET_ROUTED_S:g} s", out[key]["load"])
              for key, what in (("edit", "edited skill routed in its new form"), ("add", "new skill routed"),
                                ("delete", "deleted skill gone from the ranking"))),
            (f"round trip p50 / p95 while re-indexing ({out['reindex_calls']} calls)",
             f"{out['reindex_p50_ms']} / {out['reindex_p95_ms']} ms (max {out['reindex_max_ms']} ms)", "", ""),
            ("p95 while re-indexing / quiet p95", f"{ratio}×" if ratio is not None else "no call fell in a re-index",
             f"≤ {TARGET_P95_RATIO:g}×", "")]
    lines = [f"`skill-assets serve --watch --transport http --ready full` over a {out['pool']:,}-skill folder pool "
             f"({out['parsed']:,} corpus skills, padded with variants, one `SKILL.md` folder each), {out['cores']} "
             f"cores; the full hybrid index was ready {out['server_ready_s']} s after the start (index cache "
             f"{'warm' if out['warm_cache'] else 'cold'}). Load average (1, 5, 15 min) at the start "
             f"{out['load_at_start']}, at the end {out['load_at_end']} (the bench's client and server count in it).",
             "", "| figure | measured | target | load average |", "|---|---|---|---|",
             *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows), "",
             "The server's reload lines: " + "; ".join(f"{key}: `{out[key]['reload_line']}`"
                                                       for key in ("edit", "add", "delete")), "",
             "```json", json.dumps(out, ensure_ascii=False), "```"]
    return "\n".join(lines)


def measure(args: argparse.Namespace, work: Path) -> dict:
    """Write the pool under ``work``, serve it with ``--watch`` and drive it: the figures."""
    work.mkdir(parents=True, exist_ok=True)
    pool_dir, cache, log_path = work / "pool", work / "cache", work / "serve.log"
    pool, parsed, rejected = corpus_pool(Path(args.corpus), args.pool_size)
    shutil.rmtree(pool_dir, ignore_errors=True)  # a rerun starts from the pool unchanged
    write_folder_pool(pool, pool_dir)
    queries = sample_queries(pool, args.queries, args.seed)
    out: dict = {"pool": len(pool), "parsed": parsed, "rejected": rejected, "cores": len(os.sched_getaffinity(0)),
                 "warm_cache": cache.is_dir(), "load_at_start": load()}
    t, port = time.perf_counter(), free_port()
    proc = start_server(pool_dir, cache, port, log_path, args.max_wait, extra=["--watch"])
    try:
        out["server_ready_s"] = round(time.perf_counter() - t, 1)
        stderr_log(f"server listening after {out['server_ready_s']} s on a {len(pool)}-skill folder pool")
        out |= asyncio.run(drive(f"http://127.0.0.1:{port}/mcp", ServerLog(log_path), pool_dir, pool, queries, args))
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    ratio = out["reindex_p95_ms"] / out["quiet_p95_ms"] if out["reindex_p95_ms"] is not None else None
    out["p95_ratio"] = round(ratio, 2) if ratio is not None else None
    out["load_at_end"] = load()
    out["meets"] = {"routed_s": all(out[k]["routed_s"] <= TARGET_ROUTED_S for k in ("edit", "add", "delete")),
                    "p95_ratio": ratio is not None and ratio <= TARGET_P95_RATIO}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_pool_arguments(ap)
    ap.add_argument("--queries", type=int, default=100, help="sampled requests for the quiet round trips")
    ap.add_argument("--max-change-wait", type=float, default=300.0, help="give up on one change after this long")
    add_server_arguments(ap)
    args = ap.parse_args(argv)
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="watch-reindex-"))
    try:
        out = measure(args, work)
    finally:
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    if not args.no_results_doc:
        write_section("watch-reindex", table(out))
    print(json.dumps(out, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
