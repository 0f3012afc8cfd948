"""Training stage: the embedder and reranker, one partition per recipe variant.

Models are files (sentence-transformers folders under ``models/`` beside the DuckDB file); the
``embedder`` and ``reranker`` tables are registries with one row per trained variant. The steps
carry a ``skill_assets/compute: gpu`` tag so a deployment can route them to a GPU pool.
"""

import json
import random
from datetime import datetime, timezone

import dagster as dg
import numpy as np
import polars as pl

from skill_assets.defs.resources import DUCKDB_WRITER_TAG, DuckDBStore, ModelSettings
from skill_assets.defs.training.partitions import embedder_variants, reranker_variants
from skill_assets.lib import store as store_lib
from skill_assets.lib.embedder_training import build_loss as embedder_loss
from skill_assets.lib.embedder_training import embedder_batch_loss, make_batches, make_examples
from skill_assets.lib.hard_negatives import mine_r3_negatives, mine_skillrouter_negatives
from skill_assets.lib.hashing import digest
from skill_assets.lib.reranker_training import build_list, reranker_batch_loss, shuffled_skip_partners
from skill_assets.lib.reranker_training import build_loss as reranker_loss
from skill_assets.lib.retrieval import bm25_rank, dense_rank
from skill_assets.lib.skill_text import ENCODER_CAPS, RERANKER_CAPS, skill_document
from skill_assets.lib.tables import frame
from skill_assets.lib.training_loop import OptimConfig, enable_gpu_settings, run_training
from skill_assets.lib.variants import EMBEDDER_VARIANTS, RERANKER_VARIANTS

GROUP = "training"
TRAINING_TAGS = {**DUCKDB_WRITER_TAG, "skill_assets/compute": "gpu"}


class TrainingSettings(dg.Config):
    epochs: int = 1
    batch_size: int = 16
    max_seq_length: int = 256
    checkpoint_every: int = 20
    seed: int = 0


def _train_data(store: DuckDBStore) -> tuple[list[dict], list[dict]]:
    queries = store.query("SELECT * FROM benchmark_queries WHERE split = 'train' ORDER BY query_id").to_dicts()
    if not queries:
        raise dg.Failure("benchmark_queries has no train queries: every WRITE was excluded or SKIPped "
                         "(see query_audit.reasons); nothing to train on")
    skills = store.query("""SELECT s.skill_id, s.name, s.description, s.body, p.super_domain FROM skills s
                            JOIN skill_pools p USING (skill_id) WHERE p.pool = 'train' ORDER BY skill_id""").to_dicts()
    return queries, skills


def _register(store: DuckDBStore, table: str, row: dict) -> None:
    store_lib.upsert_rows(store.path, table, frame(table, [row]), "variant")


def _save(model, path, card: dict) -> None:
    model.save(str(path))
    (path / "skill_assets_card.json").write_text(json.dumps(card, indent=2, default=str))


@dg.asset(group_name=GROUP, kinds={"pytorch", "sentence_transformers"}, partitions_def=embedder_variants,
          deps=["benchmark_queries"], op_tags=TRAINING_TAGS)
def embedder(context: dg.AssetExecutionContext, config: TrainingSettings, store: DuckDBStore, models: ModelSettings):
    """A fine-tuned bi-encoder for the partition's recipe (R3 multi-positive InfoNCE by default)."""
    variant = EMBEDDER_VARIANTS[context.partition_key]
    queries, skills = _train_data(store)
    index = {s["skill_id"]: i for i, s in enumerate(skills)}
    texts = {s["skill_id"]: skill_document(s["name"], s["description"], s["body"], ENCODER_CAPS) for s in skills}
    teacher = models.load_embedder(models.teacher)
    skill_emb = teacher.encode([texts[s["skill_id"]] for s in skills], normalize_embeddings=True)
    query_emb = teacher.encode([models.query_prompt + q["query"] for q in queries], normalize_embeddings=True)
    positives = [[index[s] for s in q["skill_ids"] if s in index] for q in queries]
    negatives: dict[str, list[str]] = {}
    if variant.negatives == "skillrouter":
        bm25 = bm25_rank(list(texts), list(texts.values()), [q["query"] for q in queries], 20)
        mined, removed = mine_skillrouter_negatives(query_emb, skill_emb, skills, positives,
                                                    [[index[s] for s, _ in r] for r in bm25], config.seed)
        negatives = {q["query_id"]: [skills[j]["skill_id"] for j in m] for q, m in zip(queries, mined)}
    else:
        mined, removed = mine_r3_negatives(query_emb, skill_emb, skills, positives)
        for q, j in zip(queries, mined):
            partners = [p for p in q["skip_partners"] if p in index] if variant.negatives == "skip_partner" else []
            negatives[q["query_id"]] = partners[:1] or ([skills[j]["skill_id"]] if j is not None else [])
    del teacher
    model = models.load_embedder()
    model.max_seq_length = config.max_seq_length
    enable_gpu_settings(model)
    loss = embedder_loss(variant.loss, variant.temperature, variant.sibling_weight)
    batches = make_batches(make_examples(queries, negatives, config.seed), config.batch_size, config.epochs, config.seed)
    out_dir = store.artifacts_dir / "models" / "embedder" / variant.name
    fingerprint = digest(json.dumps([variant.__dict__, config.model_dump(), [b.queries for b in batches]], default=str))
    outcome = run_training(model, batches, lambda b: embedder_batch_loss(model, loss, b, texts, models.query_prompt),
                           OptimConfig(variant.learning_rate, checkpoint_every=config.checkpoint_every),
                           out_dir.with_name(f"{variant.name}.checkpoint.pt"), fingerprint, context.log.info)
    card = {"variant": variant.name, "ablation": variant.ablation, "base_model": models.embedder, "loss": variant.loss,
            "temperature": variant.temperature, "sibling_weight": variant.sibling_weight,
            "negatives": variant.negatives, "train_queries": len(queries), **config.model_dump(),
            "wall_s": outcome.wall_s, "negatives_removed": dict(removed)}
    _save(model, out_dir, card)
    out_dir.with_name(f"{variant.name}.checkpoint.pt").unlink(missing_ok=True)
    _register(store, "embedder", {"variant": variant.name, "path": str(out_dir), "base_model": models.embedder,
                                  "loss": variant.loss, "train_queries": len(queries), "steps": outcome.steps,
                                  "final_loss": outcome.losses[-1] if outcome.losses else None,
                                  "wall_s": outcome.wall_s, "trained_at": datetime.now(timezone.utc)})
    return dg.MaterializeResult(metadata={
        "path": dg.MetadataValue.path(str(out_dir)), "train_queries": len(queries), "steps": outcome.steps,
        "resumed_from_step": outcome.resumed_from_step, "final_loss": outcome.losses[-1] if outcome.losses else None,
        "wall_s": round(outcome.wall_s, 2), **{f"negatives_removed/{k}": v for k, v in removed.items()}})


def latest_model_path(store: DuckDBStore, table: str, variant: str) -> str | None:
    if not store.exists(table):
        return None
    rows = store.query(f"SELECT path FROM {table} WHERE variant = ? ORDER BY trained_at DESC LIMIT 1", [variant])
    return rows["path"][0] if rows.height else None


@dg.asset(group_name=GROUP, kinds={"pytorch", "sentence_transformers"}, partitions_def=reranker_variants,
          deps=["benchmark_queries", dg.AssetDep("embedder", partition_mapping=dg.AllPartitionMapping())],
          op_tags=TRAINING_TAGS)
def reranker(context: dg.AssetExecutionContext, config: TrainingSettings, store: DuckDBStore, models: ModelSettings):
    """A fine-tuned cross-encoder for the partition's recipe (R3 graded ListNet by default)."""
    from sentence_transformers import CrossEncoder

    from skill_assets.lib.training_loop import training_device

    variant = RERANKER_VARIANTS[context.partition_key]
    queries, skills = _train_data(store)
    enc_texts = [skill_document(s["name"], s["description"], s["body"], ENCODER_CAPS) for s in skills]
    rr_texts = {s["skill_id"]: skill_document(s["name"], s["description"], s["body"], RERANKER_CAPS) for s in skills}
    first_stage_path = latest_model_path(store, "embedder", "r3") or models.embedder
    encoder = models.load_embedder(first_stage_path)
    ids = [s["skill_id"] for s in skills]
    top = dense_rank(ids, encoder.encode(enc_texts, normalize_embeddings=True),
                     encoder.encode([models.query_prompt + q["query"] for q in queries], normalize_embeddings=True),
                     variant.list_size)
    del encoder
    shuffled = shuffled_skip_partners(queries, config.seed) if variant.skip_labels == "shuffled" else {}
    lists = []
    for q, ranking in zip(queries, top):
        partners = {"graded": q["skip_partners"], "shuffled": shuffled.get(q["query_id"], []), "none": []}[variant.skip_labels]
        lists.append(build_list(q["query"], list(q["skill_ids"]), [p for p in partners if p in rr_texts],
                                [sid for sid, _ in ranking], variant.list_size))
    rng = random.Random(config.seed)
    order = [i for _ in range(config.epochs) for i in rng.sample(range(len(lists)), len(lists))]
    per_batch = max(1, config.batch_size // 4)
    batches = [[lists[i] for i in order[s : s + per_batch]] for s in range(0, len(order), per_batch)]
    model = CrossEncoder(models.reranker_base, num_labels=1, max_length=config.max_seq_length, device=training_device())
    enable_gpu_settings(model)
    loss = reranker_loss(variant.loss)
    out_dir = store.artifacts_dir / "models" / "reranker" / variant.name
    fingerprint = digest(json.dumps([variant.__dict__, config.model_dump(), [[l.skill_ids for l in b] for b in batches]],
                                    default=str))
    outcome = run_training(model, batches, lambda b: reranker_batch_loss(model, loss, b, rr_texts),
                           OptimConfig(variant.learning_rate, checkpoint_every=config.checkpoint_every),
                           out_dir.with_name(f"{variant.name}.checkpoint.pt"), fingerprint, context.log.info)
    card = {"variant": variant.name, "ablation": variant.ablation, "base_model": models.reranker_base,
            "loss": variant.loss, "skip_labels": variant.skip_labels, "list_size": variant.list_size,
            "first_stage": first_stage_path, "train_queries": len(queries), **config.model_dump(), "wall_s": outcome.wall_s}
    _save(model, out_dir, card)
    out_dir.with_name(f"{variant.name}.checkpoint.pt").unlink(missing_ok=True)
    _register(store, "reranker", {"variant": variant.name, "path": str(out_dir), "base_model": models.reranker_base,
                                  "loss": variant.loss, "train_queries": len(queries), "steps": outcome.steps,
                                  "final_loss": outcome.losses[-1] if outcome.losses else None,
                                  "wall_s": outcome.wall_s, "trained_at": datetime.now(timezone.utc)})
    n_partner = sum(1 for l in lists for lab in l.labels if lab == 1)
    return dg.MaterializeResult(metadata={
        "path": dg.MetadataValue.path(str(out_dir)), "train_lists": len(lists), "skip_partner_items": n_partner,
        "steps": outcome.steps, "resumed_from_step": outcome.resumed_from_step,
        "final_loss": outcome.losses[-1] if outcome.losses else None, "wall_s": round(outcome.wall_s, 2)})
