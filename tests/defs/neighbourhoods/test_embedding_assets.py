"""Materialize `skill_embeddings` on a real DuckDB file with the bundled MiniLM: first, warm and changed runs."""
import os

import dagster as dg

from skill_assets.definitions import defs
from skill_assets.defs.resources import DuckDBStore, default_resources
from skill_assets.lib.common import store
from skill_assets.lib.models.encoder_backends import backend_key
from skill_assets.lib.common.tables import frame

os.environ.setdefault("HF_HUB_OFFLINE", "1")
SKILLS = [("docker", "Debug compose networking", "Services cannot reach each other: check the network and DNS."),
          ("pdf", "Extract PDF tables", "Read tables out of PDF files and save them as CSV."),
          ("helm", "Manage Helm releases", "Install, upgrade and roll back charts on a Kubernetes cluster."),
          ("commit", "Write commit messages", "Summarise a diff as a conventional commit message.")]


def _write_skills(db, skills) -> None:
    store.replace_table(db, "skills", frame("skills", [
        {"skill_id": f"demo/{n}", "name": n, "description": d, "body": b, "language": "en", "content_hash": n}
        for n, d, b in skills]))


def _embed(db) -> dict:
    result = dg.materialize(list(defs.assets or []), selection=["skill_embeddings"],
                            resources={**default_resources(), "store": DuckDBStore(database=str(db))})
    assert result.success
    (event,) = result.get_asset_materialization_events()
    return {k: v.value for k, v in event.materialization.metadata.items()}


def test_warm_run_embeds_nothing_and_a_changed_body_only_itself(tmp_path):
    db = tmp_path / "store.duckdb"
    _write_skills(db, SKILLS)
    first = _embed(db)
    assert (first["embedded_now"], first["cache_hits"]) == (4, 0)
    assert first["backend"] in ("torch-bf16", "onnx-int8", "torch") and "gate" in first["backend_reason"]
    keys = set(store.query(db, "SELECT DISTINCT model_fingerprint FROM skill_embeddings")["model_fingerprint"])
    assert len(keys) == 1 and keys.pop().endswith("/" + backend_key("auto"))

    warm = _embed(db)
    assert (warm["embedded_now"], warm["cache_hits"]) == (0, 4) and "backend" not in warm  # no model loaded

    changed = [*SKILLS[:3], ("commit", "Write commit messages", "Summarise staged changes as one commit subject.")]
    _write_skills(db, changed)
    third = _embed(db)
    assert (third["embedded_now"], third["cache_hits"]) == (1, 3)
    assert store.query(db, "SELECT count(*) AS n FROM skill_embeddings")["n"][0] == 4
