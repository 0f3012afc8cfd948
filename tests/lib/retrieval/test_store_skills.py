"""The one store-to-``Skill`` reader: the ``skills`` table and table-shaped rows become ``pools.Skill``s."""
from pathlib import Path

from skill_assets.lib.common import store as store_lib
from skill_assets.lib.common.tables import frame
from skill_assets.lib.retrieval.pools import Skill
from skill_assets.lib.retrieval.store_skills import skills_from_rows, store_skills

ROWS = [
    {"skill_id": "b/lint", "name": "lint", "description": "Lint Python files.", "body": "Run ruff.", "language": "en"},
    {"skill_id": "a/pdf", "name": "pdf", "description": "", "body": "Merge PDFs.", "language": "en"},
]


def test_rows_become_skills_in_their_order_without_other_columns():
    rows = [{**r, "super_domain": "dev", "pool": "train"} for r in ROWS]
    assert skills_from_rows(rows) == [Skill("b/lint", "lint", "Lint Python files.", "Run ruff."),
                                      Skill("a/pdf", "pdf", "", "Merge PDFs.")]


def test_the_store_reads_every_skill_by_id(tmp_path: Path):
    db = tmp_path / "store.duckdb"
    store_lib.replace_table(db, "skills", frame("skills", ROWS))
    assert [s.id for s in store_skills(db)] == ["a/pdf", "b/lint"]
    assert store_skills(db) == skills_from_rows(sorted(ROWS, key=lambda r: r["skill_id"]))
