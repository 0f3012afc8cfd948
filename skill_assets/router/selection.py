"""How many skills to load: a calibrated cut on the fused scores, learned on a benchmark's train split.

An agent needs to know whether to load one skill or three. The fused score of each ranked skill
is turned into a probability of being needed (Platt scaling fitted on train requests the fusion
model did not see: out-of-fold scores), and the top of the ranking is kept while that probability
stays above ``tau_abs`` and above ``tau_rel`` times the first skill's, from 1 up to ``cap``. A
skill that is a copy of one already kept (another repository's copy: documents with cosine
≥ ``copy_cosine``) is passed over, since loading it twice helps nobody. The two thresholds are
chosen on train to maximise the mean set F1 against the ground-truth groups.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

DEFAULT_CAP = 3
COPY_COSINE = 0.97


@dataclass(frozen=True)
class SelectionCut:
    a: float = 1.0          # Platt scaling: p = sigmoid(a * score + b)
    b: float = 0.0
    tau_abs: float = 0.5
    tau_rel: float = 0.0
    cap: int = DEFAULT_CAP
    copy_cosine: float = COPY_COSINE

    def probabilities(self, scores: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(self.a * np.asarray(scores, dtype=np.float64) + self.b)))

    def select(self, ranked: Sequence[str], scores: Sequence[float], is_copy: Callable[[str, str], bool],
               cap: int | None = None) -> list[str]:
        """The skills to load, from a ranking best first with its fused scores (always at least the first)."""
        cap = cap or self.cap
        if not ranked:
            return []
        p = self.probabilities(np.asarray(scores[: 4 * cap]))
        chosen = [ranked[0]]
        for sid, pi in zip(ranked[1 : 4 * cap], p[1:]):
            if len(chosen) >= cap:
                break
            if any(is_copy(sid, c) for c in chosen):
                continue
            if pi < self.tau_abs or pi < self.tau_rel * p[0]:
                break
            chosen.append(sid)
        return chosen

    def as_dict(self) -> dict:
        return asdict(self)


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
            is_copy: Callable[[str, str], bool], a: float, b: float, cap: int = DEFAULT_CAP) -> SelectionCut:
    """The thresholds with the best mean set F1 over the given requests (ties: the smaller thresholds)."""
    best, best_f1 = SelectionCut(a, b, 1.0, 0.0, cap), -1.0
    for tau_abs in np.round(np.arange(0.02, 1.0, 0.02), 2):
        for tau_rel in np.round(np.arange(0.0, 1.01, 0.1), 1):
            cut = SelectionCut(a, b, float(tau_abs), float(tau_rel), cap)
            f1 = np.mean([set_scores(cut.select(r, s, is_copy), g)[1] for r, s, g in zip(ranked, scores, groups)])
            if f1 > best_f1 + 1e-12:
                best, best_f1 = cut, float(f1)
    return best
