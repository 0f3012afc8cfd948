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


def test_a_benchmark_reads_only_its_own_external_pool_by_id(tmp_path: Path):
    db = tmp_path / "store.duckdb"
    store_lib.replace_table(db, "skills", frame("skills", ROWS))
    store_lib.replace_table(db, "external_skills", frame("external_skills", [
        {"benchmark": bench, "skill_id": r["skill_id"], "name": r["name"], "description": r["description"],
         "body": f"{bench}: {r['body']}"} for bench in ("r3", "skillret") for r in ROWS]))
    assert store_skills(db, benchmark="r3") == [Skill("a/pdf", "pdf", "", "r3: Merge PDFs."),
                                                Skill("b/lint", "lint", "Lint Python files.", "r3: Run ruff.")]
    assert store_skills(db, benchmark="none") == []
    assert store_skills(db) == skills_from_rows(sorted(ROWS, key=lambda r: r["skill_id"]))
