"""A training query: what a model trains on, what picks its checkpoint, and what negatives are mined for.

The pipeline's ``benchmark_queries`` rows (``training_queries``), the curated benchmark's requests
(``curated_training``) and the shipped embedder's request files (``router/shipped_embedder``) all become
``TrainingQuery``s, so the trainer reads one shape instead of dicts whose keys each caller had to know.
``Request``, the benchmarks' record, is not it: a training query carries its SKIP partners, and the order of
its ``skill_ids`` is the trainer's (the shipped embedder puts the skill a request was written for first).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from skill_assets.lib.core.skill_groups import Groups, singleton_groups


@dataclass(frozen=True)
class TrainingQuery:
    id: str
    query: str
    skill_ids: tuple[str, ...]           # the ground truth the embedder draws each example's positive from
    skip_partners: tuple[str, ...] = ()  # skills judged not to fit: the reranker's label 1, ablation B's negative
    #: interchangeable copies, one group per skill the request needs (the curated splits); () where none are named
    groups: Groups = ()
    direction: str | None = None
    k: int = 0                           # set size: control D swaps SKIP partners within (direction, k)

    @property
    def scored_groups(self) -> Groups:
        """The groups a held-out ranking is scored on, as the evaluation stage scores it: each skill alone where
        the query names no copies."""
        return self.groups or singleton_groups(self.skill_ids)


def training_queries(rows: Iterable[Mapping]) -> list[TrainingQuery]:
    """``TrainingQuery``s of rows keyed as ``benchmark_queries`` is, in the rows' order: the one place such a row
    becomes one."""
    return [TrainingQuery(r["query_id"], r["query"], tuple(r["skill_ids"]), tuple(r["skip_partners"]),
                          direction=r["direction"], k=r["k"]) for r in rows]
