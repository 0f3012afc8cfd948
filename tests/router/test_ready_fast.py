"""Ready at once, complete soon (issue 23): BM25 answers while the dense and multilingual indexes build.

Real components throughout: the bundled MiniLM, USE multilingual, BM25, the shipped router and its lexical
path, the real MCP server and the SDK's client. "Before the dense index exists" is held open by an event the
build waits on (``start_index(hold=...)``) or by an encoder that waits for one, never by timing.
"""
from __future__ import annotations

import json
import re
import threading

import anyio
import numpy as np
import pytest
from bilingual_pool import SKILLS
from mcp import Client

from skill_assets.lib.retrieval.engine_config import FittedRouting
from skill_assets.lib.models.bundled_models import bundled_minilm
from skill_assets.lib.retrieval.defaults import LEXICAL_SUBDIR, SHIPPED_DIR, lexical_router, shipped_router
from skill_assets.lib.retrieval.fusion_training import CARD_FILE, SELECTION_FILE
from skill_assets.lib.retrieval.pool_index import IndexStopped
from skill_assets.lib.retrieval.signals import SIGNALS
from skill_assets.lib.retrieval.engine import Engine
from skill_assets.router import Router, Skill
from skill_assets.router.cli import main as cli_main
from skill_assets.router.serve import build_server
from skill_assets.router.shipped_router import fitting_requests
from skill_assets.router.shipped_router import same_language as same_language_request

pytestmark = pytest.mark.timeout(1200)

ZH_DOCKER = "我的 docker compose 里的几个容器互相访问不到"
EN_DOCKER = "my docker compose services cannot reach each other by name"
PROGRESS = re.compile(r"^(dense|multilingual): encoded \d+/\d+ documents \(\d+\.\d/s, about \d+ (s|min \d\d s) left\)$")


def _skills() -> list[Skill]:
    return [Skill(sid, *fields) for sid, fields in SKILLS.items()]


def _payload(result) -> dict:
    assert not result.is_error, result
    return result.structured_content or json.loads(result.content[0].text)


def test_a_serve_session_answers_lexically_before_the_dense_index_exists_and_fully_after(tmp_path):
    logs: list[str] = []
    router = Router.from_store(db_path=tmp_path / "missing.duckdb", cache_dir=tmp_path / "cache", log=logs.append)
    assert router.engine.lexical_fusion is not None and router.engine.lexical_fusion.signals == ("bm25",)
    hold = threading.Event()
    build = router.engine.start_index(_skills(), shard_size=4, hold=hold.wait)  # cold cache: the encoders must run
    assert not build.done and router.ready_signals == ("bm25",) and router.dense.matrix is None
    assert router.engine.encode_calls == 0

    async def session():
        async with Client(build_server(router)) as client:
            before = _payload(await client.call_tool("route_skills", {"query": EN_DOCKER, "top_k": 3}))
            await anyio.to_thread.run_sync(lambda: (hold.set(), build.wait()))
            after = _payload(await client.call_tool("route_skills", {"query": EN_DOCKER, "top_k": 3}))
            cross = _payload(await client.call_tool("route_skills", {"query": ZH_DOCKER, "top_k": 3}))
            return before, after, cross

    before, after, cross = anyio.run(session)
    assert router.dense.matrix is not None and router.engine.encode_calls == len(SKILLS)  # encoded only after the hold
    assert before["signals_used"] == ["bm25"]
    assert before["ranking"][0]["skill_id"] == "devops/docker-compose-networking"
    assert set(before["ranking"][0]["signals"]) == {"bm25", "fused"}  # the lexical fusion, not a broken full one
    assert before["selected"] and before["selected"][0] == before["ranking"][0]["skill_id"]
    assert before["ranking"][0]["name"] and before["ranking"][0]["description"]
    for full in (after, cross):
        assert full["signals_used"] == list(SIGNALS)
        assert set(full["ranking"][0]["signals"]) == {*SIGNALS, "fused"}
        assert full["ranking"][0]["skill_id"] == "devops/docker-compose-networking"
    # the build said where it stood: BM25 first, then each encoder's documents done, rate and time left
    assert any(line.startswith("lexical index ready in") and "while the dense and multilingual indexes build" in line
               for line in logs), logs
    for encoder in ("dense", "multilingual"):
        assert [line for line in logs if line.startswith(f"{encoder}: encoded") and PROGRESS.match(line)], logs
    assert any(line.startswith("full index ready in") and line.endswith("bm25, dense, multilingual, gloss") for line in logs)
    assert build.complete and build.stats.encoded == 3 * len(SKILLS)  # dense; multilingual document, description


def test_a_second_start_encodes_nothing_and_goes_full_once_its_request_encoders_are_loaded(tmp_path):
    first = Router.from_store(db_path=tmp_path / "missing.duckdb", cache_dir=tmp_path / "cache")
    first.index(_skills())
    logs: list[str] = []
    second = Router.from_store(db_path=tmp_path / "missing.duckdb", cache_dir=tmp_path / "cache", log=logs.append)
    hold = threading.Event()
    build = second.engine.start_index(_skills(), hold=hold.wait)
    assert second.route([EN_DOCKER], top_k=3)[0].signals_used == ("bm25",)  # answers before anything is loaded
    hold.set()
    stats = build.wait()
    assert build.complete and stats.encoded == 0 and stats.cached == len(SKILLS) and second.engine.encode_calls == 0
    assert second.ready_signals == SIGNALS and second.dense._query_encoder is not None  # loaded before it was published
    assert np.array_equal(second.dense.matrix, first.dense.matrix)
    (routed,) = second.route([EN_DOCKER], top_k=3)
    assert routed.signals_used == SIGNALS and routed.as_dict()["signals_used"] == list(SIGNALS)
    assert any(line.startswith("full index ready in") and "(0 documents encoded" in line for line in logs), logs


def test_routing_while_the_encoders_write_never_sees_a_half_built_index(tmp_path):
    """The dense matrix is complete while USE still encodes: nothing is published until both are, so a call in
    between routes on BM25 alone (here with no lexical fusion: BM25's ranking, its first skill selected)."""
    fusion, cut = shipped_router()
    logs: list[str] = []
    dense_done, release = threading.Event(), threading.Event()

    def log(line: str) -> None:
        logs.append(line)
        if line.startswith("dense: encoded") and " in " in line:  # the dense side's last line
            dense_done.set()

    router = Engine(bundled_minilm(), cache_dir=tmp_path / "cache", fitted=FittedRouting(fusion, cut), log=log)
    encode = router.multilingual.encode

    def held_encode(texts, threads=None):
        if len(texts) > 1:  # a document batch, not a request
            release.wait()
        return encode(texts, threads)

    router.multilingual.encode = held_encode
    build = router.start_index(_skills())
    assert dense_done.wait(600), logs  # a hang guard only: the event is what orders the test
    assert router.encode_calls == len(SKILLS) and not build.done
    (routed,) = router.route([EN_DOCKER], top_k=3)
    assert routed.signals_used == ("bm25",) and router.dense.matrix is None and not router.complete
    assert routed.ranking[0].skill_id == "devops/docker-compose-networking"
    assert set(routed.ranking[0].signals) == {"bm25"} and routed.selected == [routed.ranking[0].skill_id]
    assert [r.score for r in routed.ranking] == sorted((r.score for r in routed.ranking), reverse=True)
    release.set()
    build.wait()
    (full,) = router.route([EN_DOCKER], top_k=3)
    assert full.signals_used == SIGNALS and router.complete and router.dense.matrix.shape[0] == len(SKILLS)


def test_a_failed_or_stopped_build_leaves_the_lexical_answers_and_says_why(tmp_path):
    logs: list[str] = []
    router = Router.from_store(db_path=tmp_path / "missing.duckdb", cache_dir=tmp_path / "cache", log=logs.append)

    def broken(texts, threads=None):
        raise OSError("no space left on device")

    router.engine.multilingual.encode = broken
    build = router.start_index(_skills())
    with pytest.raises(OSError, match="no space left"):
        build.wait()
    assert not build.complete and router.ready_signals == ("bm25",)
    assert any("answers stay lexical" in line and "no space left" in line for line in logs), logs
    assert router.route([EN_DOCKER], top_k=2)[0].signals_used == ("bm25",)

    hold = threading.Event()
    stopped = router.engine.start_index(_skills(), hold=hold.wait)
    stopped.stop(timeout=0)  # asked while held: ends before encoding anything
    hold.set()
    with pytest.raises(IndexStopped):
        stopped.wait()
    assert router.ready_signals == ("bm25",) and router.dense.matrix is None


def test_route_ready_lexical_answers_from_bm25_and_builds_no_encoder_index(toy, tmp_path, capsys):
    *_, root = toy
    base = ["route", "--pool", str(root / "pool"), "--db", str(tmp_path / "no-store.duckdb")]
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"id": "q", "query": EN_DOCKER}) + "\n")
    cold = tmp_path / "cold-cache"
    assert cli_main([*base, "--cache-dir", str(cold), "--ready", "lexical", "--queries", str(queries),
                     "--out", str(tmp_path / "lexical.jsonl")]) == 0
    line = json.loads((tmp_path / "lexical.jsonl").read_text())
    assert line["signals_used"] == ["bm25"] and set(line["ranking"][0]["signals"]) == {"bm25", "fused"}
    assert line["ranking"][0]["skill_id"] == "devops/docker-compose-networking" and line["selected"]
    # no encoder ran: nothing else was cached (``pools``: the pool's manifest, read before any index)
    assert sorted(p.name for p in cold.iterdir() if p.name != "pools") == ["bm25"]
    assert "signals used: bm25" in capsys.readouterr().err
    # the default waits for every index (the toy cache holds them all)
    assert cli_main([*base, "--cache-dir", str(root / "cache"), "--queries", str(queries),
                     "--out", str(tmp_path / "full.jsonl")]) == 0
    assert json.loads((tmp_path / "full.jsonl").read_text())["signals_used"] == list(SIGNALS)


def test_the_shipped_lexical_path_is_a_bm25_fusion_whose_card_matches_its_files():
    model, cut = lexical_router(SHIPPED_DIR)
    folder = SHIPPED_DIR / LEXICAL_SUBDIR
    card = json.loads((folder / CARD_FILE).read_text())
    assert model.signals == ("bm25",) and model.card == card
    assert json.loads((folder / SELECTION_FILE).read_text()) == card["selection"] == cut.as_dict()
    full = shipped_router()[0].card["data"]
    assert card["data"]["pool_ids_hash"] == full["pool_ids_hash"]  # over the same pool as the full model
    same_language, _ = fitting_requests(keep=same_language_request)  # its same-language requests alone
    assert card["data"]["train_requests"] == sum(r.split == "train" for r in same_language) < full["train_requests"]
    assert card["data"]["dev_requests"] == sum(r.split == "dev" for r in same_language) < full["dev_requests"]
    assert card["data"]["test_requests_read"] == 0
    text = json.dumps(card)
    assert "/root/" not in text and "/work/" not in text and "/home/" not in text
    # a router folder without its own lexical path borrows the shipped one
    assert lexical_router(SHIPPED_DIR / "no-such-folder")[0].card == card


def test_the_index_from_the_tokenizers_own_ids_scores_as_bm25s_own_index():
    """The index takes token ids from the tokenizer's pass instead of bm25s' vocabulary pass: no score changes."""
    import bm25s

    from skill_assets.lib.retrieval.lexical import LexicalIndex, lexical_tokens
    from skill_assets.lib.retrieval.signals import lexical_document

    docs = [lexical_document(s) for s in _skills()] + ["", "The and of", "用 Docker 部署，docker-compose.yml 里的 depends_on",
                                                       "ÜBER café — naïve C++ / C# 与中文混排"]
    assert lexical_tokens("The and of") == ["<empty>"]
    assert lexical_tokens("用 Docker 部署") == ["docker", "用", "部署"] and lexical_tokens("中文混排") == ["中文", "文混", "混排"]
    reference = bm25s.BM25()
    reference.index([lexical_tokens(d) for d in docs], show_progress=False)
    index, _ = LexicalIndex.build_or_load(docs, None)
    queries = [EN_DOCKER, ZH_DOCKER, "帮我写一封应聘数据分析师岗位的求职信", "pdf 表单 fill", "the"]
    assert np.array_equal(index.scores(queries), LexicalIndex(reference).scores(queries))
