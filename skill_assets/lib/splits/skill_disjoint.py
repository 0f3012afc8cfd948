"""Skill-disjoint train/dev/test assignment for hand-written or imported benchmarks.

Requests that share any acceptable skill id (interchangeable copies included) form one component,
and a component goes whole to one split: no ground-truth skill of a test request is then ground
truth of a train or dev request, the guarantee the pipeline's own skill pools give generated
queries. Components are placed largest first (ties broken by a seeded shuffle) into the split that
keeps every stratum (each direction, each k) closest to its target share, so small strata such as
zh2en or k = 3 are not left out of a split by chance.
"""
from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Iterable

TARGET_SHARES: dict[str, float] = {"train": 0.6, "dev": 0.1, "test": 0.3}


def _components(groups_per_request: dict[str, list[list[str]]]) -> dict[str, str]:
    """Request id -> component root, joining requests through every skill id they list."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for groups in groups_per_request.values():
        ids = [s for g in groups for s in g]
        for s in ids[1:]:
            parent[find(s)] = find(ids[0])
        find(ids[0])
    return {rid: find(groups[0][0]) for rid, groups in groups_per_request.items()}


def assign_splits(requests: Iterable[dict], targets: dict[str, float] = TARGET_SHARES,
                  seed: int = 20261201) -> dict[str, str]:
    """Request id -> split, for requests with ``id``, ``direction``, ``k`` and ``gt_groups``."""
    requests = list(requests)
    root_of = _components({r["id"]: r["gt_groups"] for r in requests})
    members: dict[str, list[dict]] = defaultdict(list)
    for r in requests:
        members[root_of[r["id"]]].append(r)

    def strata(r: dict) -> tuple[str, str]:
        return r["direction"], f"k{r['k']}"

    total = Counter(x for r in requests for x in strata(r))
    keys = sorted(total)  # a fixed summation order: ties between splits must not depend on float rounding
    have = {s: Counter() for s in targets}

    def deviation(after: dict[str, Counter]) -> float:
        return sum((after[s][x] / total[x] - targets[s]) ** 2 for s in targets for x in keys)

    rng = random.Random(seed)
    split_of_root: dict[str, str] = {}
    for root in sorted(members, key=lambda c: (-len(members[c]), rng.random())):
        mix = Counter(x for r in members[root] for x in strata(r))
        best = min(targets, key=lambda s: deviation({t: have[t] + mix if t == s else have[t] for t in targets}))
        have[best] += mix
        split_of_root[root] = best
    return {rid: split_of_root[root] for rid, root in root_of.items()}
