"""The labelled SKIP rationales the learned layer is fitted and scored on, and their fixed split.

Four sources, each a list of ``{"rationale", "label", "lang", ...}`` rows:
- ``curated``: the curated benchmark's 210 hand-labelled rejections (one writer, every skill set
  distinct), split by skill set;
- ``written``: rationales written by hand for this classifier (``benchmarks/rationales/<class>.jsonl``,
  about 50 per class, both languages, seven styles, plus ``unknown.jsonl``: SKIPs that give no reason,
  used to place the confidence floor), split by text;
- ``review``: reviewers' taxonomy corrections from the Label Studio loop
  (``lib/taxonomy/data/review_labels.jsonl``), always train: they are the next round's new data;
- ``heldout``: the test split and nothing else (``benchmarks/rationales/heldout_test.jsonl``, every row
  marked ``"split": "test"``): rationales written by hand after the model was final, committed before
  they were scored, and scored once (``bench/taxonomy_bench.py``). Nothing fits or tunes on them.

Curated and written rows are split by (source, class, language) stratum, ordered by a hash of the key,
so a row's split does not move when rows are added to other strata: the first 40 % of each stratum is
dev, the rest train. That 40 % is the old 15 % dev part plus the old 25 % test part, which was scored
several times while the classifier was built (so it is no held-out figure any more) and is dev now:
settings are picked and the confidence floor is calibrated on it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from skill_assets.lib.common.hashing import digest

PACKAGE = Path(__file__).resolve().parents[2]
CURATED_REJECTIONS = PACKAGE / "benchmarks" / "curated" / "rejections.jsonl"
WRITTEN_DIR = PACKAGE / "benchmarks" / "rationales"
HELDOUT_TEST = WRITTEN_DIR / "heldout_test.jsonl"
REVIEW_LABELS = Path(__file__).resolve().parent / "data" / "review_labels.jsonl"

#: share of each stratum in dev: the old test part (first by key hash) and the old dev part after it
SEEN_TEST_SHARE, DEV_SHARE = 0.25, 0.15
SPLITS = ("train", "dev", "test")


@dataclass(frozen=True)
class LabelledRationale:
    rationale: str
    label: str
    lang: str
    source: str  # curated | written | review | heldout
    key: str  # what the split hashes: the skill set (curated), the text (written), the item (review)
    style: str = ""
    split: str = "train"


def _jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _stratified(rows: list[LabelledRationale]) -> list[LabelledRationale]:
    """Each (source, label, lang) stratum: the first 25 % + 15 % by key hash → dev (the old test and dev parts)."""
    strata: dict[tuple[str, str, str], list[LabelledRationale]] = {}
    for r in rows:
        strata.setdefault((r.source, r.label, r.lang), []).append(r)
    out = []
    for members in strata.values():
        members = sorted(members, key=lambda r: digest(r.key))
        n_dev = round(SEEN_TEST_SHARE * len(members)) + round(DEV_SHARE * len(members))
        for i, r in enumerate(members):
            split = "dev" if i < n_dev else "train"
            out.append(LabelledRationale(**{**r.__dict__, "split": split}))
    return out


def curated_rationales(path: Path = CURATED_REJECTIONS) -> list[LabelledRationale]:
    return _stratified([LabelledRationale(r["rationale"], r["label"], r["lang"], "curated",
                                          "|".join(sorted(r["skills"])), style=r.get("writer", ""))
                        for r in _jsonl(path)])


def written_rationales(folder: Path = WRITTEN_DIR) -> list[LabelledRationale]:
    """The class files, stratified; a file whose rows name their split (``"split": "train"``, a later
    round of training data) keeps it, so adding one never moves an earlier row between train and dev."""
    rows = [r for path in sorted(folder.glob("*.jsonl")) if path.name != HELDOUT_TEST.name for r in _jsonl(path)]
    if any(r.get("split") not in (None, "train", "dev") for r in rows):
        raise ValueError("written rationales may name split train or dev only: the test split is heldout_test.jsonl")

    def row(r: dict) -> LabelledRationale:
        return LabelledRationale(r["rationale"], r["label"], r["lang"], "written", r["rationale"],
                                 style=r.get("style", ""), split=r.get("split") or "train")
    return _stratified([row(r) for r in rows if not r.get("split")]) + [row(r) for r in rows if r.get("split")]


def heldout_rationales(path: Path = HELDOUT_TEST) -> list[LabelledRationale]:
    """The held-out test split: every row of the file must say ``"split": "test"``."""
    rows = _jsonl(path)
    if any(r.get("split") != "test" for r in rows):
        raise ValueError(f"{path.name}: every row must be marked \"split\": \"test\"")
    return [LabelledRationale(r["rationale"], r["label"], r["lang"], "heldout", r["rationale"],
                              style=r.get("style", ""), split="test") for r in rows]


def review_rationales(path: Path = REVIEW_LABELS) -> list[LabelledRationale]:
    return [LabelledRationale(r["rationale"], r["label"], r["lang"], "review", r.get("item_id", r["rationale"]),
                              style="review")
            for r in _jsonl(path)]


def labelled_rationales() -> list[LabelledRationale]:
    """Every labelled rationale with its split, in a fixed order."""
    rows = curated_rationales() + written_rationales() + review_rationales() + heldout_rationales()
    return sorted(rows, key=lambda r: (r.source, r.split, r.label, digest(r.key)))
