"""``classify_rationale``: the one entry point of the rejection taxonomy.

Layers, each only for what the one before leaves:
1. the rules (``rules.py``), on the reasoning a rationale settles on: a hit that is negated, or that
   sits before the rationale's last turn ("… look redundant, but …"), does not count;
2. the learned model (``model.py``): the calibrated probability of its best real class must reach the
   model's ``floor`` (set on dev), else the label stays ``unknown`` (method ``none``, the probability
   kept so SQL can see how close);
3. optionally, a caller-supplied ``fallback`` (the configured LLM, ``llm_fallback.py``) for what is
   still unknown; off by default.

The label records how it was reached (``method``, ``rule_id``, ``confidence``, ``model_version``),
so ``skip_taxonomy`` can be filtered by it.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np

from skill_assets.lib.taxonomy.model import RationaleModel, load_model
from skill_assets.lib.taxonomy.rules import TaxonomyLabel, rule_hits
from skill_assets.lib.taxonomy.settling import Reasoning, reasoning_text

#: ``fallback(rationales) -> labels`` (a class or None per rationale) for what rules and model leave unknown
Fallback = Callable[[list[str]], list[str | None]]
UNKNOWN = "unknown"
SHIPPED = "shipped"  # the model argument's default: the model shipped as package data


@lru_cache(maxsize=1)
def shipped_model() -> RationaleModel | None:
    return load_model()


def settled_rule_label(reasoning: Reasoning) -> TaxonomyLabel | None:
    """The most specific rule hit the rationale asserts, if any."""
    for rule, m in rule_hits(reasoning.text):
        if reasoning.asserts(m.start(), m.end()):
            return TaxonomyLabel(rule.label, rule.rule_id, m.group(0))
    return None


def _model_labels(reasonings: list[Reasoning], model: RationaleModel) -> list[TaxonomyLabel]:
    best, best_p = model.best_real_class(model.probabilities(reasonings))
    version = model.version
    out = []
    for i, j in enumerate(best):
        confidence = float(np.round(best_p[i], 4))
        label = model.classes[j] if confidence >= model.floor else UNKNOWN
        out.append(TaxonomyLabel(label, None, "", method="model" if label != UNKNOWN else "none",
                                 confidence=confidence, model_version=version))
    return out


def classify_rationales(rationales: Sequence[str], model: RationaleModel | str | None = SHIPPED,
                        fallback: Fallback | None = None) -> list[TaxonomyLabel]:
    """``classify_rationale`` over many rationales, the model run once over every rule miss (None: rules only)."""
    model = shipped_model() if model == SHIPPED else model
    reasonings = [reasoning_text(r) for r in rationales]
    labels: list[TaxonomyLabel | None] = [settled_rule_label(r) for r in reasonings]
    misses = [i for i, label in enumerate(labels) if label is None]
    if model is not None and misses:
        for i, label in zip(misses, _model_labels([reasonings[i] for i in misses], model)):
            labels[i] = label
    out = [label or TaxonomyLabel(UNKNOWN, None, "", method="none", confidence=0.0) for label in labels]
    unknown = [i for i, label in enumerate(out) if label.label == UNKNOWN]
    if fallback is not None and unknown:
        for i, asked in zip(unknown, fallback([rationales[i] for i in unknown])):
            if asked:
                out[i] = TaxonomyLabel(asked, None, "", method="llm", confidence=out[i].confidence,
                                       model_version=out[i].model_version)
    return out


def classify_rationale(rationale: str) -> TaxonomyLabel:
    """The rejection class of one SKIP rationale (English or Chinese), and how it was reached."""
    return classify_rationales([rationale])[0]
