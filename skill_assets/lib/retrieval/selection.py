"""How many skills to load: the number with the best predicted set F1, learned on a benchmark's train split.

An agent needs to know whether to load one skill or three. A threshold on each next skill's score
cannot know how many things the request asks for, and a fixed count is wrong for every request
that asks for another number. So the cut predicts, for each n from 1 to ``cap``, the set F1 that
loading the first n distinct skills of the fused ranking would score, and loads the n with the
highest prediction: when the ranking is unsure of its second skill, one is safer even for a
two-skill request (F1 0.67 for a right first skill alone against 0.5 for a right and a wrong one).

The predictions are ridge regressions (regularisation chosen by leave-one-out on train) over what
the router knows at request time: how long the request is (log characters and sentences), how
likely each of the first three distinct skills is relevant (the fused score calibrated by Platt
scaling), how far the second and third fall behind the first, and how alike the three skills are
(document cosine: two near-identical skills serve one need, not two). They are fitted on
out-of-fold fused rankings of the train requests, so the calibration is that of requests the
fusion has not seen. A skill that is a copy of one already kept (another repository's copy:
documents with cosine ≥ ``copy_cosine``) is passed over, since loading it twice helps nobody.

A long task statement routed by its parts (``part_routing``) needs two to six skills, one for each of its needs, and
the cut predicts F1 only up to its own cap (three). So a request of more need parts than that cap loads what the cut
selects and then each need part's best skill (the skill the merge lifted for that part) whose merged score the cut
reads as at least ``PART_PROBABILITY`` likely relevant, up to ``min(PARTS_MOST, number of need parts)`` skills, never
more than ``PARTS_MAX`` (``select_by_parts``). The cut is not refitted: this reads its Platt scaling only.

Chosen on the long-task dev split (65 tasks, 2 to 6 skills each) by the selected set's F1 (``bench/long_tasks.py
--choose``, most 3 to 6 by probability 0 to 1). The cut alone loads 2.31 skills a task there, precision / recall / F1
47.4 / 39.3 / 41.7 %; this rule 3.08, 44.1 / 48.8 / 44.6 (F1 +2.9 [-0.6, +6.5], paired bootstrap): recall gains
what precision loses, and the F1 gain is the best of the grid, so a small one within what another draw of tasks
would move. Loading up to six instead of four gave 3.43, 40.2 / 49.4 / 42.4 (every part's best, probability 0:
4.85, 31.9 / 52.4 / 37.7): a part's best skill past the fourth is more often wrong than needed. Letting the parts add
to requests of two or three parts as well cost the short dev sets' requests of several parts (set F1 over curated
dev 62.9 -> 61.1, meaning dev 58.3 -> 57.6) for no long-dev gain; with the rule as chosen, meaning dev 58.3 -> 57.9,
curated dev 62.9 -> 62.8, styles dev unchanged. A request of one part selects exactly as before.

The long-task test split (41 tasks), scored once after the choice, did not bear it out: the cut alone 2.29 skills,
67.1 / 58.7 / 60.8 (exact 22.0), this rule 3.17, 52.6 / 62.3 / 54.7 (exact 12.2): recall rose less than precision
fell. The rankings, and so Hit@1, Set-Compat and FC@10, are the same either way (docs/RESULTS.md, long-tasks).
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from skill_assets.lib.core.runs import Qrels, Ranking, Run
from skill_assets.lib.retrieval.model_files import ModelFileError, number_list, read_json_object
from skill_assets.lib.retrieval.standardisation import Standardisation

DEFAULT_CAP = 3
#: the most skills a saved cut may select: long tasks need up to six; more is a damaged file
MAX_CAP = 10
COPY_COSINE = 0.97
#: never more skills than this for a request routed by parts: the long task statements need two to six
PARTS_MAX = 6
#: the most skills a request routed by parts loads, chosen on long dev among 3 to ``PARTS_MAX`` (module docstring)
PARTS_MOST = 4
#: a need part's best skill is loaded where the cut reads its merged score as at least this likely relevant
PART_PROBABILITY = 0.3
#: a probability kept off 0 and 1, so that its logit (the fused-score scale) stays finite
_EPS = 1e-9
_SENTENCE = re.compile(r"[.!?。！？；;\n]+")
FEATURES = ("log_chars", "log_sentences", "p_1", "p_2", "p_3", "cos_1_2", "cos_1_3", "cos_2_3", "gap_1_2",
            "gap_1_3")
#: ``gap_1_j`` of a ranking with fewer than j distinct skills: farther than any real gap
_NO_SKILL_GAP = 10.0
RIDGE_ALPHAS = (0.1, 1.0, 10.0, 100.0)
#: fewer train requests with candidates than this and the cut is not fitted (it loads the first skill alone)
MIN_FIT_REQUESTS = 10

Similarity = Callable[[str, str], float]


def request_shape(query: str) -> tuple[float, float]:
    """(log characters, log sentences) of a request."""
    return math.log1p(len(query)), math.log1p(len([s for s in _SENTENCE.split(query) if s.strip()]))


@dataclass(frozen=True)
class PlattScaling:
    """A fused score read as the probability that its skill is relevant: the logistic of ``a * score + b``."""

    a: float = 1.0
    b: float = 0.0

    @property
    def calibration(self) -> tuple[float, float]:
        """(a, b), or the plain logistic's (1, 0) for an inverted fit (a ≤ 0, a damaged one): it would rank likelier
        skills as less likely."""
        return (self.a, self.b) if self.a > 0 else (1.0, 0.0)

    def probability(self, score: float) -> float:
        """The calibrated probability that a skill of this fused score is relevant, kept off 0 and 1."""
        a, b = self.calibration
        return min(max(1.0 / (1.0 + math.exp(-(a * score + b))), _EPS), 1.0 - _EPS)

    def fused_score(self, probability: float) -> float:
        """The fused score ``probability`` reads as this probability (its inverse, the probability kept off 0 and 1
        so that the score stays finite): how a merge of probabilities is put back on the fused-score scale."""
        a, b = self.calibration
        p = min(max(probability, _EPS), 1.0 - _EPS)
        return (math.log(p / (1.0 - p)) - b) / a


@dataclass(frozen=True)
class SelectionCut:
    """Platt scaling of the fused score, and per n = 1..cap a linear prediction of the set F1 of loading n.

    The unfitted default predicts F1 only for loading one skill, so it selects the first alone."""

    platt: PlattScaling = PlattScaling()
    standardise: Standardisation = field(default_factory=lambda: Standardisation.identity(len(FEATURES)))
    coef: tuple[tuple[float, ...], ...] = field(default_factory=lambda: ((0.0,) * len(FEATURES),))  # one row per n
    intercepts: tuple[float, ...] = (1.0,)
    alpha: float | None = None  # the ridge regularisation chosen on train (card only)
    cap: int = DEFAULT_CAP
    copy_cosine: float = COPY_COSINE

    def candidates(self, ranking: Ranking, similarity: Similarity, cap: int) -> Ranking:
        """The first skill of ``ranking`` (fused scores, best first) and the next ``cap - 1`` that are not copies of
        an earlier one, with their fused scores."""
        kept: Ranking = []
        for sid, s in ranking:
            if len(kept) == cap:
                break
            if not any(similarity(sid, k) >= self.copy_cosine for k, _ in kept):
                kept.append((sid, float(s)))
        return kept

    def features(self, candidates: Ranking, similarity: Similarity, query: str) -> np.ndarray:
        """``FEATURES`` of one request from its first (up to three) distinct skills (``candidates``)."""
        kept = [sid for sid, _ in candidates]
        kept_scores = np.asarray([s for _, s in candidates])
        p = np.zeros(3)
        p[:min(3, len(kept))] = 1.0 / (1.0 + np.exp(-(self.platt.a * kept_scores[:3] + self.platt.b)))
        cos = [similarity(kept[i], kept[j]) if j < len(kept) else 0.0 for i, j in ((0, 1), (0, 2), (1, 2))]
        gaps = [kept_scores[0] - kept_scores[j] if j < len(kept) else _NO_SKILL_GAP for j in (1, 2)]
        return np.array([*request_shape(query), *p, *cos, *gaps], dtype=np.float64)

    def predicted_f1(self, features: np.ndarray) -> np.ndarray:
        """Predicted set F1 of loading the first 1, 2, … ``len(coef)`` skills."""
        return np.asarray(self.coef) @ self.standardise(features) + np.asarray(self.intercepts)

    def select(self, ranking: Ranking, similarity: Similarity, query: str, cap: int | None = None) -> list[str]:
        """The skills to load, from a ranking best first with its fused scores (always at least the first).

        ``cap`` may lower the fitted cap, not raise it: no prediction exists beyond it."""
        limit = min(cap or self.cap, self.cap, len(self.intercepts))
        kept = self.candidates(ranking, similarity, max(limit, 1))
        if not kept:
            return []
        f1 = self.predicted_f1(self.features(kept, similarity, query))[:len(kept)]
        return [sid for sid, _ in kept[:int(np.argmax(f1)) + 1]]

    def select_by_parts(self, ranking: Ranking, similarity: Similarity, query: str,
                        part_best: Collection[str], n_parts: int, cap: int | None = None,
                        most: int = PARTS_MOST, part_probability: float = PART_PROBABILITY) -> list[str]:
        """The skills to load for a request routed by ``n_parts`` need parts: ``select``'s, then, where the parts
        outnumber the cut's cap, each skill of ``part_best`` (a part's best skill) in ranking order whose probability
        reaches ``part_probability`` and that is no copy of one kept, up to ``min(cap or most, most, n_parts,
        PARTS_MAX)`` (the module's docstring). ``most`` and ``part_probability`` are what ``bench/long_tasks.py
        --choose`` varies."""
        kept = self.select(ranking, similarity, query, cap)
        if n_parts <= self.cap:
            return kept
        limit = min(cap or most, most, n_parts, PARTS_MAX)
        for sid, s in ranking:
            if len(kept) >= limit:
                break
            if (sid in part_best and sid not in kept and self.platt.probability(s) >= part_probability
                    and not any(similarity(sid, k) >= self.copy_cosine for k in kept)):
                kept.append(sid)
        return kept

    def as_dict(self) -> dict:
        """The saved form (``selection.json``, the card's ``selection``): one flat object, read by ``load``."""
        return {"a": self.platt.a, "b": self.platt.b, "mean": list(self.standardise.mean),
                "scale": list(self.standardise.scale), "coef": [list(r) for r in self.coef],
                "intercepts": list(self.intercepts), "alpha": self.alpha, "cap": self.cap,
                "copy_cosine": self.copy_cosine, "features": list(FEATURES)}

    @classmethod
    def load(cls, path: Path) -> SelectionCut:
        """The cut saved at ``path``, every field checked against what ``select`` computes with (one
        ``ModelFileError`` line naming the file for a damaged or foreign one)."""
        body = read_json_object(path)
        if "coef" not in body:
            raise ModelFileError(f"{path}: from an older router (a keep threshold, not predicted set F1): materialize "
                                 "router_fusion again")
        if body.get("features", list(FEATURES)) != list(FEATURES):
            raise ModelFileError(f"{path}: fitted on other features than this code computes ({', '.join(FEATURES)})")
        n = len(FEATURES)
        rows = body["coef"] if isinstance(body["coef"], list) else None
        if not rows or len(rows) > MAX_CAP:
            raise ModelFileError(f"{path}: coef must hold 1 to {MAX_CAP} rows")
        coef = tuple(tuple(number_list(path, "coef", row, n)) for row in rows)
        scale = number_list(path, "scale", body.get("scale"), n)
        if any(v == 0 for v in scale):
            raise ModelFileError(f"{path}: scale holds a zero")
        cap, alpha = body.get("cap", DEFAULT_CAP), body.get("alpha")
        if not isinstance(cap, int) or isinstance(cap, bool) or not 1 <= cap <= MAX_CAP:
            raise ModelFileError(f"{path}: cap must be an integer from 1 to {MAX_CAP}")
        a, b, copy_cosine = number_list(path, "a, b, copy_cosine",
                                        [body.get("a"), body.get("b"), body.get("copy_cosine", COPY_COSINE)])
        return cls(PlattScaling(a, b), Standardisation(tuple(number_list(path, "mean", body.get("mean"), n)),
                                                      tuple(scale)), coef,
                   tuple(number_list(path, "intercepts", body.get("intercepts"), len(coef))),
                   None if alpha is None else number_list(path, "alpha", [alpha])[0], cap, copy_cosine)


def set_precision_recall(selected: Sequence[str], groups: Sequence[Sequence[str]]) -> tuple[float, float]:
    """(precision, recall) of a selection against ground-truth groups: a group is covered by any member, and a
    second member of a covered group counts as a wrong pick; (0, 0) for an empty selection."""
    if not selected:
        return 0.0, 0.0
    group_of = {sid: i for i, g in enumerate(groups) for sid in g}
    covered = len({group_of[s] for s in selected if s in group_of})
    return covered / len(selected), covered / len(groups)


def set_scores(selected: Sequence[str], groups: Sequence[Sequence[str]]) -> tuple[float, float]:
    """(exact-set match, set F1) of a selection against ground-truth groups (``set_precision_recall``)."""
    precision, recall = set_precision_recall(selected, groups)
    f1 = 0.0 if not precision else 2 * precision * recall / (precision + recall)
    return float(precision == recall == 1.0), f1


def fit_platt(scores: np.ndarray, labels: np.ndarray) -> PlattScaling:
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=100.0, max_iter=1000).fit(np.asarray(scores, dtype=np.float64)[:, None], labels)
    return PlattScaling(float(model.coef_[0, 0]), float(model.intercept_[0]))


def fit_cut(run: Run, truth: Qrels, queries: Mapping[str, str], similarity: Similarity,
            cap: int = DEFAULT_CAP) -> SelectionCut:
    """Platt scaling of the top-10 fused scores of ``run`` (the train requests' out-of-fold fused rankings), then
    per n = 1..cap a ridge regression of the set F1 that loading the first n distinct skills scored on each train
    request; the train requests are ``truth``'s, in its order, each with its text in ``queries`` (a request the run
    does not rank has no candidates). Too few requests to learn from (a demo's handful): the unfitted cut, which
    loads the first skill alone (``alpha`` None says so in the card)."""
    from sklearn.linear_model import RidgeCV

    rankings = [run.rankings.get(rid, []) for rid in truth.groups]
    top_scores = np.array([s for r in rankings for _, s in r[:10]], dtype=np.float64)
    top_labels = np.array([any(sid in g for g in gs) for r, gs in zip(rankings, truth.groups.values())
                           for sid, _ in r[:10]], dtype=bool)
    calibrated = fit_platt(top_scores, top_labels.astype(int)) if 0 < top_labels.sum() < len(top_labels) \
        else PlattScaling()
    base = SelectionCut(calibrated, cap=cap)
    x, y = [], []
    for r, (rid, gs) in zip(rankings, truth.groups.items()):
        kept = base.candidates(r, similarity, cap)
        if kept:
            x.append(base.features(kept, similarity, queries[rid]))
            ids = [sid for sid, _ in kept]
            y.append([set_scores(ids[:n], gs)[1] for n in range(1, cap + 1)])
    if len(x) < MIN_FIT_REQUESTS:
        return base
    x_arr, y_arr = np.asarray(x), np.asarray(y)
    standardise = Standardisation.fit(x_arr)
    model = RidgeCV(alphas=RIDGE_ALPHAS).fit(standardise(x_arr), y_arr)
    return SelectionCut(calibrated, standardise,
                        tuple(tuple(float(w) for w in row) for row in model.coef_),
                        tuple(float(v) for v in model.intercept_), float(model.alpha_), cap)
