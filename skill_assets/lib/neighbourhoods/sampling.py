"""Sample 1–3-skill combinations from hard, nearby neighbourhoods.

k=1: any skill; k=2: two skills of one sub-cluster; k=3: three skills of one super-domain.
A combination never leaves its pool and all its skills share the direction's source language.
Sampling is without replacement over combinations and deterministic by seed.
"""
from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from skill_assets.lib.common.language import DIRECTIONS
from skill_assets.lib.neighbourhoods.clustered import ClusteredSkill

STYLES = ("task_direct", "scene", "role_setup", "constraint", "multi_step", "debug")


@dataclass(frozen=True)
class SamplingPlan:
    """How many combinations to draw per (pool, k) for every direction."""

    counts: dict[str, dict[int, int]] = field(default_factory=lambda: {
        "train": {1: 4, 2: 3, 3: 2},
        "test": {1: 2, 2: 2, 3: 1},
    })
    directions: tuple[str, ...] = tuple(DIRECTIONS)
    seed: int = 0
    max_attempts_factor: int = 50


def _neighbourhood_key(skill: ClusteredSkill, k: int) -> str:
    if k == 1:
        return "any"
    if k == 2:
        return f"sub_cluster:{skill.sub_cluster}"
    return f"super_domain:{skill.super_domain}"


def sample_combinations(skills: Sequence[ClusteredSkill], pools: Mapping[str, str], plan: SamplingPlan
                        ) -> tuple[list[dict], list[dict]]:
    """Return (combinations, shortfalls); a shortfall row says where fewer sets exist than asked.

    ``pools``: each skill's pool by id, as ``split_pools`` assigns them."""
    rng = random.Random(plan.seed)
    combos: list[dict] = []
    shortfalls: list[dict] = []
    seen: set[tuple[str, ...]] = set()
    for pool, per_k in plan.counts.items():
        for direction in plan.directions:
            src_lang, _ = DIRECTIONS[direction]
            eligible = sorted((s for s in skills if pools[s.skill_id] == pool and s.language == src_lang),
                              key=lambda s: s.skill_id)
            for k, wanted in sorted(per_k.items()):
                groups: dict[str, list[ClusteredSkill]] = defaultdict(list)
                for s in eligible:
                    groups[_neighbourhood_key(s, k)].append(s)
                viable = sorted(key for key, members in groups.items() if len(members) >= k)
                drawn = 0
                for _ in range(wanted * plan.max_attempts_factor):
                    if drawn == wanted or not viable:
                        break
                    hood = rng.choice(viable)
                    members = rng.sample(groups[hood], k)
                    ids = tuple(sorted(m.skill_id for m in members))
                    if (direction, *ids) in seen:
                        continue
                    seen.add((direction, *ids))
                    combos.append({
                        "combination_id": f"{pool}-{direction}-k{k}-{drawn:04d}",
                        "pool": pool, "direction": direction, "k": k,
                        "skill_ids": list(ids), "neighbourhood": hood,
                        "style": STYLES[rng.randrange(len(STYLES))],
                    })
                    drawn += 1
                if drawn < wanted:
                    shortfalls.append({"pool": pool, "direction": direction, "k": k,
                                       "wanted": wanted, "drawn": drawn})
    return combos, shortfalls
