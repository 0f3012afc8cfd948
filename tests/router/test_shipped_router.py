"""The shipped default router: its card tells the truth about its file, and it loads and routes a pool with no store."""
import json
import os

from bilingual_pool import SKILLS

from skill_assets.lib.evaluation.curated_benchmark import load_requests
from skill_assets.lib.retrieval.defaults import SHIPPED_DIR, shipped_router
from skill_assets.lib.retrieval.fusion import FusionModel
from skill_assets.lib.retrieval.fusion_training import SELECTION_FILE
from skill_assets.router import Router, Skill
from skill_assets.router.shipped_router import CURATED_REQUESTS, MEANING_REQUESTS, STYLES_REQUESTS

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def test_the_card_matches_the_model_file():
    model, cut = shipped_router()
    card = json.loads((SHIPPED_DIR / "skill_assets_card.json").read_text())
    assert model.card == card
    assert json.loads((SHIPPED_DIR / SELECTION_FILE).read_text()) == card["selection"] == cut.as_dict()
    assert (card["kind"], tuple(card["signals"])) == (model.kind, model.signals)
    assert list(card["params"].values()) == list(model.params.values())  # the grid's names for the fit's values
    assert set(model.signals) == {"bm25", "dense", "multilingual", "gloss"}  # what every install has
    if model.kind == "linear":
        assert model.weights_by_language() == card["weights_by_language"]
    meaning, curated = load_requests(MEANING_REQUESTS), load_requests(CURATED_REQUESTS)
    styles = [r for r in load_requests(STYLES_REQUESTS) if r.split == "dev"]
    data = card["data"]
    assert data["train_requests"] == sum(r.split == "train" for r in meaning + curated)
    assert data["dev_by_source"] == {"meaning": sum(r.split == "dev" for r in meaning),
                                     "curated": sum(r.split == "dev" for r in curated), "styles": len(styles)}
    assert data["dev_requests"] == sum(data["dev_by_source"].values())
    assert data["test_requests_read"] == 0 and "rebuild" in data
    text = json.dumps(card)
    assert "/root/" not in text and "/work/" not in text and "/home/" not in text  # no machine path


def test_the_shipped_router_loads_and_routes_a_toy_pool_with_no_store(tmp_path):
    router = Router.from_store(db_path=tmp_path / "missing.duckdb", cache_dir=tmp_path / "cache")
    assert isinstance(router.engine.fusion, FusionModel) and router.engine.reranker_path is None
    router.index([Skill(sid, *fields) for sid, fields in SKILLS.items()])
    (en, zh) = router.route(["my docker compose services cannot reach each other by name",
                                      "帮我写一封应聘数据分析师岗位的求职信"], top_k=3)
    assert en.ranking[0].skill_id == "devops/docker-compose-networking"
    assert set(en.ranking[0].signals) == {"bm25", "dense", "multilingual", "gloss", "fused"}
    assert zh.ranking[0].skill_id == "writing/cover-letter" and 1 <= len(zh.selected) <= 3
