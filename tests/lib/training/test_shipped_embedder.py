"""The shipped embedder: its card matches its file and data, it routes a pool with no store, and a rebuild on a toy
set is deterministic."""
from __future__ import annotations

import hashlib
import json
from dataclasses import replace

from bilingual_pool import write_pool, write_requests

from skill_assets.lib.models.bundled_models import bundled_minilm
from skill_assets.lib.retrieval.defaults import (
    SHIPPED_DIR,
    SHIPPED_EMBEDDER_DIR,
    TUNED_FILE,
    shipped_embedder,
    tuned_embedder,
)
from skill_assets.lib.retrieval.pools import load_pool
from skill_assets.lib.retrieval.engine import Engine
from skill_assets.router import Router
from skill_assets.router.shipped_embedder import (
    CARD_FILE,
    CheckpointChoice,
    Recipe,
    build,
    data_hash,
    recipe_hash,
    training_requests,
)

CARD = json.loads((SHIPPED_EMBEDDER_DIR / CARD_FILE).read_text())


def test_the_card_matches_the_shipped_file_the_recipe_and_the_data(shared_corpus):
    assert CARD["tuned_sha256"] == hashlib.sha256((SHIPPED_EMBEDDER_DIR / TUNED_FILE).read_bytes()).hexdigest()
    assert CARD["recipe_hash"] == recipe_hash(Recipe()) and CARD["data"]["test_requests_read"] == 0
    assert list(CARD["recipe"].items()) == list(Recipe().as_dict().items())  # the card's flat recipe, in its order
    _, _, by_source = training_requests()
    assert CARD["data_hash"] == data_hash(by_source, [s.id for s in load_pool(shared_corpus).skills])
    assert (SHIPPED_EMBEDDER_DIR / TUNED_FILE).stat().st_size < 40_000_000


def test_the_default_routes_with_the_embedder_its_fusion_was_fitted_over(tmp_path):
    """The shipped fusion's card names the embedder it was fitted over; tuned layers it does not name stay out of
    the default (dev shows no win for the old fusion over them), and are used where its card names them."""
    fitted_over = json.loads((SHIPPED_DIR / "skill_assets_card.json").read_text())["data"].get("embedder_sha256")
    router = Router.from_store(db_path=tmp_path / "none.duckdb", cache_dir=tmp_path / "cache")
    expected = tuned_embedder() if fitted_over == CARD["tuned_sha256"] else bundled_minilm()
    assert router.engine.embedder_path == shipped_embedder() == expected


def test_the_tuned_embedder_loads_from_the_package_and_routes_a_pool_with_no_store(tmp_path):
    skills, _ = load_pool(write_pool(tmp_path / "pool"))
    path = tuned_embedder(tmp_path / "models")
    assert path != bundled_minilm() and path == tuned_embedder(tmp_path / "models")
    router = Engine(path, cache_dir=tmp_path / "cache")
    router.index(skills)
    routed = router.route(["my docker compose services cannot reach each other by name"], top_k=3)[0]
    assert routed.ranking[0].skill_id == "devops/docker-compose-networking"


def test_a_rebuild_on_a_toy_set_is_deterministic(tmp_path):
    pool = write_pool(tmp_path / "pool")
    (tmp_path / "requests").mkdir()
    requests = write_requests(tmp_path / "requests" / "requests.jsonl")
    recipe = replace(Recipe(), epochs=1, batch_size=4, choice=CheckpointChoice(evaluations=1, dev_pool=50))
    cards = [build(pool, tmp_path / f"out{i}", tmp_path / f"work{i}", recipe, sets=(requests,), force=True)
             for i in range(2)]
    assert cards[0]["tuned_sha256"] == cards[1]["tuned_sha256"]
    assert cards[0]["learning_curve"] == cards[1]["learning_curve"]
    again = build(pool, tmp_path / "out0", tmp_path / "work0", recipe, sets=(requests,))  # data and recipe unchanged
    assert again == cards[0]
