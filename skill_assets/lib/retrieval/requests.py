"""Benchmark requests, the one record type every benchmark is read into, and group-aware scoring of rankings.

A request needs ``k`` skills; each is a *group* of interchangeable skills (a skill and its copies
in other repositories), and any member serves. The curated benchmark and the styles dev set
(``lib.evaluation.curated_benchmark.load_requests``, strict), every external release
(``lib.evaluation.external_benchmarks``; its ``external_queries`` rows: ``from_external_queries``) and the
pipeline's own ``benchmark_queries`` rows (``from_benchmark_queries``) all become ``Request``s, so one file
cannot pass one reader and fail another.

A set of requests is scored as the evaluation tables score theirs: ``qrels(requests)`` is their ground
truth and ``run_of(requests, rankings)`` a system's run over them, for ``core.metrics``, so the router's
figures and ``external_metrics`` count a found skill the same way.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from skill_assets.lib.core.runs import Qrels, Ranking, Run
from skill_assets.lib.core.skill_groups import Groups, singleton_groups


@dataclass(frozen=True)
class Writing:
    """How a hand-written request was written, as its file records it: the curated card counts these; no
    score reads them. Empty for the benchmarks that record none."""

    lang: str = ""
    style: str = ""
    topic: str = ""
    writer: str = ""


@dataclass(frozen=True)
class Request:
    id: str
    query: str
    groups: Groups                       # one group of interchangeable skill ids per skill the request needs
    direction: str | None = None         # skill language → query language, where the benchmark records it
    split: str = "test"
    writing: Writing = Writing()
    skill_ids: tuple[str, ...] = ()      # the ids the benchmark names that the pool holds (default: every gt id)
    unknown_skill_ids: tuple[str, ...] = ()  # the ids it names that the pool does not hold

    def __post_init__(self) -> None:
        if not self.skill_ids and not self.unknown_skill_ids:
            object.__setattr__(self, "skill_ids", self.gt)

    @property
    def k(self) -> int:
        return len(self.groups)

    @property
    def gt(self) -> tuple[str, ...]:
        """Every ground-truth id, copies included, flat."""
        return tuple(sid for group in self.groups for sid in group)

    @property
    def relevant(self) -> set[str]:
        return set(self.gt)


class UnresolvedSkillIds(ValueError):
    """Ground-truth ids the pool does not hold; the message names each id and the requests using it."""

    def __init__(self, missing: Mapping[str, list[str]], pool: str):
        self.missing = dict(missing)
        shown = "; ".join(f"{sid} (in {', '.join(users[:5])})" for sid, users in sorted(self.missing.items())[:20])
        more = f" … and {len(self.missing) - 20} more" if len(self.missing) > 20 else ""
        super().__init__(f"{len(self.missing)} curated ground-truth skill id(s) not in the pool {pool}: {shown}{more}")


def unresolved(requests: Iterable[Request], pool_ids: set[str]) -> dict[str, list[str]]:
    """Ground-truth id → ids of the requests using it, for every id the pool lacks."""
    missing: dict[str, list[str]] = {}
    for r in requests:
        for sid in r.gt:
            if sid not in pool_ids:
                missing.setdefault(sid, []).append(r.id)
    return missing


def require_in_pool(requests: Iterable[Request], pool_ids: set[str], pool: str) -> None:
    if missing := unresolved(requests, pool_ids):
        raise UnresolvedSkillIds(missing, pool)


def from_benchmark_queries(rows: Sequence[dict]) -> list[Request]:
    """``benchmark_queries`` rows as requests (each ground-truth skill its own group)."""
    return [Request(r["query_id"], r["query"], singleton_groups(r["skill_ids"]), r["direction"], r["split"])
            for r in rows]


def from_external_queries(rows: Sequence[dict]) -> list[Request]:
    """``external_queries`` rows as requests: the ground-truth groups as the benchmark was imported."""
    return [Request(r["query_id"], r["query"], tuple(map(tuple, r["skill_groups"])), r["direction"],
                    skill_ids=tuple(r["skill_ids"]), unknown_skill_ids=tuple(r["unknown_skill_ids"])) for r in rows]


def qrels(requests: Sequence[Request]) -> Qrels:
    """The requests' ground truth: each request's groups, by its id."""
    return Qrels.of([r.id for r in requests], [r.groups for r in requests])


def run_of(requests: Sequence[Request], rankings: Sequence[Ranking], version: str = "") -> Run:
    """The run of ``rankings``, one per request, in the requests' order."""
    return Run.of([r.id for r in requests], rankings, version)

