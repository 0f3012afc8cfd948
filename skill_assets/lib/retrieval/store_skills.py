"""The store's skills as ``pools.Skill``s: the one place a ``skills``-table row becomes a skill.

The router reads a pool as ``Skill``s; the stages that rank, index or mine the store's skills (the
evaluation's systems on our library and on each external benchmark's, the router's fusion fitting, the
review's BM25 candidates, the trainer's BM25 negatives) get theirs from DuckDB rows. Each used to build
the ``Skill`` field by field itself, so a column the table renames, or a field ``Skill`` gains, had as
many places to follow as stages. It sits in the engine (not the shared package) because ``Skill`` does,
and every ``lib/`` stage and ``defs/`` may import the engine.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from skill_assets.lib.common.store import query
from skill_assets.lib.retrieval.pools import Skill


def skills_from_rows(rows: Iterable[Mapping[str, str]]) -> list[Skill]:
    """``Skill``s of rows keyed as the ``skills`` table is (``skill_id``, ``name``, ``description``, ``body``),
    in the rows' order; other keys (``super_domain``, ``pool``, ...) are not the skill's and are left out."""
    return [Skill(r["skill_id"], r["name"], r["description"], r["body"]) for r in rows]


def store_skills(db: str | Path, benchmark: str | None = None) -> list[Skill]:
    """Every skill of the store's ``skills`` table, by id: the whole library a system ranks.

    With ``benchmark``, that external benchmark's pool instead (its partition of ``external_skills``, which
    keeps the ``skills`` columns beside ``benchmark``): the evaluation ranks an external pool exactly as ours,
    so both come through the same reader.
    """
    if benchmark is None:
        rows = query(db, "SELECT skill_id, name, description, body FROM skills ORDER BY skill_id")
    else:
        rows = query(db, "SELECT skill_id, name, description, body FROM external_skills WHERE benchmark = ? "
                         "ORDER BY skill_id", [benchmark])
    return skills_from_rows(rows.iter_rows(named=True))
