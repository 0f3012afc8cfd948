"""Long requests over a real pool (shared-corpus skills, the shipped router, its real encoders): scoring every text of
a call in one pass per signal leaves the rankings as they were, and a stop lands inside a long query's encoding.

``long_request_rankings.json`` holds what ``Router.route`` answers for the long-task dev statements of
``long_request_pool``: the top 20 and the selection, scores rounded to 4 decimals. It was first recorded before the
parts were scored in one pass (four texts of like length per call then), and the one-pass scoring reproduced it; it
is recorded again, by the same call, whenever the shipped router is refitted (last: the multilingual signal came
to read each skill's description alone beside its document), so it pins the path, not a fusion."""
import json
import os
import threading
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from long_request_pool import long_request_pool, long_requests  # noqa: E402

from skill_assets.lib.retrieval.engine_config import EngineSettings
from skill_assets.lib.retrieval.chunking import text_chunks  # noqa: E402
from skill_assets.lib.retrieval.dense import QUERY_CHUNK_CHARS, QUERY_GROUP as DENSE_GROUP  # noqa: E402
from skill_assets.lib.retrieval.multilingual import CHUNK_CHARS, QUERY_GROUP  # noqa: E402
from skill_assets.lib.retrieval.part_routing import route_by_parts  # noqa: E402
from skill_assets.lib.retrieval.task_parts import need_parts, task_parts  # noqa: E402
from skill_assets.router import Router  # noqa: E402

EXPECTED = Path(__file__).with_name("long_request_rankings.json")
#: the longest query the MCP server takes (``serve.MAX_QUERY_CHARS`` is 20,000)
LONG_QUERY_CHARS = 19_999


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """The module's index cache: the pool is encoded by the first test, loaded by the others."""
    return tmp_path_factory.mktemp("long-requests")


@pytest.fixture
def router(root, shared_corpus):
    """The shipped router (no store) over the small real pool, documents embedded in fp32."""
    router = Router.from_store(db_path=root / "no-store.duckdb", cache_dir=root / "cache",
                               settings=EngineSettings(embedder_backend="torch"))
    router.index(long_request_pool(shared_corpus, long_requests()))
    return router


def _ranked(answer) -> tuple[list[str], list[str]]:
    return [r.skill_id for r in answer.ranking], answer.selected


def test_long_requests_in_both_languages_route_as_before_the_one_pass_scoring(router):
    requests = long_requests()
    assert {r.writing.lang for r in requests} == {"en", "zh"}
    assert all(len(need_parts(task_parts(r.query))) > 1 for r in requests)  # every one takes the part-wise path
    expected = json.loads(EXPECTED.read_text())
    answers = router.route([r.query for r in requests], top_k=20)
    # the selection then was the cut's alone (at most its cap); a statement of more need parts now adds their best
    cut_alone = route_by_parts(router.engine, [r.query for r in requests], top_k=20, most=router.engine.selection.cap,
                               part_probability=1.0)
    for request, answer, alone in zip(requests, answers, cut_alone):
        want = expected[request.id]
        assert _ranked(alone) == (want["ranking"], want["selected"]), request.id
        assert answer.ranking == alone.ranking and answer.selected[:len(alone.selected)] == alone.selected
        assert [round(r.score, 4) for r in answer.ranking] == pytest.approx(want["scores"], abs=2e-4)


def test_a_long_request_routes_alone_as_it_does_beside_others(router):
    """The unbatched computation: each statement routed by itself gives the ranking and selection it gets inside one
    call with the others (whose pieces share that call's encoder passes)."""
    queries = [r.query for r in long_requests()]
    together = route_by_parts(router.engine, queries, top_k=20)
    for query, answer in zip(queries, together):
        (alone,) = route_by_parts(router.engine, [query], top_k=20)
        assert _ranked(alone) == _ranked(answer)
        assert [r.score for r in alone.ranking] == pytest.approx([r.score for r in answer.ranking], abs=1e-4)


class Stopped(Exception):
    """What the test's checkpoint raises once its stop event is set (``serve.CallStopped`` in the server)."""


def _long_query() -> str:
    text = "\n\n".join(r.query for r in long_requests() if r.writing.lang == "en")
    return (text * (LONG_QUERY_CHARS // len(text) + 1))[:LONG_QUERY_CHARS]


def _stop_after(encode, stop: threading.Event, pieces: int, done: list[int]):
    """``encode`` that counts the pieces it has encoded into ``done`` and sets ``stop`` once ``pieces`` are done: the
    client leaving mid-encoding."""
    def counting(texts, *args, **kwargs):
        out = encode(texts, *args, **kwargs)
        done[0] += len(texts)
        if done[0] >= pieces:
            stop.set()
        return out

    return counting


def _checkpoint(stop: threading.Event):
    def checkpoint() -> None:
        if stop.is_set():
            raise Stopped

    return checkpoint


def test_a_stop_set_mid_encoding_ends_the_dense_encoding_of_a_long_query_at_the_next_piece(router, monkeypatch):
    query = _long_query()
    total = len(text_chunks(query, QUERY_CHUNK_CHARS))
    assert total >= 15
    stop, done = threading.Event(), [0]
    assert router.engine.dense.query_encoder.backend == "numpy"
    monkeypatch.setattr(router.engine.dense, "encode", _stop_after(router.engine.dense.encode, stop, 1, done))
    with pytest.raises(Stopped):
        router.engine.signal_scores([query], _checkpoint(stop), signals=("dense",))
    assert done[0] == DENSE_GROUP["numpy"] < total  # one call's pieces, then the stop


def test_a_stop_set_mid_encoding_ends_the_multilingual_encoding_of_a_long_query_at_the_next_group(router,
                                                                                                   monkeypatch):
    query = _long_query()
    total = len(text_chunks(query, CHUNK_CHARS))
    assert total > 3 * QUERY_GROUP
    stop, done = threading.Event(), [0]
    encoder = router.engine.pool.multilingual.encoder
    monkeypatch.setattr(encoder, "encode", _stop_after(encoder.encode, stop, 1, done))
    with pytest.raises(Stopped):
        router.engine.signal_scores([query], _checkpoint(stop), signals=("multilingual",))
    assert done[0] == QUERY_GROUP  # one group of pieces, then the stop


def test_a_stop_mid_encoding_ends_a_routed_long_query_and_the_router_answers_after(router, monkeypatch):
    """Through ``Router.route`` (the part-wise path ``serve`` takes): the stop ends the call inside the first signal's
    encoding, and the router answers the next call as usual."""
    query = _long_query()
    stop, done = threading.Event(), [0]
    with monkeypatch.context() as patch:
        patch.setattr(router.engine.dense, "encode", _stop_after(router.engine.dense.encode, stop, 1, done))
        with pytest.raises(Stopped):
            router.route([query], checkpoint=_checkpoint(stop))
    assert done[0] == DENSE_GROUP["numpy"]
    (answer,) = router.route([query[:3000]], top_k=5)
    assert len(answer.ranking) == 5 and answer.signals_used == tuple(router.engine.fusion.signals)
