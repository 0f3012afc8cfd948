"""Two label sets over interchangeable copies, put on common ground before they are compared.

A hand-written benchmark labels each required skill as a group: the skill and every copy that
serves the same part of the request (forks, mirrors, translations). Two people may list different
copies of the same skill; that is agreement, not a correction. Groups of the two label sets that
share a member are one required skill; each is named by the first member of the first label
set's group (else the second's), so the review loop sees plain skill ids.
"""
from __future__ import annotations


def unify_copy_groups(first: list[list[str]], second: list[list[str]]) -> tuple[list[str], list[str], set[str]]:
    """(first's skills, second's skills, every member of any group) with shared groups under one name."""
    groups = [(0, g) for g in first] + [(1, g) for g in second]
    parent = list(range(len(groups)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(groups)):
        for j in range(i):
            if set(groups[i][1]) & set(groups[j][1]):
                parent[root(i)] = root(j)
    name = {}
    for i, (_, members) in enumerate(groups):  # first label set's groups come first, so they name the unit
        name.setdefault(root(i), members[0])
    chosen = ([], [])
    for i, (side, _) in enumerate(groups):
        if name[root(i)] not in chosen[side]:
            chosen[side].append(name[root(i)])
    return chosen[0], chosen[1], {m for _, g in groups for m in g}
