"""Learned, language-aware fusion of the signals: which skills a request should see first.

Plain reciprocal-rank fusion throws cross-lingual wins away: a Chinese request's English skill is
found by the multilingual encoder alone, and a skill that only one list holds scores below anything
both lists hold. The fusion model instead scores each candidate from every signal's *normalised
score* and *rank* together with the language pair ``<skill language>2<query language>`` (the
project's direction names), so it can learn that BM25 means nothing across languages and the
multilingual encoder a lot.

Candidates are the union of each signal's top ``depth``. Features (``candidates``): per candidate and
signal the score as a z-score over the whole pool for that request and ``-log2(1 + rank)`` (rank
capped at ``depth + 1``); per candidate the signals' agreement and its best rank; per request each
signal's best z and the share of Latin words (a Chinese request that names its tools). Two model
kinds are fitted on a benchmark's train split and the better on dev kept:

- ``linear``: logistic regression over the features, each with a shared weight plus a cross-language
  deviation (L2-shrunk toward the shared one), and biases for cross-language, Chinese skill and
  Chinese request; the weights are the card;
- ``lambdarank``: LightGBM LambdaRank over the features plus the same three language flags.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from skill_assets.lib.common.language import DIRECTIONS, detect_language, script_counts
from skill_assets.lib.retrieval.model_files import (ModelFileError, checked_booster_text, number_list,
                                                    read_json_object)
from skill_assets.lib.retrieval.dense import EMBEDDER_MAX_SEQ
from skill_assets.lib.retrieval.multilingual import READING_CARD_KEY, READINGS
from skill_assets.lib.retrieval.ranking import top_rows
from skill_assets.lib.retrieval.signals import DENSE_READING_CARD_KEY, DENSE_READINGS, SIGNALS

PAIRS = tuple(DIRECTIONS)  # "<skill language>2<query language>"
DEFAULT_DEPTH = 50
MODEL_FILE = "fusion.json"
BOOSTER_FILE = "lambdarank.txt"
KINDS = ("linear", "lambdarank")
#: candidates per signal a saved model may ask for: beyond this a damaged depth only costs time
MAX_DEPTH = 1000


def pair_index(skill_language: str, query_language: str) -> int:
    return PAIRS.index(f"{skill_language}2{query_language}")


@dataclass
class Candidates:
    """One request's candidate skills (pool row indices) with their features and language pairs."""

    rows: np.ndarray       # (c,) int: pool rows
    features: np.ndarray   # (c, len(feature_names(signals))) float32
    pairs: np.ndarray      # (c,) int: index into PAIRS
    query_zh: bool
    raw: np.ndarray        # (c, signals) float32: each signal's own score, for the output's "signals"


#: the feature set fitted models are tied to; a saved model of another set is refused at load
FEATURE_SET = 3
AGREEMENT_RANK = 10


def feature_names(signals: Sequence[str]) -> list[str]:
    return ([f"{s}:{kind}" for s in signals for kind in ("z", "log_rank")]
            + [f"agreement@{AGREEMENT_RANK}", "best_log_rank"] + [f"{s}:top_z" for s in signals]
            + ["query_latin_share"])


def latin_share(query: str) -> float:
    """Latin words among the request's tokens (CJK characters + Latin words): how far a Chinese request carries the
    product and tool names that BM25 and the English bi-encoder can still match in an English skill."""
    cjk, latin = script_counts(query)
    return latin / (cjk + latin) if cjk + latin else 1.0


def candidates(scores: dict[str, np.ndarray], signals: Sequence[str], queries: Sequence[str],
               skill_zh: np.ndarray, depth: int = DEFAULT_DEPTH) -> list[Candidates]:
    """Candidates of every request from full-pool score matrices ``{signal: (requests, pool)}``.

    Per candidate and signal: the score's z over the whole pool and ``-log2(1 + rank)``; per candidate:
    how many signals rank it in their top ``AGREEMENT_RANK`` (as a share) and its best log rank; per
    request: each signal's best z (how sure that signal is of anything) and ``latin_share``. All of
    them are normalised per request, so they carry across pools and writing styles rather than
    memorising the pool they were fitted on.
    """
    n_pool = next(iter(scores.values())).shape[1]
    d = min(depth, n_pool)
    out = []
    for qi, query in enumerate(queries):
        qlang = detect_language(query)
        rows_by_signal, ranks = [], []
        for s in signals:
            row = scores[s][qi]
            top = top_rows(row, d)
            rank = np.full(n_pool, d + 1, dtype=np.float32)
            rank[top] = np.arange(1, len(top) + 1)
            rows_by_signal.append(top)
            ranks.append(rank)
        rows = np.unique(np.concatenate(rows_by_signal))
        feats, raw = [], []
        for s, rank in zip(signals, ranks):
            row = scores[s][qi]
            std = float(row.std()) or 1.0
            feats.append((row[rows] - float(row.mean())) / std)
            feats.append(-np.log2(1.0 + rank[rows]))
            raw.append(row[rows])
        per_signal = np.stack(feats, 1)
        log_ranks = per_signal[:, 1::2]
        agreement = (np.exp2(-log_ranks) - 1 <= AGREEMENT_RANK).mean(1, keepdims=True)
        request = np.concatenate([per_signal[:, 0::2].max(0), [latin_share(query)]])
        features = np.hstack([per_signal, agreement, log_ranks.max(1, keepdims=True),
                              np.broadcast_to(request, (len(rows), len(request)))])
        pairs = np.where(skill_zh[rows], PAIRS.index(f"zh2{qlang}"), PAIRS.index(f"en2{qlang}"))
        out.append(Candidates(rows, features.astype(np.float32), pairs.astype(np.int64), qlang == "zh",
                              np.stack(raw, 1).astype(np.float32)))
    return out


#: language pairs where the skill and the request are in different languages
CROSS_PAIRS = tuple(p for p in PAIRS if p[:2] != p[-2:])


def _language_flags(c: Candidates) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cross-lingual, skill in Chinese, request in Chinese) per candidate, as float columns."""
    pair = np.asarray(PAIRS)[c.pairs]
    return tuple(np.asarray(flag, dtype=np.float32)[:, None] for flag in
                 (np.isin(pair, CROSS_PAIRS), np.char.startswith(pair, "zh"), np.char.endswith(pair, "zh")))


def _linear_design(c: Candidates) -> np.ndarray:
    """Shared features, a cross-lingual copy of them, and three language biases.

    Not one block per language pair: leaving one curated writer out (each non-English writer wrote
    one whole direction) showed per-pair weights and biases inverting the ranking of a pair they had
    not seen (Hit@1 0.008 where BM25 has 0.22), and a per-pair bias learns the benchmark's direction
    mix rather than anything true of a new library. Same- versus cross-language carries over.
    """
    cross, skill_zh, query_zh = _language_flags(c)
    return np.hstack([c.features, cross * c.features, cross, skill_zh, query_zh])


def design_width(kind: str, signals: Sequence[str]) -> int:
    """Columns of ``kind``'s design matrix over ``signals``: what a saved model's weights or splits must fit."""
    f = len(feature_names(signals))
    return 2 * f + 3 if kind == "linear" else f + 3


def _tree_design(c: Candidates) -> np.ndarray:
    cross, skill_zh, query_zh = _language_flags(c)
    return np.hstack([c.features, query_zh, skill_zh, cross])


@dataclass(frozen=True)
class LinearWeights:
    """A linear fusion's fitted weights: one per column of ``_linear_design`` (``design_width``) and the bias."""

    coef: list[float]
    intercept: float = 0.0

    def score(self, c: Candidates) -> np.ndarray:
        return _linear_design(c) @ np.asarray(self.coef, dtype=np.float32) + self.intercept


@dataclass
class FusionModel:
    """A fitted fusion: ``score(candidates)`` → one fused score per candidate (higher first)."""

    kind: str                          # linear | lambdarank
    signals: tuple[str, ...]
    depth: int = DEFAULT_DEPTH
    params: dict = field(default_factory=dict)   # the hyper-parameters chosen on dev
    linear: LinearWeights | None = None  # linear: its weights
    booster: object | None = None       # lambdarank: lightgbm.Booster
    card: dict = field(default_factory=dict)
    #: a saved booster's checked text (``model_files.checked_booster_text``), made a Booster on first use (``ready``)
    booster_text: str | None = field(default=None, repr=False, compare=False)

    def ready(self) -> FusionModel:
        """Load a saved LambdaRank booster: importing lightgbm takes seconds (sklearn with it), which an answer
        that needs no booster (BM25's lexical path while the other indexes build) should not wait for."""
        if self.booster is None and self.booster_text is not None:
            import lightgbm

            self.booster = lightgbm.Booster(model_str=self.booster_text)
        return self

    def score(self, c: Candidates) -> np.ndarray:
        if self.kind == "linear":
            return self.linear.score(c)
        return np.asarray(self.ready().booster.predict(_tree_design(c), num_threads=1), dtype=np.float32)

    def rank(self, c: Candidates) -> tuple[np.ndarray, np.ndarray]:
        """(positions into ``c`` best first, fused score of each candidate in ``c``'s order): the one fused
        ordering, which routing, the system runner and fitting all read."""
        s = self.score(c)
        return np.argsort(-s, kind="stable"), s

    def weights_by_language(self) -> dict[str, dict[str, float]]:
        """Linear only: the effective weight of every feature, and the bias, within a language and across languages
        (for the card; the bias adds ``skill_zh`` / ``query_zh`` terms, listed apart)."""
        names = feature_names(self.signals)
        f, coef, intercept = len(names), np.asarray(self.linear.coef), self.linear.intercept
        return {"same_language": {**{n: round(float(coef[i]), 4) for i, n in enumerate(names)},
                                  "bias": round(intercept, 4)},
                "cross_language": {**{n: round(float(coef[i] + coef[f + i]), 4) for i, n in enumerate(names)},
                                   "bias": round(float(coef[2 * f] + intercept), 4)},
                "skill_zh_bias": round(float(coef[2 * f + 1]), 4), "query_zh_bias": round(float(coef[2 * f + 2]), 4)}

    def save(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        coef, intercept = (self.linear.coef, self.linear.intercept) if self.linear else (None, 0.0)
        body = {"kind": self.kind, "feature_set": FEATURE_SET, "signals": list(self.signals), "depth": self.depth,
                "params": self.params, "coef": coef, "intercept": intercept, "card": self.card}
        if self.ready().booster is not None:
            self.booster.save_model(str(directory / BOOSTER_FILE))
        else:  # a booster left from an earlier model of the folder would describe another model
            (directory / BOOSTER_FILE).unlink(missing_ok=True)
        (directory / MODEL_FILE).write_text(json.dumps(body, indent=2, ensure_ascii=False))
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> FusionModel:
        """The model saved in ``directory``, every field checked (``model_files``): ModelFileError, in one line, for a
        damaged or foreign folder, before LightGBM or the router sees any of it."""
        directory = Path(directory)
        where = directory / MODEL_FILE
        body = read_json_object(where)
        if body.get("feature_set", 1) != FEATURE_SET:
            raise ModelFileError(f"fusion model {directory} was fitted on feature set {body.get('feature_set', 1)}, "
                                 f"this code computes set {FEATURE_SET}: materialize router_fusion again")
        kind, signals, depth = body.get("kind"), body.get("signals"), body.get("depth")
        if kind not in KINDS:
            raise ModelFileError(f"{where}: kind {str(kind)[:40]!r} is not one of {', '.join(KINDS)}")
        if (not isinstance(signals, list) or not signals or len(set(map(str, signals))) != len(signals)
                or not set(signals) <= set(SIGNALS)):
            raise ModelFileError(f"{where}: signals must be distinct names out of {', '.join(SIGNALS)}")
        if not isinstance(depth, int) or isinstance(depth, bool) or not 1 <= depth <= MAX_DEPTH:
            raise ModelFileError(f"{where}: depth must be an integer from 1 to {MAX_DEPTH}")
        params, card = body.get("params", {}), body.get("card", {})
        if not isinstance(params, dict) or not isinstance(card, dict):
            raise ModelFileError(f"{where}: params and card must be JSON objects")
        if why := card_problem(card):
            raise ModelFileError(f"{where}: the card {why}")
        width = design_width(kind, signals)
        if kind == "linear":
            coef = number_list(where, "coef", body.get("coef"), width)
            (intercept,) = number_list(where, "intercept", [body.get("intercept")])
            return cls(kind, tuple(signals), depth, params, LinearWeights(coef, intercept), None, card)
        text = checked_booster_text(directory / BOOSTER_FILE, width)
        return cls(kind, tuple(signals), depth, params, None, None, card, text)


def card_problem(card: dict) -> str | None:
    """What in a fusion's card the engine cannot route by, in words, or None: the card says how the fusion's features
    were read (each encoder's reading, the bi-encoder's document cap, the multilingual body cap), and a value this
    code does not know would route the fusion over signals it was never fitted on. A key a card lacks is a fusion
    fitted before it existed, routed the old way (``Engine``)."""
    for what, key, known in (("multilingual", READING_CARD_KEY, READINGS), ("dense", DENSE_READING_CARD_KEY,
                                                                           DENSE_READINGS)):
        if key in card and card[key] not in known:
            return f"names an unknown {what} reading {str(card[key])[:40]!r}; this code reads {', '.join(known)}"
    for key, most in (("document_tokens", EMBEDDER_MAX_SEQ), ("multilingual_body_chars", None)):
        value = card.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1
                                  or (most is not None and value > most)):
            return f"holds {key} {str(value)[:20]!r}, not an integer from 1{f' to {most}' if most else ' up'}"
    return None


def fit_linear(train: Sequence[Candidates], labels: Sequence[np.ndarray], signals: Sequence[str], c_reg: float,
               depth: int) -> FusionModel:
    """Logistic regression on every train candidate (relevant = a ground-truth skill or a copy of one)."""
    from sklearn.linear_model import LogisticRegression

    x = np.vstack([_linear_design(c) for c in train])
    y = np.concatenate(labels)
    model = LogisticRegression(C=c_reg, max_iter=2000)
    model.fit(x, y)
    return FusionModel("linear", tuple(signals), depth, {"C": c_reg},
                       LinearWeights(model.coef_[0].astype(float).tolist(), float(model.intercept_[0])))


def fit_lambdarank(train: Sequence[Candidates], labels: Sequence[np.ndarray], signals: Sequence[str],
                   n_estimators: int, num_leaves: int, depth: int, seed: int = 0) -> FusionModel:
    import lightgbm

    x = np.vstack([_tree_design(c) for c in train])
    y = np.concatenate(labels)
    params = {"objective": "lambdarank", "learning_rate": 0.05, "num_leaves": num_leaves, "min_data_in_leaf": 20,
              "lambdarank_truncation_level": 20, "eval_at": [10], "deterministic": True, "num_threads": 1,
              "seed": seed, "verbosity": -1}
    booster = lightgbm.train(params, lightgbm.Dataset(x, y, group=[len(c.rows) for c in train]), n_estimators)
    return FusionModel("lambdarank", tuple(signals), depth, {"n_estimators": n_estimators, "num_leaves": num_leaves},
                       booster=booster)


#: the hyper-parameter grid searched on dev: (kind, params)
GRID: tuple[tuple[str, dict], ...] = (
    *(("linear", {"c_reg": c}) for c in (0.01, 0.1, 1.0, 10.0)),
    *(("lambdarank", {"n_estimators": n, "num_leaves": leaves}) for n in (100, 300) for leaves in (7, 15)),
)


def fit(kind: str, params: dict, train: Sequence[Candidates], labels: Sequence[np.ndarray],
        signals: Sequence[str], depth: int) -> FusionModel:
    if kind == "linear":
        return fit_linear(train, labels, signals, params["c_reg"], depth)
    return fit_lambdarank(train, labels, signals, params["n_estimators"], params["num_leaves"], depth)
