"""Neighbourhoods of skills: KMeans sub-clusters, a K sweep, super-domains and keywords.

The sweep follows R3-Skill: for each K, inertia (lower is better), mean intra-cluster cosine
(higher is better) and the mean cosine of each centroid to its nearest other centroid (lower is
better), each min-max normalised over the sweep and oriented so that higher is better. K is
the candidate with the highest mean of the three normalised scores (ties → smaller K).

HDBSCAN is offered as an alternative sub-clusterer: it chooses the number of clusters itself and
calls low-density skills noise (label -1). Every skill must still belong to a neighbourhood for
sampling, so noise points are assigned to the cluster whose centroid is nearest (cosine) and
flagged ``is_noise`` rather than dropped.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np
from sklearn.cluster import AgglomerativeClustering, KMeans

KMEANS_N_INIT = 10
MIN_MEAN_CLUSTER_SIZE = 3


def normalise_rows(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.clip(norms, 1e-12, None)


def candidate_ks(requested: list[int], n_items: int) -> list[int]:
    """Drop Ks that leave fewer than MIN_MEAN_CLUSTER_SIZE items per cluster on average.

    A small corpus (the demo) cannot support K=40; rather than fail, fall back to up to four
    evenly spaced Ks that it can support, so the sweep still compares candidates.
    """
    limit = n_items // MIN_MEAN_CLUSTER_SIZE
    ks = sorted({k for k in requested if 2 <= k <= limit})
    if len(ks) >= 2 or limit < 2:
        return ks or ([limit] if limit >= 1 else [1])
    return sorted({int(round(k)) for k in np.linspace(2, limit, num=min(4, limit - 1))})


@dataclass
class SweepPoint:
    k: int
    inertia: float
    intra_cosine: float
    neighbour_centroid_cosine: float
    labels: np.ndarray
    centroids: np.ndarray


def fit_kmeans(x: np.ndarray, k: int, seed: int) -> SweepPoint:
    x = normalise_rows(x)
    km = KMeans(n_clusters=k, n_init=KMEANS_N_INIT, random_state=seed).fit(x)
    cents = normalise_rows(km.cluster_centers_)
    intra = float(np.mean(np.sum(x * cents[km.labels_], axis=1)))
    if k > 1:
        sim = cents @ cents.T
        np.fill_diagonal(sim, -np.inf)
        neighbour = float(np.mean(sim.max(axis=1)))
    else:
        neighbour = 0.0
    return SweepPoint(k, float(km.inertia_), intra, neighbour, km.labels_.copy(), km.cluster_centers_)


@dataclass
class Clustering:
    """Sub-cluster label per item, normalised centroids, and which items HDBSCAN called noise."""

    labels: np.ndarray
    centroids: np.ndarray
    is_noise: np.ndarray


def fit_hdbscan(x: np.ndarray, min_cluster_size: int = 10, min_samples: int | None = None) -> Clustering:
    """HDBSCAN on unit vectors (Euclidean there ranks like cosine); noise joins its nearest centroid."""
    import hdbscan

    x = normalise_rows(x)
    raw = hdbscan.HDBSCAN(min_cluster_size=min_cluster_size, min_samples=min_samples).fit_predict(x)
    noise = raw < 0
    if noise.all():  # no dense region at all: one neighbourhood, every item flagged
        return Clustering(np.zeros(len(x), dtype=int), normalise_rows(x.mean(axis=0, keepdims=True)), noise)
    ids = np.unique(raw[~noise])
    cents = normalise_rows(np.stack([x[raw == c].mean(axis=0) for c in ids]))
    labels = np.searchsorted(ids, np.where(noise, ids[0], raw))
    labels[noise] = np.argmax(x[noise] @ cents.T, axis=1)
    return Clustering(labels, cents, noise)


def _minmax(values: np.ndarray) -> np.ndarray:
    span = values.max() - values.min()
    return np.ones_like(values) if span == 0 else (values - values.min()) / span


def score_sweep(points: list[SweepPoint]) -> list[dict]:
    """Per-K figures with the three normalised, higher-is-better scores and their mean."""
    inertia = np.array([p.inertia for p in points])
    intra = np.array([p.intra_cosine for p in points])
    neigh = np.array([p.neighbour_centroid_cosine for p in points])
    s_inertia, s_intra, s_sep = 1 - _minmax(inertia), _minmax(intra), 1 - _minmax(neigh)
    rows = []
    for i, p in enumerate(points):
        score = float((s_inertia[i] + s_intra[i] + s_sep[i]) / 3)
        rows.append({"k": p.k, "inertia": p.inertia, "intra_cosine": p.intra_cosine,
                     "neighbour_centroid_cosine": p.neighbour_centroid_cosine,
                     "inertia_score": float(s_inertia[i]), "intra_score": float(s_intra[i]),
                     "separation_score": float(s_sep[i]), "score": score})
    best = max(rows, key=lambda r: (round(r["score"], 9), -r["k"]))
    for r in rows:
        r["selected"] = r["k"] == best["k"]
    return rows


def merge_into_super_domains(centroids: np.ndarray, n_super: int) -> np.ndarray:
    """Agglomerative (average linkage, cosine) merge of sub-cluster centroids; label per sub-cluster."""
    n_super = max(1, min(n_super, len(centroids)))
    if n_super == len(centroids):
        return np.arange(len(centroids))
    model = AgglomerativeClustering(n_clusters=n_super, metric="cosine", linkage="average")
    return model.fit_predict(normalise_rows(centroids))


_WORD = re.compile(r"[a-z][a-z0-9+#.-]{2,}|[\u4e00-\u9fff]{2,}")
_STOP = frozenset("""the and for with that this from your you are use when into then than can will not any all
each what which how their them they have has using used should must also only more may one two its
our out get set see via per run new step steps example examples skill skills code file files""".split())


def keyword_tokens(text: str) -> list[str]:
    tokens = []
    for tok in _WORD.findall(text.lower()):
        if tok[0] >= "\u4e00":  # Chinese run: character bigrams stand in for words
            tokens.extend(tok[i : i + 2] for i in range(len(tok) - 1))
        elif tok not in _STOP:
            tokens.append(tok.strip(".-"))
    return [t for t in tokens if t]


def class_keywords(texts_by_class: dict[int, list[str]], top_n: int = 3) -> dict[int, list[str]]:
    """c-TF-IDF: term frequency within a class × log(1 + mean words per class / term frequency overall)."""
    counts = {c: Counter(t for text in texts for t in keyword_tokens(text)) for c, texts in texts_by_class.items()}
    total = Counter()
    for c in counts.values():
        total.update(c)
    avg_words = np.mean([sum(c.values()) for c in counts.values()]) if counts else 0.0
    result = {}
    for cls, cnt in counts.items():
        n = sum(cnt.values()) or 1
        scored = {t: (f / n) * np.log(1 + avg_words / total[t]) for t, f in cnt.items()}
        result[cls] = [t for t, _ in sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))[:top_n]]
    return result
