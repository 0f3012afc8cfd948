"""Fixtures of the review stage's tests (helpers live in review_store.py)."""
import pytest
from review_store import build_upstream


@pytest.fixture
def upstream_store(tmp_path):
    db = tmp_path / "store.duckdb"
    build_upstream(db)
    return db
