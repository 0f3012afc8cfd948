import numpy as np
import pytest

from skill_assets.lib.neighbourhoods.clustering import (
    candidate_ks,
    class_keywords,
    fit_kmeans,
    keyword_tokens,
    merge_into_super_domains,
    normalise_rows,
    score_sweep,
)


def _blobs(seed=0, n_blobs=4, dim=16, per=30, spread=5.0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(n_blobs, dim)) * spread
    x = np.concatenate([c + rng.normal(size=(per, dim)) for c in centers])
    truth = np.repeat(np.arange(n_blobs), per)
    return x, truth


@pytest.fixture(scope="module")
def sweep():
    x, truth = _blobs()
    points = [fit_kmeans(x, k, 0) for k in [2, 3, 4, 6, 8]]
    return x, truth, points, score_sweep(points)


def test_sweep_selects_true_k_on_separated_blobs(sweep):
    _, _, _, rows = sweep
    selected = [r["k"] for r in rows if r["selected"]]
    assert selected == [4]
    best = max(rows, key=lambda r: r["score"])
    assert best["k"] == 4


def test_sweep_scores_are_normalised_and_oriented(sweep):
    _, _, points, rows = sweep
    assert [r["k"] for r in rows] == [2, 3, 4, 6, 8]
    for name in ("inertia_score", "intra_score", "separation_score"):
        vals = [r[name] for r in rows]
        assert min(vals) == pytest.approx(0.0) and max(vals) == pytest.approx(1.0)
    for r in rows:
        assert r["score"] == pytest.approx((r["inertia_score"] + r["intra_score"] + r["separation_score"]) / 3)
    # lowest inertia gets the top inertia score, highest intra cosine the top intra score,
    # lowest neighbour-centroid cosine the top separation score
    assert max(rows, key=lambda r: r["inertia_score"])["inertia"] == min(p.inertia for p in points)
    assert max(rows, key=lambda r: r["intra_score"])["intra_cosine"] == max(p.intra_cosine for p in points)
    assert max(rows, key=lambda r: r["separation_score"])["neighbour_centroid_cosine"] == min(
        p.neighbour_centroid_cosine for p in points)


def test_fit_kmeans_recovers_blobs(sweep):
    x, truth, points, _ = sweep
    p4 = next(p for p in points if p.k == 4)
    assert p4.labels.shape == (120,)
    assert p4.centroids.shape == (4, 16)
    # perfect recovery up to label permutation: each true blob maps to one label
    for b in range(4):
        assert len(set(p4.labels[truth == b])) == 1
    assert len(set(p4.labels)) == 4
    # figures computed on normalised rows
    xn = normalise_rows(x)
    cents = normalise_rows(p4.centroids)
    assert p4.intra_cosine == pytest.approx(float(np.mean(np.sum(xn * cents[p4.labels], axis=1))))
    assert -1.0 <= p4.neighbour_centroid_cosine <= 1.0


def test_fit_kmeans_k1():
    x, _ = _blobs(per=5)
    p = fit_kmeans(x, 1, 0)
    assert p.neighbour_centroid_cosine == 0.0
    assert set(p.labels) == {0}


def test_score_sweep_tie_prefers_smaller_k():
    from skill_assets.lib.neighbourhoods.clustering import SweepPoint

    pts = [SweepPoint(k, 1.0, 0.5, 0.2, np.zeros(3), np.zeros((k, 2))) for k in (5, 3, 7)]
    rows = score_sweep(pts)
    assert [r["k"] for r in rows if r["selected"]] == [3]


def test_normalise_rows_handles_zero_rows():
    out = normalise_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert np.allclose(out, [[0.6, 0.8], [0.0, 0.0]])


@pytest.mark.parametrize(
    "requested, n, expected",
    [
        ([2, 4, 8, 40], 100, [2, 4, 8]),  # 40 needs 120 items
        ([8, 4, 4, 2, 1], 100, [2, 4, 8]),  # sorted, deduplicated, k < 2 dropped
        ([20, 40], 30, [2, 5, 7, 10]),  # none fits: up to four evenly spaced Ks in [2, n // 3]
        ([5], 30, [2, 5, 7, 10]),  # a single fitting K is not a sweep
        ([40], 9, [2, 3]),
        ([40], 6, [2]),
        ([2, 3], 5, [1]),  # cannot support 2 clusters
        ([2, 3], 2, [1]),
    ],
)
def test_candidate_ks(requested, n, expected):
    assert candidate_ks(requested, n) == expected


def test_candidate_ks_respects_mean_cluster_size():
    for n in range(6, 200, 7):
        ks = candidate_ks([2, 5, 10, 20, 40, 80], n)
        assert ks and all(2 <= k <= n // 3 for k in ks)
        assert len(ks) >= 2 or n // 3 == 2


def test_merge_into_super_domains():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=8) * 5, rng.normal(size=8) * 5
    cents = np.stack([a + rng.normal(size=8) * 0.1 for _ in range(3)] + [b + rng.normal(size=8) * 0.1 for _ in range(3)])
    labels = merge_into_super_domains(cents, 2)
    assert labels.shape == (6,)
    assert len(set(labels[:3])) == 1 and len(set(labels[3:])) == 1 and labels[0] != labels[3]
    assert list(merge_into_super_domains(cents, 6)) == list(range(6))
    assert list(merge_into_super_domains(cents, 50)) == list(range(6))
    assert list(merge_into_super_domains(cents, 1)) == [0] * 6
    assert list(merge_into_super_domains(cents, 0)) == [0] * 6
    assert len(set(merge_into_super_domains(cents, 4))) == 4


def test_keyword_tokens():
    toks = keyword_tokens("Use the Docker CLI with node.js. and C++ for 数据清洗 steps")
    assert "docker" in toks and "cli" in toks and "node.js" in toks and "c++" in toks
    assert "the" not in toks and "use" not in toks and "steps" not in toks and "for" not in toks
    assert ["数据", "据清", "清洗"] == [t for t in toks if t[0] >= "\u4e00"]


def test_class_keywords_are_discriminative():
    texts = {
        0: ["Docker container guide: build a docker image and run the container",
            "Debug docker compose container networking guide"],
        1: ["Invoice guide: reconcile each invoice against the ledger",
            "Ledger guide for invoice payments and ledger exports"],
        2: ["Kubernetes pod guide: restart kubernetes pods, inspect kubernetes events"],
    }
    kw = class_keywords(texts, top_n=2)
    assert set(kw) == {0, 1, 2}
    assert set(kw[0]) == {"docker", "container"}
    assert set(kw[1]) == {"invoice", "ledger"}
    assert kw[2][0] == "kubernetes"
    assert all("guide" not in v for v in kw.values())  # shared by every class
    assert class_keywords({}, 3) == {}


def test_hdbscan_flags_noise_and_assigns_it_to_the_nearest_centroid():
    from skill_assets.lib.neighbourhoods.clustering import fit_hdbscan

    x, truth = _blobs(seed=3, n_blobs=3, per=40, spread=6.0)
    rng = np.random.default_rng(7)
    outliers = rng.normal(size=(6, x.shape[1])) * 30  # far from every blob and from each other
    fit = fit_hdbscan(np.concatenate([x, outliers]), min_cluster_size=10)
    assert len(fit.labels) == len(x) + 6  # nobody dropped
    assert fit.is_noise[len(x):].sum() >= 4
    assert len(fit.centroids) == 3
    # blob members (not noise) recover the true grouping
    core = ~fit.is_noise[: len(x)]
    for blob in range(3):
        assert len(set(fit.labels[: len(x)][core & (truth == blob)])) == 1
    # each noise point carries the label of its most similar centroid
    unit = normalise_rows(np.concatenate([x, outliers]))
    noise = np.flatnonzero(fit.is_noise)
    assert np.array_equal(fit.labels[noise], np.argmax(unit[noise] @ fit.centroids.T, axis=1))
    assert merge_into_super_domains(fit.centroids, 2).shape == (3,)


def test_hdbscan_all_noise_still_gives_every_item_a_neighbourhood():
    from skill_assets.lib.neighbourhoods.clustering import fit_hdbscan

    x = np.random.default_rng(0).normal(size=(12, 8))
    fit = fit_hdbscan(x, min_cluster_size=20)
    assert fit.is_noise.all() and set(fit.labels) == {0} and fit.centroids.shape == (1, 8)
