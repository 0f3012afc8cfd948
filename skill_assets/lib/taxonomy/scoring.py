"""How well taxonomy labels match hand labels: the figures the issue's targets are stated in.

- micro-F1: over rationales with a real hand label, one label each and a predicted ``unknown``
  counted wrong, so micro-F1 = accuracy (as the issue measured the curated and blind sets, which
  hold no ``unknown``);
- macro-F1: the mean F1 of the eight real classes;
- coverage: the share of rationales with a real hand label that get a real label (not ``unknown``);
- per-class recall; ``unknown_kept``: the share of reason-less rationales (hand label ``unknown``)
  left ``unknown``; each figure also per language.
"""
from __future__ import annotations

from collections.abc import Sequence

from sklearn.metrics import precision_recall_fscore_support

from skill_assets.lib.taxonomy.rules import TAXONOMY_CLASSES

CLASSES = tuple(c for c in TAXONOMY_CLASSES if c != "unknown")


def _figures(gold: Sequence[str], predicted: Sequence[str]) -> dict:
    if not gold:
        return {"n": 0}
    _, recall, f1, support = precision_recall_fscore_support(gold, predicted, labels=list(CLASSES), zero_division=0)
    labelled = [(g, p) for g, p in zip(gold, predicted) if g != "unknown"]
    reasonless = [p for g, p in zip(gold, predicted) if g == "unknown"]
    present = [i for i, s in enumerate(support) if s]
    return {"n": len(labelled),
            "micro_f1": round(sum(g == p for g, p in labelled) / len(labelled), 4) if labelled else 0.0,
            "macro_f1": round(sum(f1[i] for i in present) / len(present), 4) if present else 0.0,
            "coverage": round(sum(p != "unknown" for _, p in labelled) / len(labelled), 4) if labelled else 0.0,
            "unknown_kept": round(sum(p == "unknown" for p in reasonless) / len(reasonless), 4) if reasonless else None,
            "recall": {CLASSES[i]: round(float(recall[i]), 4) for i in present},
            "support": {CLASSES[i]: int(support[i]) for i in present}}


def taxonomy_scores(gold: Sequence[str], predicted: Sequence[str], langs: Sequence[str]) -> dict:
    """``{"all": figures, "en": figures, "zh": figures}``."""
    out = {"all": _figures(gold, predicted)}
    for lang in ("en", "zh"):
        idx = [i for i, x in enumerate(langs) if x == lang]
        out[lang] = _figures([gold[i] for i in idx], [predicted[i] for i in idx])
    return out
