import math

import numpy as np
import pytest

from skill_assets.lib.metrics import DEFAULT_KS, hit_matrix, mean_metrics, per_query_metrics

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


@pytest.fixture(scope="module")
def pq():
    return per_query_metrics(RANKINGS, RELEVANT, ks=(2, 5))


def test_hit_matrix():
    h = hit_matrix([["a", "x", "b"], ["y"]], [{"a", "b"}, {"y", "z"}], depth=4)
    assert h.tolist() == [[1, 0, 1, 0], [1, 0, 0, 0]]


def test_hit1_and_mrr10(pq):
    assert pq["hit@1"].tolist() == [0, 1, 0, 1, 1]
    assert pq["mrr@10"].tolist() == pytest.approx([0.5, 1.0, 0.0, 1.0, 1.0])


def test_ndcg(pq):
    assert pq["ndcg@2"] == pytest.approx([L3 / (1 + L3), 1.0, 0.0, 1.0, 1.0])
    assert pq["ndcg@5"] == pytest.approx([(L3 + L5) / (1 + L3 + 0.5), 1.0, 0.0, 1.0, 1.0])


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
    single = mean_metrics(per_query_metrics([["a"]], [{"a"}], ks=(5,)))
    assert math.isnan(single["set_compat"]) and single["hit@1"] == 1.0


def test_default_ks_keys():
    out = per_query_metrics([["a"]], [{"a"}])
    for k in DEFAULT_KS:
        for name in ("ndcg", "recall", "fc", "comp"):
            assert f"{name}@{k}" in out
    assert out["ndcg@50"][0] == pytest.approx(1.0)


def test_rankings_shorter_than_depth_and_k():
    out = per_query_metrics([["x", "a"]], [{"a", "b"}], ks=(10,))
    assert out["recall@10"][0] == pytest.approx(0.5)
    assert out["ndcg@10"][0] == pytest.approx(L3 / (1 + L3))


def test_cross_check_against_ranx():
    from ranx import Qrels, Run, evaluate

    rng = np.random.default_rng(42)
    docs = [f"d{i:03d}" for i in range(100)]
    rankings, relevant, qrels, run = [], [], {}, {}
    for q in range(50):
        qid = f"q{q:02d}"
        order = list(rng.permutation(docs))
        rel = set(rng.choice(docs, size=int(rng.integers(1, 6)), replace=False))
        rankings.append(order)
        relevant.append(rel)
        qrels[qid] = {d: 1 for d in sorted(rel)}
        run[qid] = {d: float(100 - i) for i, d in enumerate(order)}
    ours = per_query_metrics(rankings, relevant, ks=(5, 10, 20))
    theirs = evaluate(Qrels(qrels), Run(run), ["ndcg@10", "ndcg@5", "recall@10", "recall@20", "mrr@10", "hit_rate@1"],
                      return_mean=False, threads=1, save_results_in_run=False)
    # the sample must exercise both branches of each metric
    assert 0 < ours["hit@1"].sum() < 50 and 0 < (ours["mrr@10"] == 0).sum() < 50
    np.testing.assert_allclose(ours["ndcg@10"], theirs["ndcg@10"], atol=1e-9)
    np.testing.assert_allclose(ours["ndcg@5"], theirs["ndcg@5"], atol=1e-9)
    np.testing.assert_allclose(ours["recall@10"], theirs["recall@10"], atol=1e-9)
    np.testing.assert_allclose(ours["recall@20"], theirs["recall@20"], atol=1e-9)
    np.testing.assert_allclose(ours["mrr@10"], theirs["mrr@10"], atol=1e-9)
    np.testing.assert_allclose(ours["hit@1"], theirs["hit_rate@1"], atol=1e-9)
