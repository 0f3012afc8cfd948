"""The learned layer: character n-gram TF-IDF and multinomial logistic regression over SKIP rationales.

The classes are the eight real ones plus ``unknown``, fitted on SKIPs that give no reason (filler,
off-topic text, an empty reason field): its probability is mass that no real class gets, so such a
rationale falls below the floor instead of borrowing a class. Character n-grams need no tokenizer, so one model reads English and Chinese alike (a Chinese
n-gram is a word or part of one), and they tolerate the morphology ("overlap", "overlapping")
that a rule must spell out. A rationale is featurised twice into one vocabulary: its conclusion
(``Reasoning.settled``) at full weight and the whole text at ``context_weight``, so the reason it
settles on outweighs the classes it weighed first. Probabilities are temperature-scaled
(``temperature`` fitted on out-of-fold predictions), which is what makes ``floor`` a confidence.

Settings picked by dev F1 (``bench/taxonomy_tune.py``, which also fits USE multilingual embeddings
for comparison; that comparison has not been run yet, and USE's encoding cost is why TF-IDF is the
default: 100,000 rationales must take under a minute on 2 cores). The model
ships as a zip of plain arrays and JSON (no pickle), written byte for byte the same from the same
data, so a rebuild can be checked against the committed file.
"""
from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import normalize

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.taxonomy.settling import Reasoning

MODEL_PATH = Path(__file__).resolve().parent / "data" / "rationale_model.zip"
_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed zip timestamps: same data, same bytes


@dataclass(frozen=True)
class ModelSettings:
    """Hyper-parameters, picked on the dev split (``bench/taxonomy_tune.py``)."""

    ngram_min: int = 1
    ngram_max: int = 4
    min_df: int = 2
    c: float = 30.0
    context_weight: float = 1.0


def _vectorizer(settings: ModelSettings, vocabulary: dict[str, int] | None = None) -> TfidfVectorizer:
    return TfidfVectorizer(analyzer="char_wb", ngram_range=(settings.ngram_min, settings.ngram_max),
                           min_df=settings.min_df, sublinear_tf=True, lowercase=True, dtype=np.float32,
                           vocabulary=vocabulary, norm="l2")


@dataclass
class RationaleModel:
    """A fitted model: ``probabilities(reasonings)`` → (n, classes) calibrated class probabilities."""

    settings: ModelSettings
    classes: list[str]
    vectorizer: TfidfVectorizer
    coef: np.ndarray  # (classes, features)
    intercept: np.ndarray  # (classes,)
    temperature: float = 1.0
    floor: float = 0.0  # below this confidence the label stays unknown
    fitted_on: str = ""  # what it was fitted on, for the card

    def features(self, reasonings: Sequence[Reasoning]) -> sparse.csr_matrix:
        settled = self.vectorizer.transform([r.settled for r in reasonings])
        turned = [i for i, r in enumerate(reasonings) if r.settled_from]
        if not turned:  # no conclusion apart from the whole text: it is its own context
            return normalize(settled)
        # rows without a turn: text == settled, and a scaled row normalises to itself, so only the
        # turned rows need their whole text added
        place = sparse.csr_matrix((np.ones(len(turned), dtype=np.float32), (turned, range(len(turned)))),
                                  shape=(len(reasonings), len(turned)))
        whole = place @ self.vectorizer.transform([reasonings[i].text for i in turned])
        return normalize(settled + self.settings.context_weight * whole)

    def logits(self, reasonings: Sequence[Reasoning]) -> np.ndarray:
        return np.asarray(self.features(reasonings) @ self.coef.T) + self.intercept

    def probabilities(self, reasonings: Sequence[Reasoning]) -> np.ndarray:
        return softmax(self.logits(reasonings) / self.temperature)

    def best_real_class(self, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(column, probability) of each row's most likely real class: the ``unknown`` class (fitted on
        SKIPs that give no reason) is never a label, its probability is mass no real class gets."""
        return best_real_class(self.classes, probs)

    @property
    def version(self) -> str:
        return digest(self.to_bytes())[:12]

    def to_bytes(self) -> bytes:
        vocabulary = sorted(self.vectorizer.vocabulary_, key=self.vectorizer.vocabulary_.get)
        meta = {"settings": asdict(self.settings), "classes": self.classes, "temperature": self.temperature,
                "floor": self.floor, "fitted_on": self.fitted_on, "vocabulary": vocabulary}
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for name, payload in (("model.json", json.dumps(meta, ensure_ascii=False, sort_keys=True).encode()),
                                  ("idf.npy", _npy(self.vectorizer.idf_)), ("coef.npy", _npy(self.coef)),
                                  ("intercept.npy", _npy(self.intercept))):
                z.writestr(zipfile.ZipInfo(name, _EPOCH), payload, compress_type=zipfile.ZIP_DEFLATED)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, payload: bytes) -> RationaleModel:
        with zipfile.ZipFile(io.BytesIO(payload)) as z:
            meta = json.loads(z.read("model.json"))
            idf, coef, intercept = (np.load(io.BytesIO(z.read(n))) for n in ("idf.npy", "coef.npy", "intercept.npy"))
        settings = ModelSettings(**meta["settings"])
        vectorizer = _vectorizer(settings, {g: i for i, g in enumerate(meta["vocabulary"])})
        vectorizer.idf_ = idf
        return cls(settings, meta["classes"], vectorizer, coef, intercept, meta["temperature"], meta["floor"],
                   meta["fitted_on"])


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array, dtype=np.float32), allow_pickle=False)
    return buf.getvalue()


def best_real_class(classes: Sequence[str], probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    real = probs.copy()
    if "unknown" in classes:
        real[:, list(classes).index("unknown")] = -1.0
    best = real.argmax(axis=1)
    return best, probs[np.arange(len(probs)), best]


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def fit_model(reasonings: Sequence[Reasoning], labels: Sequence[str], settings: ModelSettings) -> RationaleModel:
    """Vocabulary, IDF and weights from labelled rationales (deterministic: lbfgs, no shuffling)."""
    vectorizer = _vectorizer(settings).fit([r.settled for r in reasonings] + [r.text for r in reasonings])
    model = RationaleModel(settings, sorted(set(labels)), vectorizer, np.zeros(0), np.zeros(0))
    clf = LogisticRegression(C=settings.c, max_iter=5000, tol=1e-6)
    clf.fit(model.features(reasonings), list(labels))
    model.classes, model.coef, model.intercept = list(clf.classes_), clf.coef_.astype(np.float32), \
        clf.intercept_.astype(np.float32)
    return model


def load_model(path: Path = MODEL_PATH) -> RationaleModel | None:
    """The shipped model, or None before the first ``python -m skill_assets.lib.taxonomy.fitting``."""
    return RationaleModel.from_bytes(path.read_bytes()) if path.exists() else None
