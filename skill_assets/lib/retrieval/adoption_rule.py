"""The one rule that lets a store's learned part replace the shipped default: enough data, and a dev win.

A model fitted in a store (a fusion, a selection cut, a bi-encoder, a reranker) is the newest one,
not necessarily a good one: the demo fits its fusion on a handful of generated requests and
scores 1.0 on them. So a store's part replaces the shipped default only when

- it was fitted on at least ``MIN_TRAIN_REQUESTS`` train requests,
- it was chosen on a dev split of at least ``MIN_DEV_REQUESTS`` requests disjoint from train, and
- on that dev split, over the same pool, it beats the default: the paired mean difference of
  NDCG@10 is above zero (the bootstrap interval is reported beside it, so a reader can see how
  firm the win is).

Never decided from test figures. The verdict is computed where the part is fitted (``adoption``,
in the ``router_fusion`` asset) and stored with its evidence: the counts, the dev difference and a
digest of the model's files. A stored ``adopted`` flag is never trusted on its own: a router
decides again from that evidence (``recorded_verdict``), and refuses a part whose files changed
since or that lies outside the store's ``models/`` folder, so a row edited by hand or a folder
swapped after the verdict is not used.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from skill_assets.lib.common.significance import bootstrap_interval, paired_bootstrap

MIN_TRAIN_REQUESTS = 100
MIN_DEV_REQUESTS = 50
#: the dev metric a candidate must beat the default on
DEV_METRIC = "ndcg@10"
#: where a store's models live, beside its DuckDB file; a part recorded elsewhere is not the store's
MODELS_SUBDIR = "models"


@dataclass(frozen=True)
class Verdict:
    """Whether a store's part replaces the default, and the one line that says why."""

    adopt: bool
    reason: str
    delta: float | None = None          # candidate − default on dev, mean over requests
    interval: tuple[float, float] | None = None  # 95% bootstrap interval of that difference

    def as_row(self) -> dict:
        lo, hi = self.interval or (None, None)
        return {"adopted": self.adopt, "adoption_reason": self.reason, "dev_delta_vs_default": self.delta,
                "dev_delta_low": lo, "dev_delta_high": hi}


def _counts_refusal(part: str, train_requests: int, dev_requests: int, disjoint: bool) -> Verdict | None:
    if train_requests < MIN_TRAIN_REQUESTS:
        return Verdict(False, f"{part} fitted on {train_requests} requests, needs {MIN_TRAIN_REQUESTS}")
    if not disjoint:
        return Verdict(False, f"{part} has no dev split disjoint from its train requests")
    if dev_requests < MIN_DEV_REQUESTS:
        return Verdict(False, f"{part} chosen on {dev_requests} dev requests, needs {MIN_DEV_REQUESTS}")
    return None


def judge(part: str, train_requests: int, dev_requests: int, disjoint: bool,
          paired: Callable[[], tuple[np.ndarray, np.ndarray]] | None = None) -> Verdict:
    """The verdict on one part from its data counts, then (only when those pass: scoring costs) ``paired()``:
    per-request dev ``DEV_METRIC`` of the candidate and of the default, over the same requests and pool."""
    refused = _counts_refusal(part, train_requests, dev_requests, disjoint)
    if refused is not None:
        return refused
    if paired is None:
        return Verdict(False, f"{part} has no paired dev figures against the shipped default")
    candidate, default = (np.asarray(a, dtype=float) for a in paired())
    delta, _ = paired_bootstrap(candidate, default)
    interval = bootstrap_interval(candidate - default)
    line = (f"dev {DEV_METRIC} {np.nanmean(candidate):.3f} vs default {np.nanmean(default):.3f} over {len(candidate)} "
            f"requests (difference {delta:+.3f}, 95% interval [{interval[0]:+.3f}, {interval[1]:+.3f}])")
    if not delta > 0:
        return Verdict(False, f"{part} does not beat the default: {line}", delta, interval)
    return Verdict(True, f"{part} beats the default: {line}", delta, interval)


def folder_digest(path: str | Path) -> str:
    """sha256 over a model folder's regular files (relative path and bytes, in path order; links not followed):
    what a verdict was reached on, so a folder changed after it is recognised."""
    root = Path(path)
    h = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()) if root.is_dir() else []
    for file in files:
        h.update(file.relative_to(root).as_posix().encode() + b"\0")
        with file.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        h.update(b"\0")
    return h.hexdigest()


def recorded_verdict(part: str, train_requests: int | None, dev_requests: int | None, delta: float | None,
                     path: str | None, digest: str | None, db_path: Path) -> Verdict:
    """The rule decided again from the evidence a registry row records, never from its flag: the counts, a dev
    difference above zero, a folder inside the store's ``models/`` whose files still hash to ``digest``."""
    refused = _counts_refusal(part, int(train_requests or 0), int(dev_requests or 0), True)
    if refused is not None:
        return refused
    if delta is None or not delta > 0:
        return Verdict(False, f"{part}'s recorded dev difference over the default is {delta}, not above 0")
    models = (db_path.resolve().parent / MODELS_SUBDIR).resolve()
    folder = Path(path or "").resolve()
    if not path or not folder.is_relative_to(models):
        return Verdict(False, f"{part} ({path}) is not inside the store's {MODELS_SUBDIR}/ folder")
    if not digest:
        return Verdict(False, f"{part} has no recorded digest of its files (fitted before digests were recorded); "
                              "rematerialize router_fusion to judge it")
    if folder_digest(folder) != digest:
        return Verdict(False, f"{part}'s files changed since its verdict (digest differs); rematerialize "
                              "router_fusion to judge it")
    return Verdict(True, f"{part} passed the adoption rule (dev difference {delta:+.3f})", delta)
