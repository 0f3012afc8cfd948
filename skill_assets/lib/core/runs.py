"""Runs and qrels in the ranx sense: the one ranking type and the one ground-truth type.

- ``Ranking``: one request's skills best first, each with its score (``[(skill_id, score), ...]``);
- ``Run``: per request id, its ranking, and what produced it (``version``: a library version or weight
  fingerprints, where a caller records one). A request the run does not rank has no ranking;
- ``Qrels``: per request id, the skills it needs, each a group of interchangeable copies (``skill_groups``):
  the request needs one member of every group.

The metrics (``metrics.per_query_metrics``) score a ``Run`` against ``Qrels``, request by request in the
qrels' order; a request the run does not rank scores zero, a ranked request the qrels lack is not scored.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from skill_assets.lib.core.skill_groups import Groups

Ranking = list[tuple[str, float]]


def keyed(request_ids: Iterable[str], values: Iterable, what: str) -> dict:
    """``values`` by request id, in order; each id once, one value each."""
    ids, values = list(request_ids), list(values)
    if len(ids) != len(values):
        raise ValueError(f"{len(ids)} request ids for {len(values)} {what}")
    out = dict(zip(ids, values))
    if len(out) != len(ids):
        twice = sorted(i for i, n in Counter(ids).items() if n > 1)
        raise ValueError(f"request ids given more than once for {what}: {twice[:10]}")
    return out


def ranking_of(skill_ids: Sequence[str], scores: Sequence[float]) -> Ranking:
    """A ranking of ``skill_ids`` (best first) with their ``scores``."""
    return [(sid, float(s)) for sid, s in zip(skill_ids, scores, strict=True)]


@dataclass(frozen=True)
class Run:
    rankings: dict[str, Ranking]  # request id → its ranking, best first
    version: str = ""             # what produced it

    @classmethod
    def of(cls, request_ids: Iterable[str], rankings: Iterable[Ranking], version: str = "") -> Run:
        """The run of ``rankings``, one per request id, in the same order."""
        return cls(keyed(request_ids, rankings, "rankings"), version)

    def ids(self, request_id: str) -> list[str]:
        """The skill ids of ``request_id``'s ranking, best first (none where the run does not rank it)."""
        return [sid for sid, _ in self.rankings.get(request_id, ())]


@dataclass(frozen=True)
class Qrels:
    groups: dict[str, Groups]  # request id → one group of interchangeable skill ids per skill it needs

    @classmethod
    def of(cls, request_ids: Iterable[str], groups: Iterable[Groups]) -> Qrels:
        """The qrels of ``groups``, one per request id, in the same order."""
        return cls(keyed(request_ids, groups, "ground truths"))
