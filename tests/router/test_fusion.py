"""Fusion training and selection on a toy bilingual benchmark, through the real router signals
(BM25, the bundled MiniLM, USE multilingual v3) on real SKILL.md files."""
import json
import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from skill_assets.lib.retrieval.engine_config import FittedRouting
from skill_assets.lib.models.bundled_models import bundled_minilm
from skill_assets.lib.retrieval.fusion import GRID  # noqa: E402
from skill_assets.lib.core.metrics import run_means  # noqa: E402
from skill_assets.lib.core.runs import Qrels, Run  # noqa: E402
from skill_assets.lib.retrieval.fusion_training import (
    fused_run,  # noqa: E402
    load_router_model,  # noqa: E402
)
from skill_assets.lib.retrieval.ranking import top_k_rankings  # noqa: E402
from skill_assets.lib.retrieval.requests import qrels, run_of  # noqa: E402
from skill_assets.lib.retrieval.selection import (  # noqa: E402
    FEATURES,
    PlattScaling,
    SelectionCut,
    fit_cut,
    set_scores,
)
from skill_assets.lib.retrieval.signals import SIGNALS  # noqa: E402
from skill_assets.lib.retrieval.engine import Engine  # noqa: E402


def test_fusion_is_fitted_on_train_chosen_on_dev_and_never_reads_test(toy):
    router, requests, fitted, seen, _, _ = toy
    test_queries = {r.query for r in requests if r.split == "test"}
    assert test_queries and not test_queries & set(seen)
    card = fitted.card
    assert (card["kind"], card["params"]) in [(k, p) for k, p in GRID]
    assert len(card["grid"]) == len(GRID)
    assert card["data"]["train_requests"] == sum(r.split == "train" for r in requests)
    assert card["data"]["dev_requests"] == sum(r.split == "dev" for r in requests)
    assert card["features"][:2 * len(SIGNALS)] == [f"{s}:{k}" for s in SIGNALS for k in ("z", "log_rank")]
    assert card["features"][-1] == "query_latin_share"
    assert {"hit@1", "ndcg@10", "selected_set_f1"} <= set(card["dev"])
    if card["kind"] == "linear":
        assert set(card["weights_by_language"]) == {"same_language", "cross_language", "skill_zh_bias",
                                                    "query_zh_bias"}


def test_fusion_crosses_languages_where_bm25_cannot(toy):
    router, requests, fitted, _, _, _ = toy
    cross = [r for r in requests if r.split != "test" and r.direction in ("en2zh", "zh2en")]
    queries = [r.query for r in cross]
    fused = run_means(fused_run(fitted.model, router.candidates(queries), router.ids, cross), qrels(cross))
    bm25 = run_means(run_of(cross, top_k_rankings(router.signal_scores(queries)["bm25"], router.ids, 10)),
                     qrels(cross))
    assert fused["hit@1"] >= 0.8
    assert fused["hit@1"] > bm25["hit@1"]


def test_saved_model_loads_back_and_routes_with_signals_and_selection(toy):
    router, requests, fitted, _, folder, root = toy
    model, cut = load_router_model(folder)
    assert cut == fitted.cut
    c = router.candidates([requests[0].query])[0]
    np.testing.assert_allclose(model.score(c), fitted.model.score(c), rtol=1e-5, atol=1e-6)
    hybrid = Engine(bundled_minilm(), cache_dir=root / "cache", fitted=FittedRouting(model, cut))
    hybrid.index(router.skills)
    (routed,) = hybrid.route(["帮我写一封应聘数据分析师岗位的求职信"], top_k=5)
    line = routed.as_dict("q1")
    assert set(line) == {"id", "ranking", "selected", "signals_used"} and len(line["ranking"]) == 5
    assert line["signals_used"] == list(SIGNALS)
    assert set(line["ranking"][0]["signals"]) == {*SIGNALS, "fused"}
    assert 1 <= len(routed.selected) <= cut.cap and routed.selected[0] == routed.ranking[0].skill_id
    assert hybrid.route(["帮我写一封应聘数据分析师岗位的求职信"], top_k=5)[0].pairs == [
        (r.skill_id, r.score) for r in routed.ranking]


def test_selection_cut_loads_the_count_with_the_best_predicted_f1_skips_copies_and_scores_groups_once(tmp_path):
    # predicted F1 of loading n: n=1 → 0.5, n=2 → 0.5 + p_2 (the second skill's calibrated probability), n=3 → 0.2
    p_2 = FEATURES.index("p_2")
    coef = ((0.0,) * len(FEATURES), tuple(1.0 if i == p_2 else 0.0 for i in range(len(FEATURES))),
            (0.0,) * len(FEATURES))
    cut = SelectionCut(PlattScaling(1.0, 0.0), coef=coef, intercepts=(0.5, 0.5, 0.2), cap=3)
    similar = {("b", "a"), ("a", "b")}
    similarity = lambda x, y: 0.99 if (x, y) in similar else 0.1  # noqa: E731
    # b is a copy of a (passed over); c's fused score 1.0 gives p_2 = 0.73: two beat one
    assert cut.select([("a", 3.0), ("b", 2.9), ("c", 1.0), ("d", -1.0)], similarity, "q") == ["a", "c"]
    # with 0.6 for loading one, a weak second skill (fused -3.0: p_2 = 0.05, two predict 0.55) is left out
    weak = SelectionCut(PlattScaling(1.0, 0.0), coef=coef, intercepts=(0.6, 0.5, 0.2), cap=3)
    assert weak.select([("a", 3.0), ("c", -3.0), ("d", -4.0)], similarity, "q") == ["a"]
    assert cut.select([("a", 3.0), ("b", 2.9), ("c", 1.0)], similarity, "q", cap=1) == ["a"]
    assert SelectionCut().select([("a", 1.0), ("c", 0.9)], similarity, "q") == ["a"]   # unfitted: the first alone
    saved = tmp_path / "selection.json"
    saved.write_text(json.dumps(cut.as_dict()))
    assert SelectionCut.load(saved) == cut
    assert set_scores(["a", "c"], [["a", "b"], ["c"]]) == (1.0, 1.0)
    assert set_scores(["a", "b"], [["a", "b"], ["c"]]) == (0.0, 0.5)   # a second copy is a wrong pick
    assert set_scores(["x"], [["a"]]) == (0.0, 0.0)


def test_an_old_threshold_selection_file_is_a_clear_error(tmp_path):
    old = tmp_path / "selection.json"
    old.write_text(json.dumps({"a": 1.0, "b": 0.0, "weights": [1.0], "intercept": 0.0, "threshold": 0.5}))
    with pytest.raises(ValueError, match="materialize router_fusion again"):
        SelectionCut.load(old)


def test_fit_cut_learns_to_load_two_skills_when_train_requests_need_them():
    similarity = lambda x, y: 0.0  # noqa: E731
    # requests needing two skills have two high fused scores; single-skill requests one
    two, one = [("a", 2.0), ("b", 1.8), ("c", -2.0)], [("a", 2.0), ("b", -1.5), ("c", -2.0)]
    ids = [f"r{i}" for i in range(40)]
    run = Run.of(ids, [two] * 20 + [one] * 20)
    truth = Qrels.of(ids, [[["a"], ["b"]]] * 20 + [[["a"]]] * 20)
    cut = fit_cut(run, truth, dict.fromkeys(ids, "one request"), similarity)
    assert cut.select(two, similarity, "one request") == ["a", "b"]
    assert cut.select(one, similarity, "one request") == ["a"]
    assert cut.alpha in (0.1, 1.0, 10.0, 100.0) and len(cut.intercepts) == cut.cap == 3


def test_fit_cut_with_too_few_train_requests_loads_the_first_skill_alone():
    similarity = lambda x, y: 0.0  # noqa: E731
    ranking = [("a", 2.0), ("b", 1.9)]
    cut = fit_cut(Run.of(["r1", "r2"], [ranking, ranking]), Qrels.of(["r1", "r2", "r3"], [[["a"], ["b"]]] * 3),
                  dict.fromkeys(["r1", "r2", "r3"], "q"), similarity)   # r3 unranked: no candidates
    assert cut.alpha is None and cut.select(ranking, similarity, "q") == ["a"]
