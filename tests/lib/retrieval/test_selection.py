"""How many skills a request routed by parts loads (``SelectionCut.select_by_parts``), on a fixed cut: the cut's own
selection, then the parts' best skills that pass the probability, never past six nor a user's cap, no copies."""
import math

import pytest

from skill_assets.lib.retrieval.selection import PARTS_MAX, PARTS_MOST, PlattScaling, SelectionCut

#: predicts F1 0.5, 0.6, 0.2 for loading 1, 2, 3: the cut alone loads two
CUT = SelectionCut(PlattScaling(1.0, 0.0), coef=((0.0,) * 10,) * 3, intercepts=(0.5, 0.6, 0.2), cap=3)
RANKED = ["a", "b", "c", "d", "e", "f", "g", "h"]
SCORES = [3.0, 2.5, 2.0, 1.5, 1.0, 0.5, -0.5, -1.0]  # probabilities 0.95 ... 0.27
RANKING = list(zip(RANKED, SCORES))


def distinct(x: str, y: str) -> float:
    return 1.0 if x == y else 0.0


def test_a_request_of_no_more_parts_than_the_cut_loads_selects_as_the_cut():
    best = {"c", "d", "e"}
    assert CUT.select(RANKING, distinct, "q") == ["a", "b"]
    for n_parts in (1, 2, 3):
        assert CUT.select_by_parts(RANKING, distinct, "q", best, n_parts, part_probability=0.0) == ["a", "b"]
    assert CUT.select_by_parts(RANKING, distinct, "q", set(), 5) == ["a", "b"]


def test_the_parts_best_skills_are_added_in_ranking_order_while_they_pass():
    best = {"d", "f", "g", "b"}  # probabilities 0.82, 0.62, 0.38 (b is the cut's own)
    assert CUT.select_by_parts(RANKING, distinct, "q", best, 5, most=6, part_probability=0.5) == ["a", "b",
                                                                                                        "d", "f"]
    assert CUT.select_by_parts(RANKING, distinct, "q", best, 5, most=6, part_probability=0.3) == ["a", "b",
                                                                                                        "d", "f", "g"]
    assert CUT.select_by_parts(RANKING, distinct, "q", best, 4, most=6, part_probability=0.0) == ["a", "b",
                                                                                                        "d", "f"]
    assert CUT.select_by_parts(RANKING, distinct, "q", best, 5) == ["a", "b", "d", "f"][:PARTS_MOST]
    assert CUT.select_by_parts(RANKING, distinct, "q", best, 5, cap=3, most=6) == ["a", "b", "d"]


def test_never_more_than_six_and_never_a_copy():
    every = set(RANKED)
    for most in (6, 9):
        assert CUT.select_by_parts(RANKING, distinct, "q", every, 20, cap=9, most=most,
                                   part_probability=0.0) == RANKED[:PARTS_MAX]
    d_is_a = lambda x, y: float(x == y or {x, y} == {"a", "d"})  # noqa: E731
    assert CUT.select_by_parts(RANKING, d_is_a, "q", {"d", "e"}, 5) == ["a", "b", "e"]


@pytest.mark.parametrize("score", [-4.0, 0.0, 2.5])
def test_fused_score_inverts_probability(score):
    platt = PlattScaling(a=0.9, b=-0.1)
    assert platt.fused_score(platt.probability(score)) == pytest.approx(score)
    assert math.isfinite(platt.fused_score(1.0)) and math.isfinite(platt.fused_score(0.0))
    inverted = PlattScaling(a=-2.0, b=1.0)  # read as the plain logistic
    assert inverted.probability(score) == pytest.approx(1 / (1 + math.exp(-score)))
