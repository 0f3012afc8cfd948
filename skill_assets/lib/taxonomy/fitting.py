"""Rebuild the shipped taxonomy model from its labelled data: ``python -m skill_assets.lib.taxonomy.fitting``.

Fits on the train and dev splits of ``labelled.labelled_rationales()`` (never test), with the
settings ``bench/taxonomy_tune.py`` picked on dev. Five folds over those rows give out-of-fold
probabilities, on which the temperature (lowest log-loss) and the confidence floor are set: the
floor maximises accuracy over the rows the rules leave plus the reason-less ``unknown`` rows,
among floors that keep coverage of the labelled ones at or above ``MIN_COVERAGE``. Everything is
deterministic, so the zip written is byte for byte the committed one for the same data; the card
beside it says what it was fitted on.
"""
from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import asdict
from pathlib import Path

import numpy as np

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.taxonomy.classify import UNKNOWN, settled_rule_label
from skill_assets.lib.taxonomy.labelled import LabelledRationale, labelled_rationales
from skill_assets.lib.taxonomy.model import MODEL_PATH, ModelSettings, RationaleModel, fit_model, softmax
from skill_assets.lib.taxonomy.settling import reasoning_text

SETTINGS = ModelSettings()
FOLDS = 5
MIN_COVERAGE = 0.92
TEMPERATURES = np.round(np.arange(0.2, 3.01, 0.05), 2)
FLOORS = np.round(np.arange(0.0, 0.81, 0.01), 2)
CARD_PATH = MODEL_PATH.with_name("MODEL_CARD.md")


def _out_of_fold_logits(rows: list[LabelledRationale], settings: ModelSettings) -> tuple[np.ndarray, list[str]]:
    reasonings = [reasoning_text(r.rationale) for r in rows]
    order = sorted(range(len(rows)), key=lambda i: digest(rows[i].key))
    fold = {i: n % FOLDS for n, i in enumerate(order)}
    logits, classes = np.zeros((len(rows), 0)), []
    for k in range(FOLDS):
        train = [i for i in range(len(rows)) if fold[i] != k]
        held = [i for i in range(len(rows)) if fold[i] == k]
        model = fit_model([reasonings[i] for i in train], [rows[i].label for i in train], settings)
        if not classes:
            classes, logits = model.classes, np.zeros((len(rows), len(model.classes)))
        logits[held] = model.logits([reasonings[i] for i in held])
    return logits, classes


def _temperature(logits: np.ndarray, gold: np.ndarray) -> float:
    def nll(t: float) -> float:
        p = softmax(logits / t)[np.arange(len(gold)), gold]
        return float(-np.log(np.clip(p, 1e-12, None)).mean())
    return float(min(TEMPERATURES, key=nll))


def _floor(confidence: np.ndarray, correct: np.ndarray, ruled: int, n_labelled: int,
           unknown_confidence: np.ndarray) -> float:
    """Best accuracy over the rule misses and the reason-less rows, coverage of the labelled rows permitting."""
    best, best_score = 0.0, -1.0
    for floor in FLOORS:
        kept = confidence >= floor
        if n_labelled and (ruled + kept.sum()) / n_labelled < MIN_COVERAGE:
            break
        score = (correct & kept).sum() + (unknown_confidence < floor).sum()
        if score > best_score:
            best, best_score = float(floor), float(score)
    return best


def fit_shipped(rows: list[LabelledRationale], settings: ModelSettings = SETTINGS) -> tuple[RationaleModel, dict]:
    """The model to ship, fitted on ``rows``' train and dev parts, and the figures for its card."""
    fitting = [r for r in rows if r.split in ("train", "dev")]
    labelled = [r for r in fitting if r.label != UNKNOWN]
    reasonless = [r for r in fitting if r.label == UNKNOWN]
    logits, classes = _out_of_fold_logits(labelled, settings)
    gold = np.array([classes.index(r.label) for r in labelled])
    temperature = _temperature(logits, gold)
    probs = softmax(logits / temperature)
    ruled = [settled_rule_label(reasoning_text(r.rationale)) for r in labelled]
    miss = np.array([h is None for h in ruled])
    model = fit_model([reasoning_text(r.rationale) for r in labelled], [r.label for r in labelled], settings)
    model.temperature = temperature
    reasonless_misses = [reasoning_text(r.rationale) for r in reasonless
                         if settled_rule_label(reasoning_text(r.rationale)) is None]
    unknown_conf = model.probabilities(reasonless_misses).max(axis=1) if reasonless_misses else np.zeros(0)
    model.floor = _floor(probs[miss].max(axis=1), (probs[miss].argmax(axis=1) == gold[miss]), int((~miss).sum()),
                         len(labelled), unknown_conf)
    counts = Counter((r.source, r.label, r.lang) for r in fitting)
    model.fitted_on = digest("\n".join(f"{r.source}\t{r.label}\t{r.rationale}" for r in fitting))[:12]
    oof_ok = probs.argmax(axis=1) == gold
    figures = {"rows": len(fitting), "labelled": len(labelled), "reasonless": len(reasonless),
               "counts": counts, "settings": asdict(settings), "temperature": temperature, "floor": model.floor,
               "rule_share": round(float((~miss).mean()), 4),
               "rule_accuracy": round(float(np.mean([h.label == r.label for h, r in zip(ruled, labelled) if h])), 4)
               if (~miss).any() else None,
               "oof_model_accuracy_on_rule_misses": round(float(oof_ok[miss].mean()), 4) if miss.any() else None,
               "reliability": _reliability(probs.max(axis=1), oof_ok)}
    return model, figures


def _reliability(confidence: np.ndarray, correct: np.ndarray) -> list[tuple[str, int, float, float]]:
    """(bin, n, mean confidence, accuracy) of the out-of-fold predictions: how calibrated they are."""
    bins = [(0.0, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 1.01)]
    out = []
    for lo, hi in bins:
        sel = (confidence >= lo) & (confidence < hi)
        if sel.any():
            out.append((f"{lo:.1f}–{min(hi, 1.0):.1f}", int(sel.sum()), round(float(confidence[sel].mean()), 3),
                        round(float(correct[sel].mean()), 3)))
    return out


def model_card(model: RationaleModel, figures: dict) -> str:
    """The card that ships beside the model: data, settings, calibration, how to rebuild."""
    by_source = Counter()
    for (source, _, lang), n in figures["counts"].items():
        by_source[(source, lang)] += n
    by_class = Counter()
    for (_, label, _), n in figures["counts"].items():
        by_class[label] += n
    lines = [
        "# Rejection-taxonomy model card", "",
        "_Written by `python -m skill_assets.lib.taxonomy.fitting`; do not edit by hand._", "",
        f"- model version `{model.version}`, fitted on data `{model.fitted_on}`",
        "- character n-gram TF-IDF (`char_wb`) + multinomial logistic regression (scikit-learn), behind the "
        "bilingual rules: it labels only what no settled rule hit claims",
        f"- settings: {figures['settings']}",
        f"- temperature {model.temperature} (lowest out-of-fold log-loss); confidence floor {model.floor} "
        f"(below it the label stays `unknown`; best out-of-fold accuracy with coverage ≥ {MIN_COVERAGE})",
        "", "## Fitted on", "",
        f"The train and dev splits of the labelled rationales ({figures['rows']} rows; the test split is never "
        "seen): the curated benchmark's hand-labelled rejections (`benchmarks/curated/rejections.jsonl`), the "
        "rationales written by hand for this model (`benchmarks/rationales/`) and reviewers' corrections "
        "(`lib/taxonomy/data/review_labels.jsonl`). `unknown` rows (SKIPs that give no reason) only place the floor.",
        "", "| source | en | zh |", "|---|---|---|"]
    for source in sorted({s for s, _ in by_source}):
        lines.append(f"| {source} | {by_source[(source, 'en')]} | {by_source[(source, 'zh')]} |")
    lines += ["", "| class | rows |", "|---|---|"] + [f"| {c} | {n} |" for c, n in sorted(by_class.items())]
    lines += ["", "## Out-of-fold calibration (5 folds over the fitted rows)", "",
              f"Rules claim {figures['rule_share']:.1%} of the labelled rows at accuracy {figures['rule_accuracy']}; "
              f"on the rest the model's out-of-fold accuracy is {figures['oof_model_accuracy_on_rule_misses']}.", "",
              "| confidence | n | mean confidence | accuracy |", "|---|---|---|---|"]
    lines += [f"| {b} | {n} | {c} | {a} |" for b, n, c, a in figures["reliability"]]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=MODEL_PATH)
    args = parser.parse_args()
    model, figures = fit_shipped(labelled_rationales())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(model.to_bytes())
    args.out.with_name("MODEL_CARD.md").write_text(model_card(model, figures), encoding="utf-8")
    print(f"{args.out}: version {model.version}, temperature {model.temperature}, floor {model.floor}")


if __name__ == "__main__":
    main()
