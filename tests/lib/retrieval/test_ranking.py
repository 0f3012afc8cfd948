"""Reranking a first stage's head: replacing its scores, or adding a correction to them."""
import numpy as np

from skill_assets.lib.retrieval.ranking import rerank

FIRST = [[("a", 3.0), ("b", 2.5), ("c", 1.0), ("d", 0.5)]]
TEXTS = {sid: sid for sid in "abcd"}


def _scores(values: dict[str, float]):
    return lambda pairs: np.array([values[text] for _, text in pairs])


def test_a_cross_encoder_replaces_the_head_scores_and_the_tail_follows_in_order():
    (out,) = rerank(["q"], FIRST, TEXTS, _scores({"a": 0.1, "b": 0.9, "c": 0.5}), depth=3)
    assert [sid for sid, _ in out] == ["b", "c", "a", "d"]
    assert out[-1][1] < min(s for _, s in out[:3])


def test_a_residual_reranker_adds_its_correction_to_the_first_stage_score():
    correction = {"a": 0.0, "b": 0.6, "c": 1.0}  # b overtakes a (2.5 + 0.6 > 3.0); c stays third (2.0)
    (out,) = rerank(["q"], FIRST, TEXTS, _scores(correction), depth=3, residual=True)
    assert out[:3] == [("b", 3.1), ("a", 3.0), ("c", 2.0)]
    (same,) = rerank(["q"], FIRST, TEXTS, _scores({"a": 0.0, "b": 0.0, "c": 0.0}), depth=3, residual=True)
    assert [sid for sid, _ in same] == ["a", "b", "c", "d"]  # a zero correction is the first stage
