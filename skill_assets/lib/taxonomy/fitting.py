"""Rebuild the shipped taxonomy model from its labelled data: ``python -m skill_assets.lib.taxonomy.fitting``.

Calibration is done on dev, never on test: a model fitted on the train split alone predicts the dev
split, and on those predictions the temperature (lowest log-loss over the dev rows the rules leave to
the model) and the confidence floor are set. The floor is the one with the best dev F1 (precision =
right labels / labels given, reason-less rows that get a label counting against it; recall = right
labels / labelled rows) among the floors that keep dev coverage at or above ``MIN_COVERAGE``; below it
a label stays ``unknown``. The shipped model is then refitted on train + dev with the same settings
(those ``bench/taxonomy_tune.py`` picked on dev), temperature and floor. The test split is never
read. Everything is deterministic, so the zip written is byte for byte the committed one for the same
data; the card beside it says what it was fitted on and what dev said.
"""
from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.taxonomy.classify import UNKNOWN, settled_rule_label
from skill_assets.lib.taxonomy.labelled import LabelledRationale, labelled_rationales
from skill_assets.lib.taxonomy.model import (
    MODEL_PATH,
    ModelSettings,
    RationaleModel,
    best_real_class,
    fit_model,
    softmax,
)
from skill_assets.lib.taxonomy.settling import reasoning_text

SETTINGS = ModelSettings()
MIN_COVERAGE = 0.90
TEMPERATURES = np.round(np.arange(0.2, 3.01, 0.05), 2)
FLOORS = np.round(np.arange(0.0, 0.96, 0.01), 2)
CARD_PATH = MODEL_PATH.with_name("MODEL_CARD.md")


@dataclass(frozen=True)
class FloorScore:
    """What one floor does on dev."""

    floor: float
    coverage: float  # labelled rows given a real label
    precision: float  # right labels / labels given (reason-less rows included)
    recall: float  # right labels / labelled rows (the micro-F1)
    f1: float
    unknown_kept: float  # reason-less rows left unknown


@dataclass
class DevCalibration:
    """The dev split as the model fitted on train sees it: one entry per dev row."""

    gold: list[str]
    rule: list[str | None]  # the settled rule's class, or None (the model's turn)
    probs: np.ndarray  # (rows, classes), temperature-scaled
    classes: list[str]

    def labels(self, floor: float) -> list[str]:
        best, best_p = best_real_class(self.classes, self.probs)
        return [r if r else self.classes[j] if best_p[i] >= floor else UNKNOWN
                for i, (r, j) in enumerate(zip(self.rule, best))]

    def score(self, floor: float) -> FloorScore:
        pred = self.labels(floor)
        labelled = [(g, p) for g, p in zip(self.gold, pred) if g != UNKNOWN]
        reasonless = [p for g, p in zip(self.gold, pred) if g == UNKNOWN]
        right = sum(g == p for g, p in labelled)
        given = sum(p != UNKNOWN for p in pred)
        precision = right / given if given else 0.0
        recall = right / len(labelled) if labelled else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return FloorScore(float(floor), round(sum(p != UNKNOWN for _, p in labelled) / max(1, len(labelled)), 4),
                          round(precision, 4), round(recall, 4), round(f1, 4),
                          round(sum(p == UNKNOWN for p in reasonless) / len(reasonless), 4) if reasonless else 1.0)


def _temperature(logits: np.ndarray, gold: np.ndarray) -> float:
    def nll(t: float) -> float:
        p = softmax(logits / t)[np.arange(len(gold)), gold]
        return float(-np.log(np.clip(p, 1e-12, None)).mean())
    return float(min(TEMPERATURES, key=nll))


def calibrate_on_dev(train: list[LabelledRationale], dev: list[LabelledRationale],
                     settings: ModelSettings = SETTINGS) -> tuple[float, DevCalibration]:
    """Fit on ``train`` (reason-less rows as the ``unknown`` class), predict ``dev``: the temperature and the
    dev predictions at it."""
    model = fit_model([reasoning_text(r.rationale) for r in train], [r.label for r in train], settings)
    reasonings = [reasoning_text(r.rationale) for r in dev]
    rule = [h.label if (h := settled_rule_label(x)) else None for x in reasonings]
    logits = model.logits(reasonings)
    misses = [i for i, r in enumerate(dev) if rule[i] is None and r.label != UNKNOWN]
    temperature = _temperature(logits[misses], np.array([model.classes.index(dev[i].label) for i in misses]))
    return temperature, DevCalibration([r.label for r in dev], rule, softmax(logits / temperature), model.classes)


def choose_floor(dev: DevCalibration, min_coverage: float = MIN_COVERAGE) -> FloorScore:
    """The floor with the best dev F1 among those keeping dev coverage >= ``min_coverage`` (ties: the lowest)."""
    best: FloorScore | None = None
    for floor in FLOORS:
        s = dev.score(float(floor))
        if s.coverage < min_coverage:
            break
        if best is None or s.f1 > best.f1:
            best = s
    assert best is not None, "no floor keeps the coverage"
    return best


def fit_shipped(rows: list[LabelledRationale], settings: ModelSettings = SETTINGS) -> tuple[RationaleModel, dict]:
    """The model to ship (fitted on train + dev, temperature and floor set on dev) and the figures for its card."""
    train = [r for r in rows if r.split == "train"]
    dev = [r for r in rows if r.split == "dev"]
    fitting = [r for r in rows if r.split in ("train", "dev")]
    temperature, calibration = calibrate_on_dev(train, dev, settings)
    chosen = choose_floor(calibration)
    model = fit_model([reasoning_text(r.rationale) for r in fitting], [r.label for r in fitting], settings)
    model.temperature, model.floor = temperature, chosen.floor
    model.fitted_on = digest("\n".join(f"{r.source}\t{r.label}\t{r.rationale}" for r in fitting))[:12]
    misses = np.array([r is None for r in calibration.rule])
    gold = np.array([calibration.classes.index(g) if g != UNKNOWN else -1 for g in calibration.gold])
    model_rows = misses & (gold >= 0)
    best, best_p = best_real_class(calibration.classes, calibration.probs)
    ruled = ~misses & (gold >= 0)
    rule_right = [calibration.rule[i] == calibration.gold[i] for i in np.flatnonzero(ruled)]
    figures = {"rows": len(fitting), "train": len(train), "dev": len(dev),
               "counts": Counter((r.source, r.label, r.lang, r.split) for r in fitting),
               "settings": asdict(settings), "temperature": temperature, "floor": chosen.floor, "chosen": chosen,
               "floors": [calibration.score(f) for f in (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7) if f != chosen.floor]
               + [chosen],
               "dev_rule_share": round(float(ruled.sum() / max(1, (gold >= 0).sum())), 4),
               "dev_rule_accuracy": round(float(np.mean(rule_right)), 4) if rule_right else None,
               "reliability": _reliability(best_p[model_rows], best[model_rows] == gold[model_rows])}
    return model, figures


def _reliability(confidence: np.ndarray, correct: np.ndarray) -> list[tuple[str, int, float, float]]:
    """(bin, n, mean confidence, accuracy) of the dev predictions: how calibrated they are."""
    bins = [(0.0, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 1.01)]
    out = []
    for lo, hi in bins:
        sel = (confidence >= lo) & (confidence < hi)
        if sel.any():
            out.append((f"{lo:.1f}–{min(hi, 1.0):.1f}", int(sel.sum()), round(float(confidence[sel].mean()), 3),
                        round(float(correct[sel].mean()), 3)))
    return out


def model_card(model: RationaleModel, figures: dict) -> str:
    """The card that ships beside the model: data, settings, dev calibration, how to rebuild."""
    by_source, by_class = Counter(), Counter()
    for (source, label, lang, split), n in figures["counts"].items():
        by_source[(source, split, lang)] += n
        by_class[label] += n
    chosen = figures["chosen"]
    lines = [
        "# Rejection-taxonomy model card", "",
        "_Written by `python -m skill_assets.lib.taxonomy.fitting`; do not edit by hand._", "",
        f"- model version `{model.version}`, fitted on data `{model.fitted_on}`",
        "- character n-gram TF-IDF (`char_wb`) + multinomial logistic regression (scikit-learn), behind the "
        "bilingual rules: it labels only what no settled rule hit claims",
        f"- settings: {figures['settings']}",
        f"- temperature {model.temperature} and confidence floor {model.floor}, both set on the dev split's "
        f"predictions by a model fitted on train alone (the floor: best dev F1 with dev coverage ≥ {MIN_COVERAGE}); "
        "below the floor the label stays `unknown`. The shipped model is refitted on train + dev with them.",
        "", "## Fitted on", "",
        f"The train ({figures['train']}) and dev ({figures['dev']}) splits of the labelled rationales "
        f"({figures['rows']} rows; the held-out test split, `benchmarks/rationales/heldout_test.jsonl`, is never "
        "read): the curated benchmark's hand-labelled rejections (`benchmarks/curated/rejections.jsonl`), the "
        "rationales written by hand for this model (`benchmarks/rationales/`) and reviewers' corrections "
        "(`lib/taxonomy/data/review_labels.jsonl`). `unknown` rows (SKIPs that give no reason) are the model's ninth class, "
        "never a label: its probability is mass no real class gets, and they count against precision where the floor "
        "is placed. "
        "Dev holds the old test part, scored several times while the classifier was built.",
        "", "| source | split | en | zh |", "|---|---|---|---|"]
    for source, split in sorted({(s, p) for s, p, _ in by_source}):
        lines.append(f"| {source} | {split} | {by_source[(source, split, 'en')]} | {by_source[(source, split, 'zh')]} |")
    lines += ["", "| class | rows |", "|---|---|"] + [f"| {c} | {n} |" for c, n in sorted(by_class.items())]
    lines += ["", "## The floor on dev (model fitted on train)", "",
              f"Rules claim {figures['dev_rule_share']:.1%} of the labelled dev rows at accuracy "
              f"{figures['dev_rule_accuracy']}; the model labels the rest when its confidence reaches the floor.", "",
              "| floor | coverage | precision | recall (micro-F1) | F1 | reason-less kept unknown |",
              "|---|---|---|---|---|---|"]
    for f in sorted(figures["floors"], key=lambda x: x.floor):
        mark = " (chosen)" if f.floor == chosen.floor else ""
        lines.append(f"| {f.floor}{mark} | {f.coverage} | {f.precision} | {f.recall} | {f.f1} | {f.unknown_kept} |")
    lines += ["", "Reliability of the model's dev predictions (rows the rules leave):", "",
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
