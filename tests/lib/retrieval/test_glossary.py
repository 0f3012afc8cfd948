"""The gloss signal: Chinese words cut by the real CC-CEDICT headwords and glossed in English, so a Chinese request
reaches an English skill through the BM25 index that its own characters cannot match."""
from __future__ import annotations

import numpy as np
import pytest

from skill_assets.lib.models.bundled_models import bundled_minilm
from skill_assets.lib.retrieval.engine import Engine
from skill_assets.lib.retrieval.glossary import chinese_words, gloss, with_gloss
from skill_assets.lib.retrieval.pools import Skill

SKILLS = [
    Skill("mail", "meeting-minutes-mailer", "Summarise meeting minutes into a table and send them by mail to the team.",
          "Collect the notes, write the summary, mail it."),
    Skill("stock", "price-forecaster", "Forecast stock prices with a machine learning model.",
          "Fit a model on daily closes and predict the next week."),
    Skill("bake", "sourdough-ledger", "Keep a ledger of sourdough bakes and starter feedings.", "Log every bake."),
    Skill("zh", "周报助手", "把一周的工作整理成周报。", "按项目列出进展和风险。"),
]


def test_words_are_cut_by_the_longest_headword() -> None:
    assert chinese_words("电子邮件地址") == ["电子邮件", "地址"]  # not 电子 + 邮件 + 地址
    assert chinese_words("会议纪要") == ["会议", "纪要"]


def test_chinese_words_gloss_in_english_and_other_text_adds_nothing() -> None:
    words = gloss("把会议纪要整理成表格，然后发邮件给团队").split()
    assert {"meeting", "minutes", "table", "mail", "team"} <= set(words)
    assert "see" not in words and "cl" not in words  # cross-references and classifiers are not senses
    assert gloss("plain English text, nothing to gloss") == ""
    assert with_gloss("plain English") == "plain English"
    assert with_gloss("预测股价").startswith("预测股价 ") and "forecast" in with_gloss("预测股价")


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    engine = Engine(bundled_minilm(), signals=("bm25", "gloss"), cache_dir=tmp_path_factory.mktemp("cache"))
    engine.start_index(SKILLS, encoders="skip")
    return engine


def test_a_chinese_request_reaches_its_english_skill_only_through_the_gloss(engine: Engine) -> None:
    scores = engine.signal_scores(["用机器学习模型预测股票价格", "整理周报"], signals=("bm25", "gloss"))
    stock, weekly = engine.ids.index("stock"), engine.ids.index("zh")
    assert scores["bm25"][0, stock] == 0.0  # no token shared with the English skill
    assert int(np.argmax(scores["gloss"][0])) == stock
    assert int(np.argmax(scores["gloss"][1])) == weekly  # the request's own characters still match a Chinese skill


def test_an_english_request_scores_as_under_bm25(engine: Engine) -> None:
    scores = engine.signal_scores(["send the meeting minutes by mail"], signals=("bm25", "gloss"))
    np.testing.assert_array_equal(scores["gloss"], scores["bm25"])


def test_a_mixed_call_scores_each_request_as_alone(engine: Engine) -> None:
    """English rows are taken from the call's BM25 scores, Chinese ones scored glossed: each equals its own call."""
    queries = ["send the meeting minutes by mail", "用机器学习模型预测股票价格", "sourdough starter"]
    together = engine.signal_scores(queries, signals=("bm25", "gloss"))["gloss"]
    gloss_alone = engine.signal_scores(queries, signals=("gloss",))["gloss"]
    np.testing.assert_array_equal(together, gloss_alone)
    for i, query in enumerate(queries):
        np.testing.assert_array_equal(together[i], engine.signal_scores([query], signals=("gloss",))["gloss"][0])


def test_the_gloss_signal_needs_the_bm25_index() -> None:
    with pytest.raises(ValueError, match="needs the bm25 signal"):
        Engine(bundled_minilm(), signals=("dense", "gloss"))
