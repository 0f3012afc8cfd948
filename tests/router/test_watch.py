"""``serve --watch`` (issue 34): a skill added, edited, deleted or broken under a served pool.

Real components: the bundled MiniLM over a tiny folder pool in tmp_path, the real MCP server and the SDK's client.
The watcher is driven directly (``reload()``, ``poll()`` with a given clock), so nothing waits on timing; the one
test of the background thread polls for the new state with a generous bound, a hang guard only.
"""
from __future__ import annotations

import functools
import gc
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from skill_assets.lib.models.bundled_models import bundled_minilm
from skill_assets.lib.core import skill_files
from skill_assets.lib.retrieval import give_way, lexical, pool_manifest, pools, signals
from skill_assets.lib.retrieval.lexical import LexicalIndex
from skill_assets.lib.retrieval.pool_manifest import PoolManifest
from skill_assets.lib.retrieval.pools import load_pool
from skill_assets.lib.retrieval.signals import SIGNALS, lexical_document
from skill_assets.lib.retrieval.engine import Engine
from skill_assets.router import Router
from skill_assets.router.serve import build_server
from skill_assets.router import watch
from skill_assets.router.watch import PoolWatcher

pytestmark = pytest.mark.timeout(1200)

SKILLS = {
    "docker-networking": ("docker-networking", "Fix Docker Compose services that cannot reach each other.",
                          "Check the compose network, service names as hostnames and published ports."),
    "pdf-forms": ("pdf-forms", "Fill in and extract fields from PDF forms.",
                  "Read AcroForm fields with pypdf, fill them and flatten the form."),
    "git-bisect": ("git-bisect", "Find the commit that introduced a bug with git bisect.",
                   "Mark a good and a bad commit, test each step, then reset."),
}
SOURDOUGH = "how do I feed my sourdough starter and bake a loaf of bread"
#: a wait for the background thread; the test reads the state it waits for, never the time it took
HANG_GUARD_S = 60.0


def write_skill(pool: Path, sid: str, name: str, description: str, body: str) -> Path:
    path = pool / sid / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n", encoding="utf-8")
    return path


def watched(tmp_path: Path, router: Router, logs: list[str]):
    """(``router`` over the tiny pool, its watcher, the pool folder, the log lines), the watcher stopped after."""
    pool = tmp_path / "pool"
    for sid, fields in SKILLS.items():
        write_skill(pool, sid, *fields)
    skills, rejected = load_pool(pool)
    assert not rejected
    router.index(skills)
    watcher = PoolWatcher(router, [pool], log=logs.append)
    yield router, watcher, pool, logs
    watcher.stop()


@pytest.fixture
def served(tmp_path):
    """The bi-encoder alone: the bundled MiniLM."""
    logs: list[str] = []
    yield from watched(tmp_path, Router(Engine(bundled_minilm(), cache_dir=tmp_path / "cache", log=logs.append)), logs)


@pytest.fixture
def served_hybrid(tmp_path):
    """Routed as ``serve`` routes: the shipped router (BM25, dense, multilingual, the fusion)."""
    logs: list[str] = []
    router = Router.from_store(db_path=tmp_path / "missing.duckdb", cache_dir=tmp_path / "cache", log=logs.append)
    yield from watched(tmp_path, router, logs)


def top(router: Router, query: str) -> str:
    (routed,) = router.route([query], top_k=3)
    return routed.ranking[0].skill_id


def reload_lines(logs: list[str]) -> list[str]:
    return [line for line in logs if line.startswith("watch: pool reloaded")]


def test_an_added_skill_is_routed_and_named_by_the_server(served):
    router, watcher, pool, logs = served
    assert top(router, SOURDOUGH) != "sourdough"
    write_skill(pool, "sourdough", "sourdough", "Feed a sourdough starter and bake bread with it.",
                "Feed the starter flour and water daily; bake the loaf once it doubles.")
    assert watcher.reload()
    assert top(router, SOURDOUGH) == "sourdough"
    assert reload_lines(logs)[-1].startswith("watch: pool reloaded: 1 added, 0 changed, 0 removed; 4 skills, "
                                             "1 documents encoded, 3 cached")

    async def call() -> dict:  # the server names skills from the pool published now, not the one it started with
        async with Client(build_server(router)) as client:
            result = await client.call_tool("route_skills", {"query": SOURDOUGH, "top_k": 3})
            assert not result.is_error, result
            return result.structured_content or json.loads(result.content[0].text)

    first = anyio.run(call)["ranking"][0]
    assert (first["skill_id"], first["name"]) == ("sourdough", "sourdough")


def test_an_edited_skill_is_routed_in_its_new_form_and_only_it_is_encoded(served):
    router, watcher, pool, logs = served
    write_skill(pool, "git-bisect", "git-bisect", "Feed a sourdough starter and bake bread with it.",
                "Feed the starter flour and water daily; bake the loaf once it doubles.")
    assert watcher.reload()
    assert top(router, SOURDOUGH) == "git-bisect"
    assert router.skill_by_id["git-bisect"].description == "Feed a sourdough starter and bake bread with it."
    assert reload_lines(logs)[-1].startswith("watch: pool reloaded: 0 added, 1 changed, 0 removed; 3 skills, "
                                             "1 documents encoded, 2 cached")


def test_a_deleted_skill_is_gone(served):
    router, watcher, pool, logs = served
    assert "pdf-forms" in router.engine.ids
    shutil.rmtree(pool / "pdf-forms")
    assert watcher.reload()
    assert "pdf-forms" not in router.engine.ids
    (routed,) = router.route(["fill in the fields of a PDF form"], top_k=3)
    assert "pdf-forms" not in [r.skill_id for r in routed.ranking]
    assert reload_lines(logs)[-1].startswith("watch: pool reloaded: 0 added, 0 changed, 1 removed; 2 skills")


def test_a_broken_edit_keeps_the_last_good_version_and_says_why(served):
    router, watcher, pool, logs = served
    good = router.skill_by_id["pdf-forms"]
    path = pool / "pdf-forms" / "SKILL.md"
    path.write_text("the front matter was deleted by mistake\n", encoding="utf-8")
    assert watcher.reload()
    assert router.skill_by_id["pdf-forms"] == good
    assert top(router, "fill in the fields of a PDF form") == "pdf-forms"
    reported = [line for line in logs if str(path) in line]
    assert len(reported) == 1 and "missing_front_matter" in reported[0], logs
    assert reported[0].endswith("its last good version stays routed")
    assert reload_lines(logs)[-1].startswith("watch: pool reloaded: 0 added, 0 changed, 0 removed; 3 skills")
    write_skill(pool, "sourdough", "sourdough", "Feed a sourdough starter and bake bread with it.", "Bake it.")
    assert watcher.reload()  # still broken at the next reload: still kept, not reported again
    assert router.skill_by_id["pdf-forms"] == good and len([line for line in logs if str(path) in line]) == 1
    write_skill(pool, "pdf-forms", "pdf-forms", "Merge several PDF files into one.", "Use pypdf's writer.")
    assert watcher.reload()  # fixed: the new version replaces the kept one
    assert router.skill_by_id["pdf-forms"].description == "Merge several PDF files into one."


def test_poll_reloads_only_once_the_pool_has_been_quiet(served):
    router, _, pool, logs = served
    now = [0.0]
    # the files' mtimes read against a wall clock at 0: the quiet is counted from when a look found the change
    watcher = PoolWatcher(router, [pool], log=logs.append, quiet=2.0, clock=lambda: now[0], wall=lambda: 0.0)
    assert not watcher.poll()  # nothing changed
    write_skill(pool, "sourdough", "sourdough", "Feed a sourdough starter and bake bread with it.", "Bake it.")
    assert not watcher.poll()  # a change seen: the quiet starts
    now[0] = 1.5
    write_skill(pool, "sourdough-2", "sourdough-2", "Keep a rye sourdough starter.", "Rye flour.")
    assert not watcher.poll()  # another write: the quiet starts again
    now[0] = 3.0
    assert not watcher.poll() and "sourdough" not in router.engine.ids
    now[0] = 3.5
    assert watcher.poll()
    assert "watch: 2 files changed; reloading the pool" in logs
    assert {"sourdough", "sourdough-2"} <= set(router.engine.ids)
    now[0] = 10.0
    assert not watcher.poll()  # nothing new since


def test_a_change_already_quiet_by_its_mtime_is_reloaded_at_the_look_that_finds_it(served):
    router, _, pool, logs = served
    now = [100.0]
    watcher = PoolWatcher(router, [pool], log=logs.append, quiet=2.0, clock=lambda: now[0], wall=lambda: 1_000.0)
    path = write_skill(pool, "sourdough", "sourdough", "Feed a sourdough starter and bake bread with it.", "Bake it.")
    os.utime(path, (998.5, 998.5))  # written 1.5 s before the look: not yet quiet
    assert not watcher.poll() and "sourdough" not in router.engine.ids
    os.utime(path, (997.0, 997.0))  # written 3 s before the look: quiet already, reloaded now
    assert watcher.poll() and "sourdough" in router.engine.ids
    shutil.rmtree(pool / "pdf-forms")  # a removal's time is its folder's mtime
    os.utime(pool, (999.0, 999.0))
    assert not watcher.poll() and "pdf-forms" in router.engine.ids
    now[0] = 101.0  # quiet 2 s since the removal
    assert watcher.poll() and "pdf-forms" not in router.engine.ids
    shutil.rmtree(pool / "git-bisect")
    os.utime(pool, (997.0, 997.0))
    assert watcher.poll() and "git-bisect" not in router.engine.ids


def test_the_background_thread_picks_up_a_new_skill(served):
    router, watcher, pool, _ = served
    watcher.start()
    write_skill(pool, "sourdough", "sourdough", "Feed a sourdough starter and bake bread with it.",
                "Feed the starter flour and water daily; bake the loaf once it doubles.")
    deadline = time.monotonic() + HANG_GUARD_S
    while "sourdough" not in router.engine.ids and time.monotonic() < deadline:
        time.sleep(0.2)
    assert top(router, SOURDOUGH) == "sourdough"
    # what the server held when the thread began to follow the pool is out of the collector's walks until it stops
    assert gc.get_freeze_count() > 0
    watcher.stop()
    assert gc.get_freeze_count() == 0


def test_a_reload_gives_way_to_an_answer_in_flight_and_goes_on_once_it_ends(served_hybrid, monkeypatch):
    """A reload started while a real answer is being made waits at its first step (``give_way``: the wait bound is
    set far beyond the hang guard, so only the answer's end can let it go), and finishes once the answer ends."""
    router, watcher, pool, _ = served_hybrid
    monkeypatch.setattr(give_way, "WAIT_SECONDS", 10 * HANG_GUARD_S)
    write_skill(pool, "sourdough", "sourdough", "Feed a sourdough starter and bake bread with it.",
                "Feed the starter flour and water daily; bake the loaf once it doubles.")
    outcome: list[bool] = []
    reloading = threading.Thread(target=lambda: outcome.append(watcher.reload()))
    unfinished: list[bool] = []  # at each of the answer's checkpoints: the reload has not finished

    def midway() -> None:  # the answer's first checkpoint starts the reload and sees it wait for the answer
        if reloading.ident is None:
            reloading.start()
            deadline = time.monotonic() + HANG_GUARD_S
            while not give_way.answers._idle._waiters:
                assert time.monotonic() < deadline, "the reload never gave way"
                time.sleep(0.01)
        unfinished.append(not outcome)

    (during,) = router.route([SOURDOUGH], top_k=3, checkpoint=midway)
    assert len(unfinished) > 1 and all(unfinished)
    assert "sourdough" not in [r.skill_id for r in during.ranking]
    reloading.join(HANG_GUARD_S)
    assert outcome == [True] and top(router, SOURDOUGH) == "sourdough"


def test_a_reindex_answers_over_the_old_full_index_until_the_new_one_is_published(served_hybrid, monkeypatch):
    router, watcher, pool, logs = served_hybrid
    assert router.ready_signals == SIGNALS
    reached, release = threading.Event(), threading.Event()

    def held() -> None:  # the new pool's encoding waits here: the re-index is caught midway, not by timing
        reached.set()
        release.wait()

    monkeypatch.setattr(router, "start_index", functools.partial(router.engine.start_index, hold=held))
    write_skill(pool, "sourdough", "sourdough", "Feed a sourdough starter and bake bread with it.",
                "Feed the starter flour and water daily; bake the loaf once it doubles.")
    reloading = threading.Thread(target=watcher.reload)
    reloading.start()
    try:
        assert reached.wait(HANG_GUARD_S)
        (during,) = router.route([SOURDOUGH], top_k=3)
        assert during.signals_used == SIGNALS  # never BM25 alone while the new pool's indexes build
        assert "sourdough" not in [r.skill_id for r in during.ranking] and "sourdough" not in router.engine.ids
    finally:
        release.set()
        reloading.join(HANG_GUARD_S)
    (after,) = router.route([SOURDOUGH], top_k=3)
    assert after.signals_used == SIGNALS and after.ranking[0].skill_id == "sourdough"
    assert any("answering with the full index it replaces" in line for line in logs), logs


def test_a_reindex_tokenizes_only_the_changed_document_and_scores_as_a_fresh_build(served_hybrid, monkeypatch):
    router, watcher, pool, _ = served_hybrid
    tokenized: list[str] = []
    real = lexical.lexical_tokens
    monkeypatch.setattr(lexical, "lexical_tokens", lambda text: tokenized.append(text) or real(text))
    write_skill(pool, "pdf-forms", "pdf-forms", "Merge several PDF files into one.", "Use pypdf's writer.")
    assert watcher.reload()
    edited = lexical_document(router.skill_by_id["pdf-forms"])
    assert tokenized == [edited]
    queries = ["merge PDF files", "docker compose network", SOURDOUGH]
    fresh, _ = LexicalIndex.build_or_load([lexical_document(s) for s in router.skills])
    assert (router.pool.lexical.scores(queries) == fresh.scores(queries)).all()


def test_a_reindex_whose_encoding_fails_keeps_the_old_pool_served_and_says_so(served_hybrid, monkeypatch):
    router, watcher, pool, logs = served_hybrid

    def disk_full() -> None:  # the fault: the new pool's encoding fails before any document
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(router, "start_index", functools.partial(router.engine.start_index, hold=disk_full))
    write_skill(pool, "sourdough", "sourdough", "Feed a sourdough starter and bake bread with it.", "Bake it.")
    assert not watcher.reload()
    assert "sourdough" not in router.engine.ids and router.ready_signals == SIGNALS
    assert logs[-1] == ("watch: the pool's full index was not built (OSError: [Errno 28] No space left on device): "
                        "the last indexed pool stays served"), logs[-3:]


def test_a_reload_parses_only_the_changed_file_and_reads_no_manifest_file(served, monkeypatch):
    """The serving process keeps the last read's parse outcomes in memory: the manifest on disk (two sealed JSON
    passes over the whole pool) is read by the first reload only."""
    router, watcher, pool, logs = served
    monkeypatch.setattr(pool_manifest, "RACY_SECONDS", 0.0)  # the files just written may be kept at once
    assert watcher.reload()  # the first read goes through the pool's manifest
    touched: list[str] = []
    monkeypatch.setattr(PoolManifest, "_load", lambda self: touched.append("load"))
    monkeypatch.setattr(PoolManifest, "save", lambda self: touched.append("save"))
    write_skill(pool, "git-bisect", "git-bisect", "Find the commit that broke the build by bisecting.", "Bisect.")
    assert watcher.reload()
    assert touched == []
    assert router.skill_by_id["git-bisect"].description == "Find the commit that broke the build by bisecting."
    assert reload_lines(logs)[-1].endswith("SKILL.md files parsed: 1 (2 unchanged)")


def test_a_reindex_detects_the_language_of_the_changed_skill_alone(served, monkeypatch):
    router, watcher, pool, _ = served
    detected: list[str] = []
    real = signals.detect_language
    monkeypatch.setattr(signals, "detect_language", lambda text: detected.append(text) or real(text))
    write_skill(pool, "pdf-forms", "pdf-forms", "Stamp a watermark on every page of a PDF.", "Use pypdf's merge_page.")
    assert watcher.reload()
    assert len(detected) == 1 and detected[0].startswith("Stamp a watermark on every page of a PDF.")


def test_a_reload_reads_the_pool_through_the_walk_of_the_look_that_decided_it(served, monkeypatch):
    """The look at the pool walks it and stats every file; the reload it decides reads through that walk instead of
    walking and stat-ing 10,000 files again, and still parses the changed file alone."""
    router, watcher, pool, logs = served
    monkeypatch.setattr(pool_manifest, "RACY_SECONDS", 0.0)  # the files just written may be kept at once
    assert watcher.reload()  # the first read goes through the pool's manifest
    write_skill(pool, "git-bisect", "git-bisect", "Find the commit that broke the build by bisecting.", "Bisect.")
    os.utime(pool / "git-bisect" / "SKILL.md", (997.0, 997.0))  # long quiet: the look that finds it reloads
    walked, statted_by = [], set()
    real_walk, real_lstat = skill_files.walk_skill_paths, os.lstat

    def walk(root, *args):
        walked.append(root)
        return real_walk(root, *args)

    def lstat(path):
        statted_by.add(sys._getframe(1).f_globals["__name__"])
        return real_lstat(path)

    for module in (skill_files, watch):
        monkeypatch.setattr(module, "walk_skill_paths", walk)
    monkeypatch.setattr(os, "lstat", lstat)
    assert watcher.poll()
    assert walked == [pool]  # the look's walk alone
    assert pools.__name__ not in statted_by and watch.__name__ in statted_by
    assert router.skill_by_id["git-bisect"].description == "Find the commit that broke the build by bisecting."
    assert reload_lines(logs)[-1].endswith("SKILL.md files parsed: 1 (2 unchanged)")
