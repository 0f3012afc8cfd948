"""How many skills to load: a calibrated cut on the fused scores, learned on a benchmark's train split.

An agent needs to know whether to load one skill or three. The first skill of the fused ranking
is always selected; the next ones (up to ``cap``) are kept while a small logistic model says the
skill probably serves a need the kept ones do not, and the cut stops at the first one it rejects.
Its features: the fused score calibrated to a probability of relevance (Platt scaling), the gap to
the first skill's and to the previous one's fused score, and how long the request is (in log
characters and sentences: a request that asks for three things is longer than one that asks for
one). It is fitted on out-of-fold fused rankings of the train requests (each fold ranked by a
fusion fitted on the others), and its threshold is the one with the best mean set F1 there. A
skill that is a copy of one already kept (another repository's copy: documents with cosine ≥
``copy_cosine``) is passed over, since loading it twice helps nobody.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

DEFAULT_CAP = 3
COPY_COSINE = 0.97
_SENTENCE = re.compile(r"[.!?。！？；;\n]+")
FEATURES = ("calibrated_logit", "gap_to_first", "gap_to_previous", "log_chars", "log_sentences")


def request_shape(query: str) -> tuple[float, float]:
    """(log characters, log sentences) of a request."""
    return math.log1p(len(query)), math.log1p(len([s for s in _SENTENCE.split(query) if s.strip()]))


@dataclass(frozen=True)
class SelectionCut:
    a: float = 1.0          # Platt scaling of the fused score: logit = a * score + b
    b: float = 0.0
    weights: tuple[float, ...] = field(default_factory=lambda: (1.0, 0.0, 0.0, 0.0, 0.0))  # over FEATURES
    intercept: float = 0.0
    threshold: float = 0.5
    cap: int = DEFAULT_CAP
    copy_cosine: float = COPY_COSINE

    def candidates(self, ranked: Sequence[str], scores: Sequence[float], is_copy: Callable[[str, str], bool],
                   cap: int) -> tuple[list[str], np.ndarray]:
        """(the first skill and the next ``cap - 1`` that are not copies of an earlier one, their fused scores)."""
        kept, kept_scores = [], []
        for sid, s in zip(ranked, scores):
            if len(kept) == cap:
                break
            if not any(is_copy(sid, k) for k in kept):
                kept.append(sid)
                kept_scores.append(float(s))
        return kept, np.asarray(kept_scores)

    def features(self, scores: np.ndarray, query: str) -> np.ndarray:
        """One row per position 2..len(scores): the model's inputs for keeping that skill."""
        shape = request_shape(query)
        return np.array([[self.a * scores[i] + self.b, scores[0] - scores[i], scores[i - 1] - scores[i], *shape]
                         for i in range(1, len(scores))], dtype=np.float64).reshape(-1, len(FEATURES))

    def keep_probabilities(self, scores: np.ndarray, query: str) -> np.ndarray:
        z = self.features(scores, query) @ np.asarray(self.weights) + self.intercept
        return 1.0 / (1.0 + np.exp(-z))

    def select(self, ranked: Sequence[str], scores: Sequence[float], is_copy: Callable[[str, str], bool],
               query: str, cap: int | None = None) -> list[str]:
        """The skills to load, from a ranking best first with its fused scores (always at least the first)."""
        kept, kept_scores = self.candidates(ranked, scores, is_copy, cap or self.cap)
        if not kept:
            return []
        n = 1
        for p in self.keep_probabilities(kept_scores, query):
            if p < self.threshold:
                break
            n += 1
        return kept[:n]

    def as_dict(self) -> dict:
        return {**asdict(self), "weights": list(self.weights), "features": list(FEATURES)}

    @classmethod
    def from_dict(cls, body: dict) -> SelectionCut:
        return cls(**{k: (tuple(v) if k == "weights" else v) for k, v in body.items() if k != "features"})


def set_scores(selected: Sequence[str], groups: Sequence[Sequence[str]]) -> tuple[float, float]:
    """(exact-set match, set F1) of a selection against ground-truth groups: a group is covered by any member,
    and a second member of a covered group counts as a wrong pick."""
    group_of = {sid: i for i, g in enumerate(groups) for sid in g}
    covered = {group_of[s] for s in selected if s in group_of}
    if not selected:
        return 0.0, 0.0
    precision, recall = len(covered) / len(selected), len(covered) / len(groups)
    f1 = 0.0 if not covered else 2 * precision * recall / (precision + recall)
    return float(len(covered) == len(groups) == len(selected)), f1


def platt(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=100.0, max_iter=1000).fit(np.asarray(scores, dtype=np.float64)[:, None], labels)
    return float(model.coef_[0, 0]), float(model.intercept_[0])


def fit_cut(ranked: Sequence[Sequence[str]], scores: Sequence[np.ndarray], groups: Sequence[Sequence[Sequence[str]]],
            queries: Sequence[str], is_copy: Callable[[str, str], bool], cap: int = DEFAULT_CAP) -> SelectionCut:
    """Platt scaling of the top-10 fused scores, the keep model over positions 2..cap (label: the skill covers a
    ground-truth group the skills above it do not), and the threshold with the best mean set F1."""
    from sklearn.linear_model import LogisticRegression

    top_scores = np.concatenate([s[:10] for s in scores])
    top_labels = np.concatenate([[any(sid in g for g in gs) for sid in r[:10]] for r, gs in zip(ranked, groups)])
    a, b = platt(top_scores, top_labels.astype(int)) if 0 < top_labels.sum() < len(top_labels) else (1.0, 0.0)
    base = SelectionCut(a, b, cap=cap)
    per_request = [base.candidates(r, s, is_copy, cap) for r, s in zip(ranked, scores)]
    x, y = [], []
    for (kept, kept_scores), gs, query in zip(per_request, groups, queries):
        covered = {i for i, g in enumerate(gs) if kept and kept[0] in g}
        for pos, row in zip(range(1, len(kept)), base.features(kept_scores, query)):
            new = {i for i, g in enumerate(gs) if kept[pos] in g} - covered
            x.append(row)
            y.append(int(bool(new)))
            covered |= new
    if len(set(y)) < 2:  # nothing to learn: never (or always) a second need on train
        return SelectionCut(a, b, threshold=1.0 if not any(y) else 0.0, cap=cap)
    model = LogisticRegression(C=1.0, max_iter=2000).fit(np.asarray(x), np.asarray(y))
    fitted = SelectionCut(a, b, tuple(float(w) for w in model.coef_[0]), float(model.intercept_[0]), cap=cap)
    best, best_f1 = fitted, -1.0
    for threshold in np.round(np.arange(0.05, 0.96, 0.05), 2):
        cut = SelectionCut(a, b, fitted.weights, fitted.intercept, float(threshold), cap)
        f1 = float(np.mean([set_scores(cut.select(r, s, is_copy, q), g)[1]
                            for r, s, g, q in zip(ranked, scores, groups, queries)]))
        if f1 > best_f1 + 1e-12:
            best, best_f1 = cut, f1
    return best
