"""The one result shape of routing: a request's ranking (each skill with its signals' scores) and what to load.

``Fused`` is the fusion's ordering of one request's candidates, from which a ranking is read.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from skill_assets.lib.retrieval.fusion import Candidates
from skill_assets.lib.core.runs import Ranking


@dataclass(frozen=True)
class RankedSkill:
    skill_id: str
    score: float
    signals: dict[str, float]   # each signal's own score for this skill, and the fused score

    def as_dict(self) -> dict:
        return {"skill_id": self.skill_id, "score": round(self.score, 6), "signals": self.signals}


@dataclass(frozen=True)
class RoutedRequest:
    """The one result shape: the ranking (best first), the skills to load and the signals that ranked them; where no
    skill fits (``abstention``), ``selected`` is empty, ``no_fit`` says why and the ranking lists the nearest skills."""

    ranking: list[RankedSkill]
    selected: list[str]         # the skills to load, best first
    signals_used: tuple[str, ...] = ()  # ("bm25",) while only the lexical index exists
    no_fit: str | None = None   # one line: why no skill is selected

    @property
    def pairs(self) -> Ranking:
        return [(r.skill_id, r.score) for r in self.ranking]

    def as_dict(self, request_id: str | int | None = None) -> dict:
        head = {} if request_id is None else {"id": request_id}
        tail = {} if self.no_fit is None else {"no_fit": self.no_fit}
        return {**head, "ranking": [r.as_dict() for r in self.ranking], "selected": self.selected,
                "signals_used": list(self.signals_used), **tail}


@dataclass(frozen=True)
class Fused:
    """One request's fused candidates, best first: pool rows, fused scores, and each candidate's position in
    ``cands`` (where its raw signal scores are)."""

    cands: Candidates
    order: np.ndarray   # (c,) positions into cands, best first
    scores: np.ndarray  # (c,) fused score of each candidate, in cands order
