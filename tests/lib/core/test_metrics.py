import math

import numpy as np
import pytest

from skill_assets.lib.core.metrics import DEFAULT_KS, hit_matrix, mean_metrics, per_query_metrics
from skill_assets.lib.core.runs import Qrels, Run
from skill_assets.lib.core.skill_groups import singleton_groups

L3, L5 = 1 / math.log2(3), 1 / math.log2(5)  # rank-2 and rank-4 discounts
FILL = [f"n{i}" for i in range(20)]


def _rank(*head):
    return list(head) + [f for f in FILL if f not in head]


RANKINGS = [
    _rank("x", "a", "y", "b", "z"),  # A: m=3, hits at ranks 2 and 4, c missing
    _rank("a"),  # B: m=1, hit at rank 1
    FILL[:10] + ["a", "b"],  # C: m=2, first hit at rank 11
    _rank("b", "a"),  # D: m=2, both in top 2
    _rank("a", "b", "x"),  # F: m=3, two of three in top 2
]
RELEVANT = [{"a", "b", "c"}, {"a"}, {"a", "b"}, {"a", "b"}, {"a", "b", "c"}]


def metrics_of(rankings, relevant, ks=DEFAULT_KS):
    """``per_query_metrics`` of id lists (scored by rank) against sets of single skills, queries named by position."""
    ids = [f"q{i}" for i in range(len(rankings))]
    run = Run.of(ids, [[(sid, -float(r)) for r, sid in enumerate(ranking)] for ranking in rankings])
    return per_query_metrics(run, Qrels.of(ids, [singleton_groups(sorted(rel)) for rel in relevant]), ks)


@pytest.fixture(scope="module")
def pq():
    return metrics_of(RANKINGS, RELEVANT, ks=(2, 5))


def test_hit_matrix():
    h = hit_matrix([["a", "x", "b"], ["y"]], [{"a", "b"}, {"y", "z"}], depth=4)
    assert h.tolist() == [[1, 0, 1, 0], [1, 0, 0, 0]]


def test_hit1_and_mrr10(pq):
    assert pq["hit@1"].tolist() == [0, 1, 0, 1, 1]
    assert pq["mrr@10"].tolist() == pytest.approx([0.5, 1.0, 0.0, 1.0, 1.0])


def test_ndcg(pq):
    assert pq["ndcg@2"] == pytest.approx([L3 / (1 + L3), 1.0, 0.0, 1.0, 1.0])
    assert pq["ndcg@5"] == pytest.approx([(L3 + L5) / (1 + L3 + 0.5), 1.0, 0.0, 1.0, (1 + L3) / (1 + L3 + 0.5)])


def test_recall_fc_comp(pq):
    assert pq["recall@2"] == pytest.approx([1 / 3, 1, 0, 1, 2 / 3])
    assert pq["recall@5"] == pytest.approx([2 / 3, 1, 0, 1, 2 / 3])
    assert pq["fc@2"].tolist() == [0, 1, 0, 1, 0]
    assert pq["fc@5"].tolist() == [0, 1, 0, 1, 0]
    # comp@K divides by min(m, K): with m=3 > K=2 it differs from recall
    assert pq["comp@2"] == pytest.approx([1 / 2, 1, 0, 1, 1])
    assert pq["comp@5"] == pytest.approx(pq["recall@5"])


def test_set_compat(pq):
    sc = pq["set_compat"]
    assert math.isnan(sc[1])  # single-skill query
    assert [sc[0], sc[2], sc[3], sc[4]] == [0.0, 0.0, 1.0, 0.0]


def test_mean_metrics(pq):
    means = mean_metrics(pq)
    assert means["hit@1"] == pytest.approx(3 / 5)
    assert means["set_compat"] == pytest.approx(1 / 4)  # over the four multi-skill queries only
    assert means["mrr@10"] == pytest.approx(3.5 / 5)
    single = mean_metrics(metrics_of([["a"]], [{"a"}], ks=(5,)))
    assert math.isnan(single["set_compat"]) and single["hit@1"] == 1.0


def test_default_ks_keys():
    out = metrics_of([["a"]], [{"a"}])
    for k in DEFAULT_KS:
        for name in ("ndcg", "recall", "fc", "comp"):
            assert f"{name}@{k}" in out
    assert out["ndcg@50"][0] == pytest.approx(1.0)


def test_rankings_shorter_than_depth_and_k():
    out = metrics_of([["x", "a"]], [{"a", "b"}], ks=(10,))
    assert out["recall@10"][0] == pytest.approx(0.5)
    assert out["ndcg@10"][0] == pytest.approx(L3 / (1 + L3))


def test_cross_check_against_ranx():
    # ranx's per-query numba kernels (the ones its public ``evaluate`` runs in parallel): the public
    # entry point compiles parallel wrappers and typed dicts, about a minute of JIT on a cold cache
    from ranx.metrics.hit_rate import _hit_rate
    from ranx.metrics.ndcg import _ndcg
    from ranx.metrics.recall import _recall
    from ranx.metrics.reciprocal_rank import _reciprocal_rank

    rng = np.random.default_rng(42)
    docs = [f"d{i:03d}" for i in range(100)]
    rankings, relevant, ranx_pairs = [], [], []
    for _ in range(50):
        rel_idx = rng.choice(100, size=int(rng.integers(1, 6)), replace=False)
        rel = {docs[i] for i in rel_idx}
        # relevant docs get a boost so ranks spread over hits at 1, deeper hits and misses
        scores = rng.normal(size=100) + np.isin(np.arange(100), rel_idx) * 2.0
        order = np.argsort(-scores, kind="stable")
        rankings.append([docs[i] for i in order])
        relevant.append(rel)
        qrels = np.array([[float(i), 1.0] for i in sorted(rel_idx)])
        run = np.array([[float(i), float(100 - r)] for r, i in enumerate(order)])
        ranx_pairs.append((qrels, run))
    ours = metrics_of(rankings, relevant, ks=(5, 10, 20))
    theirs = {
        "ndcg@10": [_ndcg(q, r, 10, 1, True) for q, r in ranx_pairs],
        "ndcg@5": [_ndcg(q, r, 5, 1, True) for q, r in ranx_pairs],
        "recall@10": [_recall(q, r, 10, 1) for q, r in ranx_pairs],
        "recall@20": [_recall(q, r, 20, 1) for q, r in ranx_pairs],
        "mrr@10": [_reciprocal_rank(q, r, 10, 1) for q, r in ranx_pairs],
        "hit@1": [_hit_rate(q, r, 1, 1) for q, r in ranx_pairs],
    }
    # the sample must exercise both branches of each metric
    assert 0 < ours["hit@1"].sum() < 50 and 0 < (ours["mrr@10"] == 0).sum() < 50
    assert 0 < ((ours["ndcg@10"] > 0) & (ours["ndcg@10"] < 1)).sum()
    for name, values in theirs.items():
        np.testing.assert_allclose(ours[name], values, atol=1e-9, err_msg=name)


def test_a_request_the_run_does_not_rank_scores_zero_and_qrels_order_the_requests():
    run = Run({"q2": [("a", 1.0)], "extra": [("a", 1.0)]})
    out = per_query_metrics(run, Qrels({"q1": (("a",),), "q2": (("a",),)}), ks=(5,))
    assert out["hit@1"].tolist() == [0.0, 1.0] and out["ndcg@5"].tolist() == [0.0, 1.0]


def test_request_ids_are_given_once():
    with pytest.raises(ValueError, match="more than once"):
        Run.of(["q1", "q1"], [[], []])
    with pytest.raises(ValueError, match="request ids for"):
        Qrels.of(["q1"], [])
