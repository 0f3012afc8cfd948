"""Train one embedder or reranker variant end to end: mine negatives, build batches, train, save.

Framework-free so the Dagster assets, the smoke benchmark and the tests share one code path.
Queries are dicts with ``query_id``, ``query``, ``skill_ids``, ``skip_partners``, ``direction``
and ``k``; skills are dicts with ``skill_id``, ``name``, ``description``, ``body`` and
``super_domain``. The saved folder loads with ``SentenceTransformer(path)`` / ``CrossEncoder(path)``
and carries ``skill_assets_card.json`` (base model, variant, loss, hyper-parameters, timing).
"""
from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from skill_assets.lib.embedder_training import build_loss as embedder_loss
from skill_assets.lib.embedder_training import embedder_batch_loss, make_batches, make_examples
from skill_assets.lib.hard_negatives import mine_r3_negatives, mine_skillrouter_negatives
from skill_assets.lib.hashing import digest
from skill_assets.lib.reranker_training import build_list, reranker_batch_loss, shuffled_skip_partners
from skill_assets.lib.reranker_training import build_loss as reranker_loss
from skill_assets.lib.retrieval import bm25_rank, dense_rank
from skill_assets.lib.skill_text import ENCODER_CAPS, RERANKER_CAPS, skill_document
from skill_assets.lib.training_loop import OptimConfig, enable_gpu_settings, run_training, training_device
from skill_assets.lib.variants import EmbedderVariant, RerankerVariant


@dataclass(frozen=True)
class TrainingSettings:
    epochs: int = 1
    batch_size: int = 16
    max_seq_length: int = 256
    checkpoint_every: int = 20
    seed: int = 0
    query_prompt: str = ""


@dataclass
class TrainedModel:
    path: Path
    steps: int
    resumed_from_step: int
    final_loss: float | None
    wall_s: float
    card: dict = field(default_factory=dict)


def load_bi_encoder(name_or_path: str, max_seq_length: int | None = None):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(name_or_path, device=training_device())
    if max_seq_length:
        model.max_seq_length = max_seq_length
    return model


def _finish(model, out_dir: Path, checkpoint: Path, card: dict, outcome) -> TrainedModel:
    model.save(str(out_dir))
    (out_dir / "skill_assets_card.json").write_text(json.dumps(card, indent=2, default=str))
    checkpoint.unlink(missing_ok=True)
    return TrainedModel(out_dir, outcome.steps, outcome.resumed_from_step,
                        outcome.losses[-1] if outcome.losses else None, outcome.wall_s, card)


def mine_embedder_negatives(variant: EmbedderVariant, queries: list[dict], skills: list[dict], teacher,
                            settings: TrainingSettings) -> tuple[dict[str, list[str]], Counter]:
    """Per query id, the negatives of the variant's rule (teacher-mined, SKIP partner or SkillRouter's 10)."""
    index = {s["skill_id"]: i for i, s in enumerate(skills)}
    docs = [skill_document(s["name"], s["description"], s["body"], ENCODER_CAPS) for s in skills]
    skill_emb = teacher.encode(docs, normalize_embeddings=True)
    query_emb = teacher.encode([settings.query_prompt + q["query"] for q in queries], normalize_embeddings=True)
    positives = [[index[s] for s in q["skill_ids"] if s in index] for q in queries]
    if variant.negatives == "skillrouter":
        bm25 = bm25_rank([s["skill_id"] for s in skills], docs, [q["query"] for q in queries], 20)
        mined, removed = mine_skillrouter_negatives(query_emb, skill_emb, skills, positives,
                                                    [[index[s] for s, _ in r] for r in bm25], settings.seed)
        return {q["query_id"]: [skills[j]["skill_id"] for j in m] for q, m in zip(queries, mined)}, removed
    mined, removed = mine_r3_negatives(query_emb, skill_emb, skills, positives)
    negatives = {}
    for q, j in zip(queries, mined):
        partners = [p for p in q["skip_partners"] if p in index] if variant.negatives == "skip_partner" else []
        negatives[q["query_id"]] = partners[:1] or ([skills[j]["skill_id"]] if j is not None else [])
    return negatives, removed


def train_embedder(variant: EmbedderVariant, queries: list[dict], skills: list[dict], base_model: str,
                   teacher_model: str, out_dir: Path, settings: TrainingSettings = TrainingSettings(),
                   log: Callable[[str], None] = lambda _: None) -> TrainedModel:
    teacher = load_bi_encoder(teacher_model, settings.max_seq_length)
    negatives, removed = mine_embedder_negatives(variant, queries, skills, teacher, settings)
    del teacher
    texts = {s["skill_id"]: skill_document(s["name"], s["description"], s["body"], ENCODER_CAPS) for s in skills}
    model = load_bi_encoder(base_model, settings.max_seq_length)
    enable_gpu_settings(model)
    loss = embedder_loss(variant.loss, variant.temperature, variant.sibling_weight)
    batches = make_batches(make_examples(queries, negatives, settings.seed), settings.batch_size, settings.epochs,
                           settings.seed)
    fingerprint = digest(json.dumps([asdict(variant), asdict(settings), base_model, [b.queries for b in batches]]))
    checkpoint = out_dir.with_name(f"{out_dir.name}.checkpoint.pt")
    outcome = run_training(model, batches, lambda b: embedder_batch_loss(model, loss, b, texts, settings.query_prompt),
                           OptimConfig(variant.learning_rate, checkpoint_every=settings.checkpoint_every),
                           checkpoint, fingerprint, log)
    card = {"kind": "embedder", **asdict(variant), "base_model": base_model, "teacher": teacher_model,
            "train_queries": len(queries), **asdict(settings), "wall_s": outcome.wall_s,
            "negatives_removed": dict(removed)}
    return _finish(model, out_dir, checkpoint, card, outcome)


def reranker_lists(variant: RerankerVariant, queries: list[dict], skills: list[dict], first_stage,
                   settings: TrainingSettings) -> list:
    docs = [skill_document(s["name"], s["description"], s["body"], ENCODER_CAPS) for s in skills]
    rr_ids = {s["skill_id"] for s in skills}
    top = dense_rank([s["skill_id"] for s in skills], first_stage.encode(docs, normalize_embeddings=True),
                     first_stage.encode([settings.query_prompt + q["query"] for q in queries], normalize_embeddings=True),
                     variant.list_size)
    shuffled = shuffled_skip_partners(queries, settings.seed) if variant.skip_labels == "shuffled" else {}
    lists = []
    for q, ranking in zip(queries, top):
        partners = {"graded": q["skip_partners"], "shuffled": shuffled.get(q["query_id"], []), "none": []}[variant.skip_labels]
        lists.append(build_list(q["query"], list(q["skill_ids"]), [p for p in partners if p in rr_ids],
                                [sid for sid, _ in ranking], variant.list_size))
    return lists


def train_reranker(variant: RerankerVariant, queries: list[dict], skills: list[dict], base_model: str,
                   first_stage_model: str, out_dir: Path, settings: TrainingSettings = TrainingSettings(),
                   log: Callable[[str], None] = lambda _: None) -> TrainedModel:
    from sentence_transformers import CrossEncoder

    first_stage = load_bi_encoder(first_stage_model, settings.max_seq_length)
    lists = reranker_lists(variant, queries, skills, first_stage, settings)
    del first_stage
    rr_texts = {s["skill_id"]: skill_document(s["name"], s["description"], s["body"], RERANKER_CAPS) for s in skills}
    rng = random.Random(settings.seed)
    order = [i for _ in range(settings.epochs) for i in rng.sample(range(len(lists)), len(lists))]
    per_batch = max(1, settings.batch_size // 4)
    batches = [[lists[i] for i in order[s : s + per_batch]] for s in range(0, len(order), per_batch)]
    model = CrossEncoder(base_model, num_labels=1, max_length=settings.max_seq_length, device=training_device())
    enable_gpu_settings(model)
    loss = reranker_loss(variant.loss)
    fingerprint = digest(json.dumps([asdict(variant), asdict(settings), base_model,
                                     [[lst.skill_ids for lst in b] for b in batches]]))
    checkpoint = out_dir.with_name(f"{out_dir.name}.checkpoint.pt")
    outcome = run_training(model, batches, lambda b: reranker_batch_loss(model, loss, b, rr_texts),
                           OptimConfig(variant.learning_rate, checkpoint_every=settings.checkpoint_every),
                           checkpoint, fingerprint, log)
    card = {"kind": "reranker", **asdict(variant), "base_model": base_model, "first_stage": first_stage_model,
            "train_queries": len(queries), **asdict(settings), "wall_s": outcome.wall_s,
            "skip_partner_items": sum(1 for lst in lists for lab in lst.labels if lab == 1)}
    return _finish(model, out_dir, checkpoint, card, outcome)
