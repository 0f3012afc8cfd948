"""Every training variant trains, saves, reloads and scores on CPU (tiny settings, the bundled MiniLM)."""
import json

import pytest
import torch
from sentence_transformers import CrossEncoder, SentenceTransformer

from skill_assets.lib.models.bundled_models import bundled_minilm
from skill_assets.lib.retrieval.store_skills import skills_from_rows
from skill_assets.lib.training.model_training import TrainingSettings, dev_slice, train_embedder, train_reranker
from skill_assets.lib.training.training_loop import OptimConfig, evaluation_interval, run_training
from skill_assets.lib.training.training_queries import TrainingQuery, training_queries
from skill_assets.lib.training.variants import EMBEDDER_VARIANTS, RERANKER_VARIANTS

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
# the trainer's inputs, read from those rows as the training assets read the store's
POOL = skills_from_rows(SKILLS)
SUPER_DOMAIN = {s["skill_id"]: s["super_domain"] for s in SKILLS}
TRAIN = training_queries(QUERIES)
TINY = TrainingSettings(epochs=1, batch_size=4, max_seq_length=48, checkpoint_every=100)


@pytest.mark.parametrize("name", sorted(EMBEDDER_VARIANTS))
def test_embedder_variant_trains_saves_and_reloads(tmp_path, name):
    base = bundled_minilm()
    trained = train_embedder(EMBEDDER_VARIANTS[name], TRAIN, POOL, base, base, tmp_path / name, TINY,
                             super_domain=SUPER_DOMAIN)
    assert trained.steps == 2 and trained.final_loss is not None and trained.final_loss > 0
    card = json.loads((trained.path / "skill_assets_card.json").read_text())
    assert card["name"] == name and card["base_model"] == base
    # one of the six queries is held out and scored at the start, after each step; the best is kept
    assert card["train_queries"] == 5 and card["dev_queries"] == 1
    assert [step for step, _ in card["dev_ndcg10_by_step"]] == [0, 1, 2] and card["selected_step"] in (0, 1, 2)
    readme = (trained.path / "README.md").read_text()  # our card, not the base model's
    assert f"embedder: `{name}`" in readme and "held-out" in readme and "s2orc" not in readme
    reloaded = SentenceTransformer(str(trained.path))
    assert reloaded.max_seq_length == SentenceTransformer(base).max_seq_length  # trained at 48, serves at its own
    emb = reloaded.encode(["docker networking"], normalize_embeddings=True)
    assert emb.shape == (1, 384) and abs(float((emb**2).sum()) - 1) < 1e-4


@pytest.mark.parametrize("name", sorted(RERANKER_VARIANTS))
def test_reranker_variant_trains_saves_and_reloads(tmp_path, name):
    base = bundled_minilm()
    trained = train_reranker(RERANKER_VARIANTS[name], TRAIN, POOL, base, base, tmp_path / name, TINY)
    assert trained.steps >= 1 and trained.final_loss is not None
    reloaded = CrossEncoder(str(trained.path))
    assert reloaded.max_seq_length == CrossEncoder(base, num_labels=1).max_seq_length
    scores = reloaded.predict([("docker networking", "docker-helper | docker"), ("x", "y")])
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


def test_dev_slice_is_a_stable_seeded_share_of_the_queries():
    queries = [TrainingQuery(f"q{i}", f"request {i}", ()) for i in range(40)]
    train, dev = dev_slice(queries, 0.1, seed=0)
    assert len(dev) == 4 and len(train) == 36 and not {q.id for q in train} & {q.id for q in dev}
    assert dev_slice(list(reversed(queries)), 0.1, seed=0)[1] == list(reversed(dev))  # order does not matter
    assert dev_slice(queries, 0.1, seed=1)[1] != dev
    assert dev_slice(queries[:4], 0.1, seed=0) == (queries[:4], [])  # too few to hold any out
    assert dev_slice(queries, 0.0, seed=0) == (queries, [])


def _scripted_run(tmp_path, scores, batches=6, eval_every=2, fail_at=None, snapshots=None, resumes_at=0):
    """Train a linear model; the held-out score at each evaluation comes from ``scores`` (by step)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    data = [torch.randn(8, 4) for _ in range(batches)]
    calls = []

    def loss_for(batch):
        calls.append(1)
        if fail_at is not None and len(calls) == fail_at:
            raise KeyboardInterrupt("killed")
        return (model(batch) - 1).pow(2).mean()

    def evaluate():
        step = resumes_at + len(calls)
        if snapshots is not None:
            snapshots[step] = model.weight.detach().clone()
        return scores[step]

    outcome = run_training(model, data, loss_for, OptimConfig(learning_rate=5e-2, checkpoint_every=2),
                           tmp_path / "ckpt.pt", "fp", evaluate=evaluate, eval_every=eval_every)
    return model, outcome


def test_training_keeps_the_weights_that_score_best_on_held_out_queries(tmp_path):
    snapshots = {}
    model, outcome = _scripted_run(tmp_path, {0: 0.1, 2: 0.5, 4: 0.3, 6: 0.5}, snapshots=snapshots)
    assert outcome.dev_scores == [(0, 0.1), (2, 0.5), (4, 0.3), (6, 0.5)]
    assert outcome.selected_step == 2  # a later tie does not replace it
    assert torch.equal(model.weight, snapshots[2]) and not torch.equal(model.weight, snapshots[6])


def test_training_that_never_helps_on_held_out_queries_returns_the_starting_weights(tmp_path):
    snapshots = {}
    model, outcome = _scripted_run(tmp_path, {0: 0.9, 2: 0.5, 4: 0.4, 6: 0.3}, snapshots=snapshots)
    assert outcome.selected_step == 0 and torch.equal(model.weight, snapshots[0])


def test_a_resumed_run_remembers_the_best_weights_seen_before_the_interruption(tmp_path):
    scores = {0: 0.1, 2: 0.8, 4: 0.2, 6: 0.3}
    snapshots = {}
    with pytest.raises(KeyboardInterrupt):
        _scripted_run(tmp_path, scores, fail_at=6, snapshots=snapshots)  # checkpoint at step 4, dies in step 6
    best_before = snapshots[2]
    model, outcome = _scripted_run(tmp_path, scores, resumes_at=4)
    assert outcome.resumed_from_step == 4 and outcome.selected_step == 2
    assert outcome.dev_scores == [(0, 0.1), (2, 0.8), (4, 0.2), (6, 0.3)]
    assert torch.equal(model.weight, best_before)


def test_evaluation_interval_spreads_evaluations_over_the_run():
    assert evaluation_interval(100, 10) == 10 and evaluation_interval(3, 10) == 1 and evaluation_interval(7, 2) == 4


def test_mined_negatives_exclude_ground_truth_and_feed_the_variants():
    from skill_assets.lib.training.model_training import load_bi_encoder, mine_negatives, mining_rule, variant_negatives

    teacher = load_bi_encoder(bundled_minilm(), 64)
    r3, removed = mine_negatives("r3", TRAIN, POOL, teacher)
    sr, _ = mine_negatives("skillrouter", TRAIN, POOL, teacher, seed=1, super_domain=SUPER_DOMAIN)
    for q in QUERIES:
        assert len(r3[q["query_id"]]) <= 1 and not set(r3[q["query_id"]]) & set(q["skill_ids"])
        assert sr[q["query_id"]] and not set(sr[q["query_id"]]) & set(q["skill_ids"])
        assert len(set(sr[q["query_id"]])) == len(sr[q["query_id"]])
    assert isinstance(removed, dict)
    assert [mining_rule(EMBEDDER_VARIANTS[n]) for n in ("r3", "r3-skip-neg", "skillrouter")] == \
        ["r3", "r3", "skillrouter"]
    skip = variant_negatives(EMBEDDER_VARIANTS["r3-skip-neg"], TRAIN, r3, POOL)
    assert skip["q1"] == ["s/helm"] and skip["q4"] == r3["q4"]  # no SKIP partner: the mined one
    assert variant_negatives(EMBEDDER_VARIANTS["r3"], TRAIN, r3, POOL) == r3
    with pytest.raises(ValueError, match="mining rule"):
        mine_negatives("random", TRAIN, POOL, teacher)
    with pytest.raises(ValueError, match="super-domain"):  # SkillRouter's rule draws two negatives by it
        mine_negatives("skillrouter", TRAIN, POOL, teacher)


class _RunsCode:
    """A pickle payload that, unpickled without restriction, writes a marker file: what a crafted checkpoint does."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


def test_a_crafted_checkpoint_beside_a_model_runs_no_code_and_training_starts_over(tmp_path):
    import pickle

    marker = tmp_path / "code_ran"
    ckpt = tmp_path / "model.checkpoint.pt"
    ckpt.write_bytes(pickle.dumps({"fingerprint": "fp", "step": 4, "payload": _RunsCode(str(marker))}))
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    lines: list[str] = []
    outcome = run_training(model, [torch.randn(8, 4) for _ in range(3)], lambda b: model(b).pow(2).mean(),
                           OptimConfig(checkpoint_every=100), ckpt, "fp", log=lines.append)
    assert not marker.exists()
    assert outcome.resumed_from_step == 0 and outcome.steps == 3
    assert any(line.startswith("checkpoint model.checkpoint.pt refused") for line in lines)


def test_a_real_checkpoint_still_resumes_under_the_data_only_loader(tmp_path):
    """The checkpoint the loop writes (optimiser, scheduler and best weights included) loads with weights_only."""
    from skill_assets.lib.training.training_loop import load_checkpoint

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    batches = [torch.randn(8, 4) for _ in range(5)]
    ckpt = tmp_path / "run.checkpoint.pt"
    run_training(model, batches, lambda b: model(b).pow(2).mean(), OptimConfig(checkpoint_every=2), ckpt, "fp",
                 evaluate=lambda: 0.5, eval_every=2)
    state = load_checkpoint(ckpt)
    assert state is not None and state["step"] == 4 and state["best"]["step"] == 0


def test_a_head_with_its_own_learning_rate_moves_at_that_rate_and_a_missing_head_is_refused(tmp_path):
    """A zero-initialised scoring head learns at its own rate; the body keeps the encoder's."""
    torch.manual_seed(0)
    model = torch.nn.Sequential()
    model.add_module("body", torch.nn.Linear(4, 4))
    model.add_module("classifier", torch.nn.Linear(4, 1))
    torch.nn.init.zeros_(model.classifier.weight)
    body_before, data = model.body.weight.detach().clone(), [torch.randn(8, 4) for _ in range(3)]
    optim = OptimConfig(learning_rate=1e-6, warmup_ratio=0.0, head_learning_rate=1e-1, checkpoint_every=10 ** 9)
    run_training(model, data, lambda b: (model(b) - 1).pow(2).mean(), optim, tmp_path / "ckpt.pt", "fp")
    assert float(model.classifier.weight.abs().max()) > 0.05  # three Adam steps at 0.1
    assert float((model.body.weight - body_before).abs().max()) < 1e-5  # three steps at 1e-6
    with pytest.raises(ValueError, match="no trainable parameter is under a module named 'classifier'"):
        run_training(torch.nn.Linear(4, 1), data, lambda b: b.sum(), optim, tmp_path / "other.pt", "fp")
