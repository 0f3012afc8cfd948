"""The labelled SKIP rationales the learned layer is fitted and scored on, and their fixed split.

Three sources, each a list of ``{"rationale", "label", "lang", ...}`` rows:
- ``curated``: the curated benchmark's 210 hand-labelled rejections (one writer, every skill set
  distinct), split by skill set;
- ``written``: rationales written by hand for this classifier (``benchmarks/rationales/<class>.jsonl``,
  about 50 per class, both languages, seven styles, plus ``unknown.jsonl``: SKIPs that give no reason,
  used to place the confidence floor), split by text;
- ``review``: reviewers' taxonomy corrections from the Label Studio loop
  (``lib/taxonomy/data/review_labels.jsonl``), always train: they are the next round's new data.

The split is stratified by (source, class, language) and ordered by a hash of the key, so it does not
move when rows are added to other strata, and every class has test rows in both languages.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from skill_assets.lib.common.hashing import digest

PACKAGE = Path(__file__).resolve().parents[2]
CURATED_REJECTIONS = PACKAGE / "benchmarks" / "curated" / "rejections.jsonl"
WRITTEN_DIR = PACKAGE / "benchmarks" / "rationales"
REVIEW_LABELS = Path(__file__).resolve().parent / "data" / "review_labels.jsonl"

#: share of each stratum held out for the single final score, and for picking settings
TEST_SHARE, DEV_SHARE = 0.25, 0.15
SPLITS = ("train", "dev", "test")


@dataclass(frozen=True)
class LabelledRationale:
    rationale: str
    label: str
    lang: str
    source: str  # curated | written | review
    key: str  # what the split hashes: the skill set (curated), the text (written), the item (review)
    style: str = ""
    split: str = "train"


def _jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _stratified(rows: list[LabelledRationale]) -> list[LabelledRationale]:
    """Each (source, label, lang) stratum: the first quarter by key hash → test, the next 15 % → dev."""
    strata: dict[tuple[str, str, str], list[LabelledRationale]] = {}
    for r in rows:
        strata.setdefault((r.source, r.label, r.lang), []).append(r)
    out = []
    for members in strata.values():
        members = sorted(members, key=lambda r: digest(r.key))
        n_test, n_dev = round(TEST_SHARE * len(members)), round(DEV_SHARE * len(members))
        for i, r in enumerate(members):
            split = "test" if i < n_test else "dev" if i < n_test + n_dev else "train"
            out.append(LabelledRationale(**{**r.__dict__, "split": split}))
    return out


def curated_rationales(path: Path = CURATED_REJECTIONS) -> list[LabelledRationale]:
    return _stratified([LabelledRationale(r["rationale"], r["label"], r["lang"], "curated",
                                          "|".join(sorted(r["skills"])), style=r.get("writer", ""))
                        for r in _jsonl(path)])


def written_rationales(folder: Path = WRITTEN_DIR) -> list[LabelledRationale]:
    return _stratified([LabelledRationale(r["rationale"], r["label"], r["lang"], "written", r["rationale"],
                                          style=r.get("style", ""))
                        for path in sorted(folder.glob("*.jsonl")) for r in _jsonl(path)])


def review_rationales(path: Path = REVIEW_LABELS) -> list[LabelledRationale]:
    return [LabelledRationale(r["rationale"], r["label"], r["lang"], "review", r.get("item_id", r["rationale"]),
                              style="review")
            for r in _jsonl(path)]


def labelled_rationales() -> list[LabelledRationale]:
    """Every labelled rationale with its split, in a fixed order."""
    rows = curated_rationales() + written_rationales() + review_rationales()
    return sorted(rows, key=lambda r: (r.source, r.split, r.label, digest(r.key)))
