"""The shipped router's abstention (issue 34): where no skill fits a request it selects none and says why, the
ranking unchanged; the file is checked like every router model file and used only over the fusion and encoders it
was fitted over. Requests are routed by the real shipped router (bundled models, no store) over the toy pool."""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace

import anyio
import numpy as np
import pytest
from bilingual_pool import SKILLS
from mcp import Client

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from skill_assets.lib.retrieval.engine_config import EngineSettings
from skill_assets.lib.evaluation.curated_benchmark import load_requests  # noqa: E402
from skill_assets.lib.retrieval.abstention import (  # noqa: E402
    ABSTENTION_FILE,
    Abstention,
    choose_threshold,
    description_cosines,
    feature_names,
    fusion_digest,
    recipe_hash,
    request_features,
    unnamed_description_cosines,
    without_name,
)
from skill_assets.lib.retrieval.defaults import SHIPPED_DIR, shipped_router  # noqa: E402
from skill_assets.lib.retrieval.fusion import MODEL_FILE, Candidates  # noqa: E402
from skill_assets.lib.retrieval.model_files import ModelFileError  # noqa: E402
from skill_assets.lib.retrieval.multilingual import MultilingualEncoder, MultilingualIndex  # noqa: E402
from skill_assets.lib.retrieval.pool_index import PoolIndex  # noqa: E402
from skill_assets.lib.retrieval.signals import multilingual_description, multilingual_document  # noqa: E402
from skill_assets.lib.retrieval.task_parts import task_parts  # noqa: E402
from skill_assets.router import Router, Skill  # noqa: E402
from skill_assets.router.cli import main as route_main  # noqa: E402
from skill_assets.router.serve import build_server  # noqa: E402
from skill_assets.router.shipped_abstention import load_no_fit  # noqa: E402
from skill_assets.router.shipped_router import CURATED_REQUESTS, MEANING_REQUESTS, STYLES_REQUESTS  # noqa: E402

pytestmark = pytest.mark.timeout(900)

CHIT_CHAT = "lol that worked, thanks a ton"
ANSWERABLE = "my docker compose services cannot reach each other by name"


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """The shipped router as a fresh install gets it (no store), over the toy pool, and its cache folder."""
    root = tmp_path_factory.mktemp("abstention")
    router = Router.from_store(db_path=root / "missing.duckdb", cache_dir=root / "cache")
    router.index([Skill(sid, *fields) for sid, fields in SKILLS.items()])
    return router, root


def test_the_shipped_abstention_is_fitted_over_the_shipped_router_and_its_card_tells_what_it_saw():
    model = Abstention.load(SHIPPED_DIR / ABSTENTION_FILE)
    fusion, _ = shipped_router()
    assert model.fusion_digest == fusion_digest(SHIPPED_DIR) and model.signals == fusion.signals
    card, data = model.card, model.card["data"]
    no_fit = load_no_fit()
    assert data["no_fit_train"] == sum(r.split == "train" for r in no_fit)
    assert data["no_fit_dev"] == sum(r.split == "dev" for r in no_fit)
    answerable = load_requests(MEANING_REQUESTS) + load_requests(CURATED_REQUESTS)
    assert data["answerable_train"] == sum(r.split == "train" for r in answerable)
    styles_dev = sum(r.split == "dev" for r in load_requests(STYLES_REQUESTS))
    assert data["answerable_dev"] == sum(r.split == "dev" for r in answerable) + styles_dev
    assert data["test_requests_read"] == 0 and "--abstention-only" in data["rebuild"]
    assert card["threshold"] == round(model.threshold, 4) and "F1" in card["rule"]
    assert card["recipe_hash"] == recipe_hash(model.signals)  # fitted by the recipe this code computes
    dev = card["dev"]
    assert dev["no_fit"]["n"] == data["no_fit_dev"] and dev["answerable"]["f1_drop"] <= 0.02
    assert set(dev["no_fit"]["by_kind"]) == {"chit_chat", "off_topic", "uncovered", "near_miss"}
    text = json.dumps(card)
    assert "/root/" not in text and "/work/" not in text and "/home/" not in text  # no machine path


def _body() -> dict:
    return json.loads((SHIPPED_DIR / ABSTENTION_FILE).read_text())


DAMAGED = {
    "truncated": lambda: json.dumps(_body())[:200],
    "a list": lambda: "[]",
    "another format": lambda: json.dumps({**_body(), "format": 99}),
    "unknown signal": lambda: json.dumps({**_body(), "signals": ["bm25", "telepathy"]}),
    "no multilingual signal": lambda: json.dumps({**_body(), "signals": ["bm25", "dense"]}),
    "other features": lambda: json.dumps({**_body(), "features": ["bm25:best"]}),
    "another recipe": lambda: json.dumps({**_body(), "card": {**_body()["card"], "recipe_hash": "0" * 64}}),
    "a card not an object": lambda: json.dumps({**_body(), "card": ["threshold"]}),
    "a coefficient short": lambda: json.dumps({**_body(), "coef": _body()["coef"][:-1]}),
    "a text weight": lambda: json.dumps({**_body(), "coef": ["x", *_body()["coef"][1:]]}),
    "a zero scale": lambda: json.dumps({**_body(), "scale": [0.0, *_body()["scale"][1:]]}),
    "a threshold above one": lambda: json.dumps({**_body(), "threshold": 1.5}),
    "no fusion digest": lambda: json.dumps({**_body(), "fusion_digest": None}),
    "no encoders": lambda: json.dumps({**_body(), "encoders": []}),
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_a_damaged_abstention_file_is_refused_in_one_line_naming_it(case, tmp_path):
    path = tmp_path / ABSTENTION_FILE
    path.write_text(DAMAGED[case]())
    with pytest.raises(ModelFileError) as refused:
        Abstention.load(path)
    assert str(path) in str(refused.value) and "\n" not in str(refused.value)


def test_an_abstention_fitted_by_another_recipe_is_refused_naming_the_command_that_refits_it(tmp_path):
    """A file whose features are named as this code names them but were computed otherwise (an older recipe) would
    be read with other meanings: it is refused, and the line says how to refit it."""
    path = tmp_path / ABSTENTION_FILE
    path.write_text(json.dumps({**_body(), "card": {**_body()["card"], "recipe_hash": "0" * 64}}))
    with pytest.raises(ModelFileError, match="another recipe") as refused:
        Abstention.load(path)
    assert "--abstention-only" in str(refused.value)


def test_an_abstention_fitted_over_another_fusion_is_left_out_with_one_line(tmp_path):
    folder = tmp_path / "router"
    shutil.copytree(SHIPPED_DIR, folder)
    body = json.loads((folder / MODEL_FILE).read_text())
    (folder / MODEL_FILE).write_text(json.dumps({**body, "depth": body["depth"] + 1}))  # a refit fusion
    lines: list[str] = []
    router = Router.from_store(db_path=tmp_path / "missing.duckdb", fusion=folder, cache_dir=tmp_path / "cache",
                               log=lines.append)
    assert router.engine.fusion is not None and router.engine.abstention is None
    said = [line for line in lines if "abstention" in line]
    assert len(said) == 1 and "another fusion" in said[0] and "--abstention-only" in said[0]


def test_an_abstention_over_other_encoders_is_left_out_with_one_line(tmp_path):
    lines: list[str] = []
    router = Router.from_store(db_path=tmp_path / "missing.duckdb", cache_dir=tmp_path / "cache",
                               settings=EngineSettings(multilingual_model="another/multilingual-model"),
                               log=lines.append)
    assert router.engine.abstention is None
    assert len([line for line in lines if "abstention not used" in line and "encoders" in line]) == 1


def test_small_talk_selects_no_skill_and_says_why_an_answerable_request_loads_one(shipped):
    router, _ = shipped
    assert router.engine.abstention is not None
    chat, task = router.route([CHIT_CHAT, ANSWERABLE], top_k=5)
    assert chat.selected == [] and chat.no_fit.startswith("no skill fits:") and "\n" not in chat.no_fit
    assert len(chat.ranking) == 5  # the nearest skills, still
    assert task.no_fit is None and task.selected[0] == "devops/docker-compose-networking"
    assert chat.as_dict("q")["no_fit"] == chat.no_fit and "no_fit" not in task.as_dict("q")


#: small talk written as a statement of several parts: the router routes it by its parts (``part_routing``)
CHIT_CHAT_IN_PARTS = ("Weekend plans, nothing to do with work.\n\n1. Call my grandmother on Sunday afternoon and ask "
                      "about her garden.\n2. Decide whether we watch a comedy or a thriller on Saturday night.\n"
                      "3. Remember to water the basil on the balcony before we leave.")
TASK_IN_PARTS = ("Our staging stack needs two fixes before Friday.\n\n1. The docker compose services cannot reach each "
                 "other by name, so the api cannot find the database.\n2. The orders report query in PostgreSQL takes "
                 "forty seconds; read its plan and add whatever index it is missing.")


def test_a_request_routed_by_its_parts_abstains_as_the_whole_request_would(shipped):
    """A statement of several parts is merged part by part, and the abstention reads the whole request as it reads a
    short one: small talk in numbered items selects none and says why, a task of two needs still loads its skills."""
    router, _ = shipped
    chat, task = router.route([CHIT_CHAT_IN_PARTS, TASK_IN_PARTS], top_k=5)
    assert len(task_parts(CHIT_CHAT_IN_PARTS)) > 1 and len(task_parts(TASK_IN_PARTS)) > 1  # the part-wise path
    whole_chat, whole_task = router.engine.route([CHIT_CHAT_IN_PARTS, TASK_IN_PARTS], top_k=5)
    assert whole_chat.selected == [] and chat.selected == [] and chat.no_fit == whole_chat.no_fit
    assert len(chat.ranking) == 5
    assert task.no_fit is None and whole_task.no_fit is None and "devops/docker-compose-networking" in task.selected


def test_abstention_leaves_every_ranking_as_it_is(shipped):
    router, _ = shipped
    queries = [CHIT_CHAT, ANSWERABLE, "帮我写一封应聘数据分析师岗位的求职信", "你好呀，今天过得怎么样"]
    with_abstention = router.route(queries, top_k=10)
    model, router.engine.abstention = router.engine.abstention, None
    try:
        without = router.route(queries, top_k=10)
    finally:
        router.engine.abstention = model
    assert [r.ranking for r in with_abstention] == [r.ranking for r in without]
    assert all(r.selected for r in without)


def test_route_prints_the_reason_and_marks_no_skill(shipped, tmp_path, capsys):
    _, root = shipped
    pool = tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps({"id": sid, "name": name, "description": desc, "body": body}) + "\n"
                            for sid, (name, desc, body) in SKILLS.items()))
    assert route_main(["route", "--pool", str(pool), "--query", CHIT_CHAT, "--cache-dir", str(root / "cache"),
                       "--db", str(root / "missing.duckdb"), "--top-k", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("no skill fits:")
    table = out[1:]
    assert table[0].split() == ["rank", "load", "skill_id", "score", "name"] and len(table) == 5
    assert not any("*" in row for row in table[2:])


def test_route_skills_says_no_skill_fits_and_lists_the_nearest_through_the_sdk_client(shipped):
    router, _ = shipped

    async def call(query: str) -> dict:
        async with Client(build_server(router)) as client:
            result = await client.call_tool("route_skills", {"query": query, "top_k": 3})
            assert not result.is_error, result
            return result.structured_content or json.loads(result.content[0].text)

    chat, task = anyio.run(call, CHIT_CHAT), anyio.run(call, ANSWERABLE)
    assert chat["selected"] == [] and chat["no_fit"].startswith("no skill fits")
    assert len(chat["ranking"]) == 3 and all(entry["name"] and entry["description"] for entry in chat["ranking"])
    assert "no_fit" not in task and task["selected"][0] == "devops/docker-compose-networking"


def test_the_threshold_is_the_lowest_within_the_f1_budget():
    p_answerable = np.array([0.1, 0.2, 0.6, 0.7, 0.95])
    f1 = np.array([1.0, 1.0, 1.0, 0.0, 0.05])  # the 0.7 one is answered wrongly anyway: abstaining costs nothing
    p_no_fit = np.array([0.3, 0.65, 0.8, 0.99])
    t = choose_threshold(p_no_fit, p_answerable, f1, budget=0.02)
    assert t == pytest.approx((0.6 + 0.65) / 2)  # just above the first request whose abstention costs F1 0.2
    assert np.where(p_answerable >= t, f1, 0).mean() <= 0.02 and (p_no_fit >= t).mean() == 0.75
    assert choose_threshold(p_no_fit, p_answerable, f1, budget=1.0) == 0.1  # everything may abstain


def test_the_features_are_the_signals_best_and_first_skill_scores_in_one_block_per_request_language():
    assert feature_names(("bm25", "dense")) == [
        "en:bm25:best", "en:dense:best", "en:bm25:first", "en:dense:first", "en:first_description",
        "en:first_description_without_name", "en:latin_share",
        "zh:bm25:best", "zh:dense:best", "zh:bm25:first", "zh:dense:first", "zh:first_description",
        "zh:first_description_without_name", "zh:latin_share", "query_zh"]
    raw = np.array([[12.0, 0.5], [3.0, 0.7]], dtype=np.float32)
    cands = Candidates(np.array([0, 1]), np.zeros((2, 1), np.float32), np.zeros(2, np.int64), False, raw)
    query = "fix the docker network docker"  # a stopword and a repeat: three distinct terms, fix, docker, network
    x = request_features(query, cands, ("bm25", "dense"), pool_size=100, first=0, description=0.3, unnamed=0.2)
    bm25 = 12.0 / np.log(101) / np.log(4)  # BM25 per ln(1 + pool) and per ln(1 + the request's distinct terms)
    assert x == pytest.approx([bm25, 0.7, bm25, 0.5, 0.3, 0.2, 1.0, 0, 0, 0, 0, 0, 0, 0, 0], rel=1e-6)
    # the fused first skill need not be any signal's best: the second candidate first reads its own scores
    assert request_features(query, cands, ("bm25", "dense"), 100, 1, 0.3, 0.2)[2:4] == \
        pytest.approx([3.0 / np.log(101) / np.log(4), 0.7], rel=1e-6)
    zh = request_features("修复网络", replace(cands, query_zh=True), ("bm25", "dense"), 100, 0, 0.3, 0.2)
    assert zh[:7].tolist() == [0.0] * 7 and zh[-1] == 1.0 and zh[8] == pytest.approx(0.7)
    assert zh[11:13] == pytest.approx([0.3, 0.2])
    assert zh[7] == pytest.approx(12.0 / np.log(101) / np.log(4), rel=1e-6)  # three bigrams: 修复, 复网, 网络


@pytest.mark.parametrize(("query", "name", "left"), [
    ("Is Telegram actually end-to-end encrypted?", "telegram-offline-voice", "Is actually end-to-end encrypted?"),
    ("Cloudflare's wall of lava lamps", "oo-cloudflare-worker", "wall of lava lamps"),  # possessive
    ("Cloudflare\u2019s wall", "cloudflare", "wall"),  # a typographic apostrophe
    ("two telegrams, one telegram-bot", "telegram", "two, one-bot"),  # plural; a hyphen splits words
    ("用Telegram发消息", "telegram", "用发消息"),  # Chinese runs on without spaces
    ("the pdf invoice for Acme", "the-pdf-invoice", "the for Acme"),  # the name's stopwords stay
    ("微信读书的会员值不值得买", "微信读书助手", "的会员值不值得买"),  # overlapping bigrams go as one run
    ("Python 二级证书有用吗", "python-pro", "二级证书有用吗"),
    ("书店里的书店", "书 书店", "里的"),  # the longest first, whatever order a set iterates in
    ("telegram", "telegram", ""),  # nothing left
])
def test_the_words_of_the_first_skills_name_are_taken_out_of_the_request(query, name, left):
    assert without_name(query, name) == (left, True)


@pytest.mark.parametrize(("query", "name"), [
    ("go to the AI meetup", "go-ai-helper"),  # words under three letters stay
    ("my résumé, please", "résumé-builder"),  # "sum" is not cut out of a word of another script
    ("line one\n\nline  two ", "telegram"),  # nothing taken out: the text as it came, spaces and all
])
def test_a_request_without_the_names_words_is_left_as_it_is(query, name):
    assert without_name(query, name) == (query, False)


def test_a_near_miss_keeps_no_description_cosine_without_the_name_a_request_the_skill_serves_keeps_some():
    """Through the real USE encoder: requests naming the skill's tools but asking something else of them (a
    company, a conference, which tool to learn) keep nothing of their description cosine once the name's words are
    out; requests for what the skill does keep a clear cosine. The whole request's cosine is kept where no word is
    taken out, where only punctuation is left, and for a skill with no description (its description reading is its
    name). Changed and kept requests are interleaved over two skills, so each lands on its own row."""
    docker = Skill("devops/docker-compose-networking", *SKILLS["devops/docker-compose-networking"])
    telegram = Skill("chat/telegram-bot", "telegram-bot", "", "# Telegram bot\n\nSend messages through the Bot API.")
    skills = [telegram, docker]
    pool = PoolIndex(tuple(skills), np.zeros(2, dtype=bool), ["", ""],
                     multilingual=_index(MultilingualEncoder(), skills))
    queries = ["is docker the company still independent, and who owns it now?",  # near miss
               "my containers cannot reach each other by their service names",  # no name word
               "my docker compose services cannot reach each other by name",  # served
               "is telegram end-to-end encrypted by default?",  # a skill with no description
               "docker compose?",  # only punctuation left
               "does docker the company sponsor any developer conferences in europe this year?",  # near miss
               "the api container can't resolve the db hostname in docker compose",  # served
               "docker compose or kubernetes, which should a beginner learn first?"]  # near miss
    rows = [1, 1, 1, 0, 1, 1, 1, 1]
    described = description_cosines(pool.multilingual.readings(queries).description, rows)
    unnamed = unnamed_description_cosines(queries, rows, pool, described)
    near, serves, kept = unnamed[[0, 5, 7]], unnamed[[2, 6]], [1, 3, 4]
    assert near.max() < 0.05 and serves.min() > near.max() + 0.08, (described, unnamed)
    assert unnamed[kept] == pytest.approx(described[kept])
    assert all(unnamed[i] != pytest.approx(described[i]) for i in (0, 2, 5, 6, 7))


def _index(encoder, skills: list[Skill]) -> MultilingualIndex:
    """A multilingual index of ``skills`` read as the engine reads them (document and description alone)."""
    return MultilingualIndex(encoder, encoder.encode([multilingual_document(s) for s in skills]),
                             encoder.encode([multilingual_description(s) for s in skills]))


def test_the_description_cosine_reads_the_description_alone_and_the_name_where_there_is_none():
    class Encoder:  # one axis per word: "budget", "hotel", "paris"
        def encode(self, texts):
            rows = np.array([[w in t.lower() for w in ("budget", "hotel", "paris")] for t in texts], np.float32)
            return rows / np.clip(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12, None)

    skills = [Skill("paris-hotels", "paris-hotels", "Book a hotel", ""), Skill("paris", "paris budget", "", "")]
    index = _index(Encoder(), skills)
    readings = index.readings(["a hotel please", "my budget"])
    cos = description_cosines(readings.description, [0, 1])
    assert cos == pytest.approx([1.0, 1.0 / np.sqrt(2)])  # not the name's "paris"; the second has only its name
    # the signal is the mean of the request's cosines to the whole document and to the description alone
    document = Encoder().encode(["a hotel please", "my budget"]) @ index.matrix.T
    assert readings.signal == pytest.approx((document + readings.description) / 2)


def test_the_real_multilingual_encoder_scores_a_request_for_what_a_skill_does_above_one_that_shares_its_name():
    """The near miss the feature was added for, through USE itself: a request naming the skill's platform but asking
    something else reads lower against the description than one asking, in other words, for what the skill does."""
    skill = Skill("telegram-bot", "telegram-bot", "Build and deploy a chat bot that answers messages and runs "
                  "commands for a group", "")
    readings = _index(MultilingualEncoder(), [skill]).readings(
        ["set up an assistant that replies to people in our group chat", "is telegram end-to-end encrypted by default"])
    does, names = description_cosines(readings.description, [0, 0])
    assert does > names + 0.1


def test_a_fresh_router_folder_without_an_abstention_routes_as_before(tmp_path):
    folder = tmp_path / "router"
    shutil.copytree(SHIPPED_DIR, folder)
    (folder / ABSTENTION_FILE).unlink()
    lines: list[str] = []
    router = Router.from_store(db_path=tmp_path / "missing.duckdb", fusion=folder, log=lines.append)
    assert router.engine.abstention is None and not [line for line in lines if "abstention" in line]
