"""Benchmark requests a router is fitted and judged on, and group-aware scoring of its rankings.

A request needs ``k`` skills; each is a *group* of interchangeable skills (a skill and its copies
in other repositories), and any member serves. Two sources give requests:

- the curated benchmark's JSON lines ``{"id","query","lang","direction","k","gt","gt_groups","style","split"}``
  (``read_requests``), whose skill ids are folder paths under the shared corpus;
- the pipeline's own ``benchmark_queries`` rows (one group per ground-truth skill).

Scoring collapses each ranking onto the groups exactly as the evaluation graph does
(``lib.evaluation.skill_groups``: a member stands for its group, later copies are dropped), so the
router's figures and ``external_metrics`` count a found skill the same way.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from skill_assets.lib.common.jsonl import json_objects
from skill_assets.lib.common.metrics import mean_metrics, per_query_metrics
from skill_assets.lib.evaluation.skill_groups import collapse_rankings


@dataclass(frozen=True)
class Request:
    id: str
    query: str
    direction: str
    k: int
    groups: tuple[tuple[str, ...], ...]   # one group per required skill; any member serves
    split: str

    @property
    def relevant(self) -> set[str]:
        return {sid for g in self.groups for sid in g}


def read_requests(path: str | Path) -> list[Request]:
    """The curated benchmark's requests; a line without ``gt_groups`` makes one group per ``gt`` id."""
    out = []
    for where, rec in json_objects(Path(path)):
        groups = rec.get("gt_groups") or [[sid] for sid in rec["gt"]]
        if not groups or not all(groups):
            raise ValueError(f"{where}: a request needs at least one non-empty ground-truth group")
        out.append(Request(str(rec["id"]), rec["query"], rec["direction"], int(rec.get("k") or len(groups)),
                           tuple(tuple(g) for g in groups), rec.get("split", "test")))
    return out


def requests_from_benchmark_queries(rows: Sequence[dict]) -> list[Request]:
    """``benchmark_queries`` rows as requests (each ground-truth skill its own group)."""
    return [Request(r["query_id"], r["query"], r["direction"], int(r["k"]), tuple((sid,) for sid in r["skill_ids"]),
                    r["split"]) for r in rows]


def group_metrics(rankings: Sequence[Sequence[str]], requests: Sequence[Request]) -> dict[str, np.ndarray]:
    """Per-request metrics (``per_query_metrics``) with ground-truth groups as the relevant units."""
    return per_query_metrics(*collapse_rankings(rankings, [q.groups for q in requests]))


def mean_group_metrics(rankings: Sequence[Sequence[str]], requests: Sequence[Request]) -> dict[str, float]:
    return mean_metrics(group_metrics(rankings, requests))
