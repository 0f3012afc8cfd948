"""Every training variant trains, saves, reloads and scores on CPU (tiny settings, the bundled MiniLM)."""
import json

import pytest
import torch
from sentence_transformers import CrossEncoder, SentenceTransformer

from skill_assets.defs.resources import bundled_minilm
from skill_assets.lib.model_training import TrainingSettings, train_embedder, train_reranker
from skill_assets.lib.training_loop import OptimConfig, run_training
from skill_assets.lib.variants import EMBEDDER_VARIANTS, RERANKER_VARIANTS

TOPICS = {0: ["docker", "kubernetes", "helm", "nginx"], 1: ["pandas", "sql", "parquet", "airflow"],
          2: ["react", "css", "oauth", "forms"]}
SKILLS = [{"skill_id": f"s/{w}", "name": f"{w}-helper", "description": f"Helps with {w} tasks.",
           "body": f"# {w}\n\nUse this when working with {w}. Steps: inspect the {w} setup, fix it, verify.",
           "super_domain": d} for d, words in TOPICS.items() for w in words]
QUERIES = [
    {"query_id": "q1", "query": "my docker containers cannot reach each other", "skill_ids": ["s/docker"],
     "skip_partners": ["s/helm"], "direction": "en2en", "k": 1},
    {"query_id": "q2", "query": "deploy the chart and put nginx in front", "skill_ids": ["s/helm", "s/nginx"],
     "skip_partners": ["s/docker"], "direction": "en2en", "k": 2},
    {"query_id": "q3", "query": "clean a dataframe and load it into parquet", "skill_ids": ["s/pandas", "s/parquet"],
     "skip_partners": ["s/sql"], "direction": "en2en", "k": 2},
    {"query_id": "q4", "query": "schedule a nightly sql job", "skill_ids": ["s/airflow"], "skip_partners": [],
     "direction": "en2en", "k": 1},
    {"query_id": "q5", "query": "a login form that uses oauth", "skill_ids": ["s/oauth", "s/forms"],
     "skip_partners": ["s/css"], "direction": "en2en", "k": 2},
    {"query_id": "q6", "query": "the layout breaks on small screens", "skill_ids": ["s/css"],
     "skip_partners": ["s/react"], "direction": "en2en", "k": 1},
]
TINY = TrainingSettings(epochs=1, batch_size=4, max_seq_length=48, checkpoint_every=100)


@pytest.mark.parametrize("name", sorted(EMBEDDER_VARIANTS))
def test_embedder_variant_trains_saves_and_reloads(tmp_path, name):
    base = bundled_minilm()
    trained = train_embedder(EMBEDDER_VARIANTS[name], QUERIES, SKILLS, base, base, tmp_path / name, TINY)
    assert trained.steps == 2 and trained.final_loss is not None and trained.final_loss > 0
    card = json.loads((trained.path / "skill_assets_card.json").read_text())
    assert card["name"] == name and card["base_model"] == base
    emb = SentenceTransformer(str(trained.path)).encode(["docker networking"], normalize_embeddings=True)
    assert emb.shape == (1, 384) and abs(float((emb**2).sum()) - 1) < 1e-4


@pytest.mark.parametrize("name", sorted(RERANKER_VARIANTS))
def test_reranker_variant_trains_saves_and_reloads(tmp_path, name):
    base = bundled_minilm()
    trained = train_reranker(RERANKER_VARIANTS[name], QUERIES, SKILLS, base, base, tmp_path / name, TINY)
    assert trained.steps >= 1 and trained.final_loss is not None
    scores = CrossEncoder(str(trained.path)).predict([("docker networking", "docker-helper | docker"), ("x", "y")])
    assert scores.shape == (2,) and all(map(lambda s: s == s, scores))  # finite, not NaN
    if name == "r3":
        assert trained.card["skip_partner_items"] > 0
    if name == "r3-noskip":
        assert trained.card["skip_partner_items"] == 0


def test_interrupted_training_resumes_from_its_checkpoint(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    batches = [torch.randn(8, 4) for _ in range(6)]
    seen: list[int] = []

    def loss_for(batch, fail_at=None):
        seen.append(len(seen))
        if fail_at is not None and len(seen) == fail_at:
            raise KeyboardInterrupt("killed")
        return model(batch).pow(2).mean()

    ckpt = tmp_path / "run.checkpoint.pt"
    optim = OptimConfig(learning_rate=1e-2, checkpoint_every=2)
    with pytest.raises(KeyboardInterrupt):
        run_training(model, batches, lambda b: loss_for(b, fail_at=5), optim, ckpt, "fp")
    assert ckpt.exists()
    seen.clear()
    outcome = run_training(model, batches, loss_for, optim, ckpt, "fp")
    assert outcome.resumed_from_step == 4 and len(seen) == 2  # only steps 5 and 6 ran again
    # a different fingerprint (other data or settings) never resumes from a stale checkpoint
    seen.clear()
    assert run_training(torch.nn.Linear(4, 1), batches, loss_for, optim, ckpt, "other").resumed_from_step == 0
