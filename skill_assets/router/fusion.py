"""Learned, language-aware fusion of the signals: which skills a request should see first.

Plain reciprocal-rank fusion throws cross-lingual wins away: a Chinese request's English skill is
found by the multilingual encoder alone, and a skill that only one list holds scores below anything
both lists hold. The fusion model instead scores each candidate from every signal's *normalised
score* and *rank* together with the language pair ``<skill language>2<query language>`` (the
project's direction names), so it can learn that BM25 means nothing across languages and the
multilingual encoder a lot.

Candidates are the union of each signal's top ``depth``. Features per candidate and signal: the
score as a z-score over the whole pool for that request, and ``-log2(1 + rank)`` (rank capped at
``depth + 1``). Two model kinds are fitted on a benchmark's train split and the better on dev kept:

- ``linear``: logistic regression over the features, each with a shared weight plus a per-pair
  deviation (L2-shrunk toward the shared one, so a pair with few requests borrows from the rest),
  and a per-pair bias; the weights are the card;
- ``lambdarank``: LightGBM LambdaRank over the features plus the query's and the skill's language.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from skill_assets.lib.common.language import DIRECTIONS

PAIRS = tuple(DIRECTIONS)  # "<skill language>2<query language>"
DEFAULT_DEPTH = 50
MODEL_FILE = "fusion.json"
BOOSTER_FILE = "lambdarank.txt"


def pair_index(skill_language: str, query_language: str) -> int:
    return PAIRS.index(f"{skill_language}2{query_language}")


@dataclass
class Candidates:
    """One request's candidate skills (pool row indices) with their features and language pairs."""

    rows: np.ndarray       # (c,) int: pool rows
    features: np.ndarray   # (c, 2 * signals) float32: z-score and -log2(1 + rank) per signal
    pairs: np.ndarray      # (c,) int: index into PAIRS
    query_zh: bool
    raw: np.ndarray        # (c, signals) float32: each signal's own score, for the output's "signals"


def feature_names(signals: Sequence[str]) -> list[str]:
    return [f"{s}:{kind}" for s in signals for kind in ("z", "log_rank")]


def candidates(scores: dict[str, np.ndarray], signals: Sequence[str], query_languages: Sequence[str],
               skill_zh: np.ndarray, depth: int = DEFAULT_DEPTH) -> list[Candidates]:
    """Candidates of every request from full-pool score matrices ``{signal: (requests, pool)}``."""
    n_pool = next(iter(scores.values())).shape[1]
    d = min(depth, n_pool)
    out = []
    for qi, qlang in enumerate(query_languages):
        rows_by_signal, ranks = [], []
        for s in signals:
            row = scores[s][qi]
            top = np.argpartition(-row, d - 1)[:d] if d < n_pool else np.arange(n_pool)
            top = top[np.argsort(-row[top], kind="stable")]
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
        pairs = np.where(skill_zh[rows], PAIRS.index(f"zh2{qlang}"), PAIRS.index(f"en2{qlang}"))
        out.append(Candidates(rows, np.stack(feats, 1).astype(np.float32), pairs.astype(np.int64), qlang == "zh",
                              np.stack(raw, 1).astype(np.float32)))
    return out


def _linear_design(c: Candidates) -> np.ndarray:
    """Shared features, per-pair copies of them, per-pair bias: one column block per pair."""
    n, f = c.features.shape
    onehot = np.zeros((n, len(PAIRS)), dtype=np.float32)
    onehot[np.arange(n), c.pairs] = 1.0
    per_pair = (onehot[:, :, None] * c.features[:, None, :]).reshape(n, -1)
    return np.hstack([c.features, per_pair, onehot])


def _tree_design(c: Candidates) -> np.ndarray:
    skill_zh = np.isin(c.pairs, [PAIRS.index("zh2en"), PAIRS.index("zh2zh")]).astype(np.float32)
    return np.hstack([c.features, np.full((len(c.rows), 1), float(c.query_zh), np.float32), skill_zh[:, None]])


@dataclass
class FusionModel:
    """A fitted fusion: ``score(candidates)`` → one fused score per candidate (higher first)."""

    kind: str                          # linear | lambdarank
    signals: tuple[str, ...]
    depth: int = DEFAULT_DEPTH
    params: dict = field(default_factory=dict)   # the hyper-parameters chosen on dev
    coef: list[float] | None = None     # linear: weights of _linear_design's columns
    intercept: float = 0.0
    booster: object | None = None       # lambdarank: lightgbm.Booster
    card: dict = field(default_factory=dict)

    def score(self, c: Candidates) -> np.ndarray:
        if self.kind == "linear":
            return _linear_design(c) @ np.asarray(self.coef, dtype=np.float32) + self.intercept
        return np.asarray(self.booster.predict(_tree_design(c), num_threads=1), dtype=np.float32)

    def weights_by_pair(self) -> dict[str, dict[str, float]]:
        """Linear only: the effective weight of every feature, and the bias, per language pair (for the card)."""
        names, f = feature_names(self.signals), 2 * len(self.signals)
        coef = np.asarray(self.coef)
        return {pair: {**{n: round(float(coef[i] + coef[f + p * f + i]), 4) for i, n in enumerate(names)},
                       "bias": round(float(coef[f + len(PAIRS) * f + p] + self.intercept), 4)}
                for p, pair in enumerate(PAIRS)}

    def save(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        body = {"kind": self.kind, "signals": list(self.signals), "depth": self.depth, "params": self.params,
                "coef": self.coef, "intercept": self.intercept, "card": self.card}
        if self.booster is not None:
            self.booster.save_model(str(directory / BOOSTER_FILE))
        (directory / MODEL_FILE).write_text(json.dumps(body, indent=2, ensure_ascii=False))
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> FusionModel:
        directory = Path(directory)
        body = json.loads((directory / MODEL_FILE).read_text())
        booster = None
        if body["kind"] == "lambdarank":
            import lightgbm

            booster = lightgbm.Booster(model_file=str(directory / BOOSTER_FILE))
        return cls(body["kind"], tuple(body["signals"]), body["depth"], body["params"], body["coef"],
                   body["intercept"], booster, body["card"])


def fit_linear(train: Sequence[Candidates], labels: Sequence[np.ndarray], signals: Sequence[str], c_reg: float,
               depth: int) -> FusionModel:
    """Logistic regression on every train candidate (relevant = a ground-truth skill or a copy of one)."""
    from sklearn.linear_model import LogisticRegression

    x = np.vstack([_linear_design(c) for c in train])
    y = np.concatenate(labels)
    model = LogisticRegression(C=c_reg, max_iter=2000)
    model.fit(x, y)
    return FusionModel("linear", tuple(signals), depth, {"C": c_reg}, model.coef_[0].astype(float).tolist(),
                       float(model.intercept_[0]))


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
