"""A skill as the pool split and the combination sampler see it: its language and its neighbourhoods.

The split stratifies by (super-domain, language) and the sampler draws within a sub-cluster or a
super-domain of one language, so neither needs a skill's text; both used to take the store's rows as
dicts and read their keys. ``clustered_skills`` is the one place such a row (``skill_pools`` or the
``skills`` ⋈ ``skill_clusters`` join) becomes a ``ClusteredSkill``. It has its own module because the
clustering module that computes the labels imports scikit-learn, which neither reader needs.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ClusteredSkill:
    skill_id: str
    language: str      # en / zh: a combination's skills share the direction's source language
    sub_cluster: int   # the neighbourhood of a 2-skill combination
    super_domain: int  # the neighbourhood of a 3-skill combination, and the split's stratum with the language


def clustered_skills(rows: Iterable[Mapping]) -> list[ClusteredSkill]:
    """``ClusteredSkill``s of rows keyed as ``skill_pools`` is, in the rows' order; other keys (``pool``) are left
    out."""
    return [ClusteredSkill(r["skill_id"], r["language"], r["sub_cluster"], r["super_domain"]) for r in rows]
