"""Fixtures of the review stage's tests (helpers live in review_store.py and label_studio_server.py)."""
import pytest
from label_studio_server import LabelStudioServer, start_label_studio
from review_store import build_upstream


@pytest.fixture
def upstream_store(tmp_path):
    db = tmp_path / "store.duckdb"
    build_upstream(db)
    return db


@pytest.fixture(scope="session")
def label_studio(tmp_path_factory) -> LabelStudioServer:
    """One real Label Studio per test session (its first start runs the migrations) on a temporary data dir."""
    with start_label_studio(tmp_path_factory.mktemp("label-studio")) as server:
        yield server
