"""Ground truth as groups of interchangeable skills, and rankings collapsed onto those groups.

A real corpus holds copies of one skill: forks, mirrors, translations, near-identical versions.
A hand-written request lists one group per skill it needs, each group holding every copy that
serves that part equally well. A router that returns a copy has found the skill, and a router
that returns three copies of one group has found one skill, not three. So before any metric,
each ranking is collapsed: a member of a group stands for its group (named by the group's first
id), later members of an already-seen group are dropped, every other skill keeps its place.
Metrics then see one relevant item per group, and a query whose groups are all single skills
is scored exactly as before.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence

Groups = tuple[tuple[str, ...], ...]


def singleton_groups(skill_ids: Iterable[str]) -> Groups:
    """Every skill its own group: the ground truth of a benchmark that names no copies."""
    return tuple((sid,) for sid in dict.fromkeys(skill_ids))


def group_labels(groups: Groups) -> set[str]:
    """The relevant items after collapsing: each group's first id."""
    return {group[0] for group in groups}


def collapse_ranking(ranking: Sequence[str], groups: Groups) -> list[str]:
    """``ranking`` with each group member replaced by its group's first id, keeping only its first occurrence."""
    label = {sid: group[0] for group in groups for sid in group}
    seen: set[str] = set()
    out = []
    for sid in ranking:
        item = label.get(sid, sid)
        if item in seen:
            continue
        seen.add(item)
        out.append(item)
    return out


def with_identical_copies(groups: Groups, document_key: Mapping[str, Hashable]) -> Groups:
    """Each group extended by every pool skill whose document is identical to one of its members.

    ``document_key`` maps a pool skill id to what a system reads of it (e.g. the normalised name,
    description and body). Identical documents tie for every system, so which of them a ranking
    shows first is arbitrary; a copy the writer did not list must not cost the system a hit.
    """
    by_key: dict[Hashable, list[str]] = {}
    for sid, key in document_key.items():
        by_key.setdefault(key, []).append(sid)
    return tuple(tuple(dict.fromkeys([*group, *(copy for sid in group if sid in document_key
                                                for copy in sorted(by_key[document_key[sid]]))]))
                 for group in groups)


def mapped_groups(groups: Groups, kept_of: Callable[[str], str]) -> Groups:
    """Groups in another id space (e.g. raw ids → the pipeline's kept skills), members deduplicated in order.

    Groups that come to share a member are merged into the first of them: in that id space they
    are one skill (the dedup folded them together), and one ranked item cannot stand for two groups.
    """
    merged: list[list[str]] = []
    for group in groups:
        ids = list(dict.fromkeys(kept_of(sid) for sid in group))
        overlapping = [m for m in merged if set(m) & set(ids)]
        if not overlapping:
            merged.append(ids)
            continue
        first = overlapping[0]
        for other in [*overlapping[1:], ids]:
            first.extend(sid for sid in other if sid not in first)
        merged = [m for m in merged if m is first or m not in overlapping]
    return tuple(tuple(m) for m in merged)
