"""Skill-level train/test pools, fixed *before* any combination is sampled.

Splitting skills first means no combination can straddle the pools, so no LLM call is spent on
a query that would later be discarded (R3-Skill discarded 5,609). Assignment is stratified by
(super-domain, language) and deterministic: skills are ordered by a seeded hash of their id.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.neighbourhoods.clustered import ClusteredSkill


def split_pools(skills: Iterable[ClusteredSkill], test_fraction: float = 0.2, seed: int = 0) -> dict[str, str]:
    """Map skill_id → 'train' | 'test'. Each stratum with ≥2 skills gives at least one to each pool."""
    strata: dict[tuple, list[str]] = defaultdict(list)
    for s in skills:
        strata[(s.super_domain, s.language)].append(s.skill_id)
    pools: dict[str, str] = {}
    for members in strata.values():
        members.sort(key=lambda sid: digest(f"{seed}:{sid}"))
        n_test = int(round(len(members) * test_fraction))
        if len(members) >= 2:
            n_test = min(max(n_test, 1), len(members) - 1)
        for i, sid in enumerate(members):
            pools[sid] = "test" if i < n_test else "train"
    return pools
