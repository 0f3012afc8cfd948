"""The neighbourhood checks fail on what can really leak, on a real DuckDB file."""
import polars as pl

from skill_assets.defs.neighbourhoods.checks import pools_hold_no_folded_duplicates
from skill_assets.defs.resources import DuckDBStore
from skill_assets.lib.common import store


def _write(path, name, **cols):
    store.replace_table(path, name, pl.DataFrame(cols))


def test_folded_duplicate_in_a_pool_fails_the_check(tmp_path):
    db = tmp_path / "s.duckdb"
    _write(db, "skills", skill_id=["a", "b"])
    _write(db, "skill_duplicates", duplicate_skill_id=["a-copy"], kept_skill_id=["a"], layer=["near_duplicate"])
    _write(db, "skill_pools", skill_id=["a", "b"], pool=["train", "test"])
    resources = DuckDBStore(database=str(db))
    assert pools_hold_no_folded_duplicates(store=resources).passed

    _write(db, "skill_pools", skill_id=["a", "b", "a-copy"], pool=["train", "test", "test"])
    result = pools_hold_no_folded_duplicates(store=resources)
    assert not result.passed and result.metadata["violations"].value == 2  # folded copy, and not a kept skill
