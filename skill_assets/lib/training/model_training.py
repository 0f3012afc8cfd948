"""Train one embedder or reranker variant end to end: mine negatives, build batches, train, save.

Framework-free so the Dagster assets, the smoke benchmark and the tests share one code path.
Queries are ``TrainingQuery``s and skills the engine's ``Skill``s; the SkillRouter mining rule also
reads each skill's super-domain (``super_domain``, by skill id). The saved folder loads with ``SentenceTransformer(path)`` / ``CrossEncoder(path)``
and carries ``skill_assets_card.json`` (base model, variant, loss, hyper-parameters, timing,
held-out figures, and the caller's ``provenance``: data and code versions).

The benchmark's dev queries, or where it has none a fixed share of the training queries
(``dev_fraction``, picked by a seeded hash of the query id), are held out from training; the loop scores NDCG@10 on it over the training pool and keeps the best
weights, the starting model included (see ``training_loop``). Test queries are never looked at.
"""
from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.core.metrics import run_means
from skill_assets.lib.core.runs import Qrels, Ranking, Run
from skill_assets.lib.core.skill_text import ENCODER_CAPS, RERANKER_CAPS, TextCaps, skill_document
from skill_assets.lib.retrieval.lexical import LexicalIndex
from skill_assets.lib.retrieval.pools import Skill
from skill_assets.lib.retrieval.ranking import rerank, top_k_rankings
from skill_assets.lib.retrieval.signals import lexical_document
from skill_assets.lib.training.embedder_training import build_loss as embedder_loss
from skill_assets.lib.training.embedder_training import (
    embedder_batch_loss,
    make_batches,
    make_examples,
)
from skill_assets.lib.training.hard_negatives import (
    mine_r3_negatives,
    mine_skillrouter_negatives,
)
from skill_assets.lib.training.reranker_training import (
    build_list,
    reranker_batch_loss,
    shuffled_skip_partners,
)
from skill_assets.lib.training.reranker_training import build_loss as reranker_loss
from skill_assets.lib.training.training_loop import (
    OptimConfig,
    enable_gpu_settings,
    evaluation_interval,
    run_training,
    training_device,
)
from skill_assets.lib.training.training_queries import TrainingQuery
from skill_assets.lib.training.variants import EmbedderVariant, RerankerVariant


@dataclass(frozen=True)
class TrainingSettings:
    epochs: int = 1
    batch_size: int = 16
    max_seq_length: int = 256
    checkpoint_every: int = 20
    seed: int = 0
    query_prompt: str = ""
    dev_fraction: float = 0.1
    dev_evaluations: int = 10


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


@contextmanager
def truncated(model, length: int | None) -> Iterator[None]:
    """Cap the model's input length (``max_seq_length``, bi- and cross-encoders alike) for a training step only.

    ``TrainingSettings.max_seq_length`` trades context for speed while training; the saved model
    and its held-out scoring keep the base model's own length, so a smoke setting never changes
    how the trained model reads skills at serving time."""
    native = model.max_seq_length
    if length:
        model.max_seq_length = min(native, length) if native else length
    try:
        yield
    finally:
        model.max_seq_length = native


def dev_slice(queries: list[TrainingQuery], fraction: float, seed: int
              ) -> tuple[list[TrainingQuery], list[TrainingQuery]]:
    """(train, dev): ``round(fraction · n)`` queries held out, none when that is 0 or all of them.

    The choice hashes each query id with the seed, so it does not move when queries are reordered
    or added elsewhere, and the embedder and the reranker hold out the same queries."""
    n_dev = round(len(queries) * fraction)
    if n_dev == 0 or n_dev >= len(queries):
        return queries, []
    held = {q.id for q in sorted(queries, key=lambda q: digest(f"{seed}:{q.id}"))[:n_dev]}
    return [q for q in queries if q.id not in held], [q for q in queries if q.id in held]


def _ndcg10(rankings: list[Ranking], queries: list[TrainingQuery]) -> float:
    """Held-out NDCG@10; a query that names copies (``groups``, the curated dev split) is scored on its
    groups, as the evaluation stage scores it."""
    ids = [q.id for q in queries]
    return run_means(Run.of(ids, rankings), Qrels.of(ids, [q.scored_groups for q in queries]), (10,))["ndcg@10"]


RERANK_DEPTH = 20  # the first-stage candidates a reranker rescores (both papers)


def documents(skills: Sequence[Skill], caps: TextCaps) -> list[str]:
    """Each skill's document as a model of these ``caps`` reads it, in the skills' order."""
    return [skill_document(s.name, s.description, s.body, caps) for s in skills]


def documents_by_id(skills: Sequence[Skill], caps: TextCaps) -> dict[str, str]:
    """``documents`` by skill id: what a training step looks a batch's skills up in."""
    return dict(zip([s.id for s in skills], documents(skills, caps)))


def first_stage_rankings(first_stage, skills: Sequence[Skill], queries: list[TrainingQuery], query_prompt: str,
                         depth: int) -> list:
    docs = documents(skills, ENCODER_CAPS)
    sims = (first_stage.encode([query_prompt + q.query for q in queries], normalize_embeddings=True)
            @ first_stage.encode(docs, normalize_embeddings=True).T)
    return top_k_rankings(sims, [s.id for s in skills], depth)


def embedder_ndcg10(model, skills: Sequence[Skill], queries: list[TrainingQuery], query_prompt: str = "") -> float:
    """NDCG@10 of a bi-encoder retrieving the queries' ground truth from ``skills``."""
    runs = first_stage_rankings(model, skills, queries, query_prompt, 10)
    return _ndcg10(runs, queries)


def _selection_card(outcome, dev: list[TrainingQuery]) -> dict:
    return {"dev_queries": len(dev), "dev_ndcg10_by_step": outcome.dev_scores, "selected_step": outcome.selected_step}


def model_card(card: dict) -> str:
    """README.md for the saved folder. sentence-transformers would keep the base model's card, which
    describes a different model; this one says what was trained, on which data, and how it scored."""
    front = {"library_name": "sentence-transformers", "base_model": card["base_model"],
             "pipeline_tag": "sentence-similarity" if card["kind"] == "embedder" else "text-ranking",
             "tags": ["skill-routing", "skill-assets", f"variant-{card['name']}"]}
    rows = "\n".join(f"| `{k}` | {json.dumps(v, default=str)} |" for k, v in card.items())
    selected = card.get("selected_step")
    data = card.get("training_data", {})
    sources = ", ".join(f"{k}: {v}" for k, v in data.get("train_sources", {}).items())
    seen = f" Trained on {card['train_queries']} queries ({sources})." if sources else ""
    dev_source = data.get("dev_source", "held-out set")
    selection = (f"Weights of step {selected} of {card['steps']}, the best NDCG@10 on {card['dev_queries']} queries of "
                 f"the {dev_source} (step 0 is the base model)." if selected is not None
                 else "No held-out queries: the weights after the last step.")
    return (f"---\n{json.dumps(front)}\n---\n\n# skill-assets {card['kind']}: `{card['name']}`\n\n"
            f"The {card['kind']} of skill-assets for routing requests to agent skills, fine-tuned from `{card['base_model']}` with "
            f"`{card['loss']}` (ablation {card['ablation']}).{seen} {selection}\n\n| field | value |\n|---|---|\n{rows}\n")


def _train_and_save(model, batches: list, step_loss: Callable, learning_rate: float, settings: TrainingSettings,
                    out_dir: Path, fingerprint: str, log: Callable[[str], None], dev: list[TrainingQuery],
                    evaluate: Callable[[], float] | None, card: dict) -> TrainedModel:
    """The part both trainers share: steps capped at the training length, checkpoints beside ``out_dir``
    (resumed by ``fingerprint``), held-out selection, then the saved folder with its card."""
    checkpoint = out_dir.with_name(f"{out_dir.name}.checkpoint.pt")

    def batch_loss(batch):
        with truncated(model, settings.max_seq_length):
            return step_loss(batch)

    outcome = run_training(model, batches, batch_loss,
                           OptimConfig(learning_rate, checkpoint_every=settings.checkpoint_every),
                           checkpoint, fingerprint, log, evaluate,
                           evaluation_interval(len(batches), settings.dev_evaluations))
    card = {**card, "wall_s": outcome.wall_s, **_selection_card(outcome, dev), "steps": outcome.steps}
    model.save(str(out_dir))
    (out_dir / "skill_assets_card.json").write_text(json.dumps(card, indent=2, default=str))
    (out_dir / "README.md").write_text(model_card(card), encoding="utf-8")
    checkpoint.unlink(missing_ok=True)
    return TrainedModel(out_dir, outcome.steps, outcome.resumed_from_step,
                        outcome.losses[-1] if outcome.losses else None, outcome.wall_s, card)


#: mining rules, by the name the ``hard_negatives`` table stores (METHOD.md §3)
MINING_RULES = ("r3", "skillrouter")


def mining_rule(variant: EmbedderVariant) -> str:
    """The teacher-mining rule a variant trains with (a SKIP-partner variant falls back to R3's)."""
    return "skillrouter" if variant.negatives == "skillrouter" else "r3"


def mine_negatives(rule: str, queries: list[TrainingQuery], skills: Sequence[Skill], teacher, query_prompt: str = "",
                   seed: int = 0, skill_emb: np.ndarray | None = None,
                   super_domain: Mapping[str, int] | None = None) -> tuple[dict[str, list[str]], Counter]:
    """Per query id, the skill ids the teacher rule picks as hard negatives; and the counts each
    false-negative filter layer removed. ``skill_emb``: the teacher's document vectors, where already computed;
    ``super_domain``: each skill's super-domain by id, which the SkillRouter rule draws two negatives by."""
    if rule not in MINING_RULES:
        raise ValueError(f"unknown mining rule {rule!r}; choose one of {MINING_RULES}")
    if rule == "skillrouter" and super_domain is None:
        raise ValueError("the skillrouter rule draws negatives by super-domain: pass each skill's super_domain")
    index = {s.id: i for i, s in enumerate(skills)}
    if skill_emb is None:
        skill_emb = teacher_documents(teacher, skills)
    query_emb = teacher.encode([query_prompt + q.query for q in queries], normalize_embeddings=True)
    positives = [[index[s] for s in q.skill_ids if s in index] for q in queries]
    if rule == "skillrouter":
        lexical, _ = LexicalIndex.build_or_load([lexical_document(s) for s in skills])
        bm25 = top_k_rankings(lexical.scores([q.query for q in queries]), [s.id for s in skills], 20)
        mined, removed = mine_skillrouter_negatives(query_emb, skill_emb, skills, [super_domain[s.id] for s in skills],
                                                    positives, [[index[s] for s, _ in r] for r in bm25], seed)
        return {q.id: [skills[j].id for j in m] for q, m in zip(queries, mined)}, removed
    mined, removed = mine_r3_negatives(query_emb, skill_emb, skills, positives)
    return {q.id: ([skills[j].id] if j is not None else []) for q, j in zip(queries, mined)}, removed


def teacher_documents(teacher, skills: Sequence[Skill]) -> np.ndarray:
    """The teacher's unit vectors of the skills' encoder documents."""
    return teacher.encode(documents(skills, ENCODER_CAPS), normalize_embeddings=True)


def variant_negatives(variant: EmbedderVariant, queries: list[TrainingQuery], mined: dict[str, list[str]],
                      skills: Sequence[Skill]) -> dict[str, list[str]]:
    """The negatives a variant trains with: its rule's mined ones, or (ablation B) the query's first
    SKIP partner in the pool where it has one."""
    if variant.negatives != "skip_partner":
        return {q.id: mined.get(q.id, []) for q in queries}
    in_pool = {s.id for s in skills}
    return {q.id: [p for p in q.skip_partners if p in in_pool][:1] or mined.get(q.id, []) for q in queries}


def train_embedder(variant: EmbedderVariant, queries: list[TrainingQuery], skills: Sequence[Skill], base_model: str,
                   teacher_model: str, out_dir: Path, settings: TrainingSettings = TrainingSettings(),
                   log: Callable[[str], None] = lambda _: None,
                   dev_queries: list[TrainingQuery] | None = None, provenance: dict | None = None,
                   mined: dict[str, list[str]] | None = None,
                   super_domain: Mapping[str, int] | None = None) -> TrainedModel:
    """``mined``: negatives already mined by the variant's rule (the ``hard_negatives`` asset); without
    them the teacher mines here (``super_domain`` as ``mine_negatives`` takes it)."""
    queries, dev = (queries, dev_queries) if dev_queries else dev_slice(queries, settings.dev_fraction, settings.seed)
    removed: Counter = Counter()
    if mined is None:
        teacher = load_bi_encoder(teacher_model, settings.max_seq_length)
        mined, removed = mine_negatives(mining_rule(variant), queries, skills, teacher, settings.query_prompt,
                                        settings.seed, super_domain=super_domain)
        del teacher
    negatives = variant_negatives(variant, queries, mined, skills)
    texts = documents_by_id(skills, ENCODER_CAPS)
    model = load_bi_encoder(base_model)
    enable_gpu_settings(model)
    loss = embedder_loss(variant.loss, variant.temperature, variant.sibling_weight)
    batches = make_batches(make_examples(queries, negatives, settings.seed), settings.batch_size, settings.epochs,
                           settings.seed)
    fingerprint = digest(json.dumps([asdict(variant), asdict(settings), base_model, [b.queries for b in batches]]))
    evaluate = (lambda: embedder_ndcg10(model, skills, dev, settings.query_prompt)) if dev else None
    card = {"kind": "embedder", **asdict(variant), "base_model": base_model, "teacher": teacher_model,
            "train_queries": len(queries), **asdict(settings), "negatives_removed": dict(removed),
            **(provenance or {})}
    return _train_and_save(model, batches, lambda batch: embedder_batch_loss(model, loss, batch, texts,
                                                                             settings.query_prompt),
                           variant.learning_rate, settings, out_dir, fingerprint, log, dev, evaluate, card)


def reranker_lists(variant: RerankerVariant, queries: list[TrainingQuery], skills: Sequence[Skill], first_stage,
                   settings: TrainingSettings) -> list:
    rr_ids = {s.id for s in skills}
    top = first_stage_rankings(first_stage, skills, queries, settings.query_prompt, variant.list_size)
    shuffled = shuffled_skip_partners(queries, settings.seed) if variant.skip_labels == "shuffled" else {}
    lists = []
    for q, ranking in zip(queries, top):
        partners = {"graded": q.skip_partners, "shuffled": shuffled.get(q.id, []), "none": []}[variant.skip_labels]
        lists.append(build_list(q.query, list(q.skill_ids), [p for p in partners if p in rr_ids],
                                [sid for sid, _ in ranking], variant.list_size))
    return lists


def reranker_ndcg10(model, queries: list[TrainingQuery], first_stage: list, skill_text: dict[str, str]) -> float:
    """NDCG@10 of a cross-encoder rescoring each query's first-stage candidates."""
    runs = rerank([q.query for q in queries], first_stage, skill_text,
                  lambda pairs: model.predict(pairs, show_progress_bar=False), RERANK_DEPTH)
    return _ndcg10(runs, queries)


def train_reranker(variant: RerankerVariant, queries: list[TrainingQuery], skills: Sequence[Skill], base_model: str,
                   first_stage_model: str, out_dir: Path, settings: TrainingSettings = TrainingSettings(),
                   log: Callable[[str], None] = lambda _: None,
                   dev_queries: list[TrainingQuery] | None = None, provenance: dict | None = None) -> TrainedModel:
    from sentence_transformers import CrossEncoder

    queries, dev = (queries, dev_queries) if dev_queries else dev_slice(queries, settings.dev_fraction, settings.seed)
    first_stage = load_bi_encoder(first_stage_model, settings.max_seq_length)
    lists = reranker_lists(variant, queries, skills, first_stage, settings)
    dev_first_stage = first_stage_rankings(first_stage, skills, dev, settings.query_prompt, RERANK_DEPTH) if dev else []
    del first_stage
    rr_texts = documents_by_id(skills, RERANKER_CAPS)
    rng = random.Random(settings.seed)
    order = [i for _ in range(settings.epochs) for i in rng.sample(range(len(lists)), len(lists))]
    per_batch = max(1, settings.batch_size // 4)
    batches = [[lists[i] for i in order[s : s + per_batch]] for s in range(0, len(order), per_batch)]
    model = CrossEncoder(base_model, num_labels=1, device=training_device())
    enable_gpu_settings(model)
    loss = reranker_loss(variant.loss)
    fingerprint = digest(json.dumps([asdict(variant), asdict(settings), base_model,
                                     [[lst.skill_ids for lst in b] for b in batches]]))
    evaluate = (lambda: reranker_ndcg10(model, dev, dev_first_stage, rr_texts)) if dev else None
    card = {"kind": "reranker", **asdict(variant), "base_model": base_model, "first_stage": first_stage_model,
            "train_queries": len(queries), **asdict(settings),
            "skip_partner_items": sum(1 for lst in lists for lab in lst.labels if lab == 1), **(provenance or {})}
    return _train_and_save(model, batches, lambda batch: reranker_batch_loss(model, loss, batch, rr_texts),
                           variant.learning_rate, settings, out_dir, fingerprint, log, dev, evaluate, card)
