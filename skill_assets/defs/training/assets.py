"""Training stage: the embedder and reranker, one partition per recipe variant.

Models are files (sentence-transformers folders under ``models/`` beside the DuckDB file); the
``embedder`` and ``reranker`` tables are registries with one row per trained variant. The steps
carry a ``skill_assets/compute: gpu`` tag so a deployment can route them to a GPU pool; bf16 and
gradient checkpointing switch on by themselves when CUDA is present.

When the run's corpus holds the curated benchmark's skills (``lib/training/curated_training``),
its train split joins the pipeline's train queries and its dev split picks the checkpoint, unless
the config says ``curated: false``; each model card says which queries the model saw.
"""
from collections.abc import Callable
from datetime import UTC, datetime

import dagster as dg
from pydantic import Field

from skill_assets.defs.metadata import table_metadata
from skill_assets.defs.resources import DUCKDB_WRITER_TAG, DuckDBStore, ModelSettings
from skill_assets.defs.training.partitions import embedder_variants, reranker_variants
from skill_assets.lib.models import model_registry as registry
from skill_assets.lib.common.provenance import code_version, release_version
from skill_assets.lib.common.tables import frame
from skill_assets.lib.evaluation.curated_benchmark import load_requests
from skill_assets.lib.retrieval.requests import UnresolvedSkillIds
from skill_assets.lib.retrieval.store_skills import skills_from_rows
from skill_assets.lib.training.curated_training import (
    TrainingData,
    corpus_holds_curated,
    curated_data_version,
    pipeline_only,
    with_curated,
)
from skill_assets.lib.training.model_training import (
    MINING_RULES,
    TrainedModel,
    TrainingSettings,
    load_bi_encoder,
    mine_negatives,
    mining_rule,
    train_embedder,
    train_reranker,
)
from skill_assets.lib.training.training_queries import training_queries
from skill_assets.lib.training.variants import EMBEDDER_VARIANTS, RERANKER_VARIANTS

GROUP = "training"
TRAINING_TAGS = {**DUCKDB_WRITER_TAG, "skill_assets/compute": "gpu"}


class TrainingConfig(dg.Config):
    epochs: int = 1
    batch_size: int = 16
    max_seq_length: int = 256
    checkpoint_every: int = 20
    seed: int = 0
    dev_fraction: float = Field(default=0.1, description="share of train queries held out to pick the best "
                                "checkpoint when benchmark_queries has no dev split")
    dev_evaluations: int = Field(default=10, description="held-out evaluations over a run (plus one at the start)")
    curated: bool = Field(default=True, description="when the corpus holds the curated benchmark's skills, train "
                          "on its train split too and pick the checkpoint on its dev split")

    def settings(self, models: ModelSettings) -> TrainingSettings:
        return TrainingSettings(self.epochs, self.batch_size, self.max_seq_length, self.checkpoint_every, self.seed,
                                models.query_prompt, self.dev_fraction, self.dev_evaluations)


def provenance(store: DuckDBStore, data: TrainingData) -> dict:
    """The versions benchmark_metrics stamps on its figures and which queries trained and selected the model,
    so a model card names the data it saw."""
    return {"data_version": release_version(store.read("benchmark_queries")), "code_version": code_version(),
            "training_data": data.card}


def train_data(store: DuckDBStore, config: TrainingConfig, log: Callable[[str], None] | None = None) -> TrainingData:
    """Train queries, dev queries (empty unless the splits or the curated benchmark made some) and the skills
    they are trained and selected over: the pipeline's, joined by the curated benchmark's where it applies."""
    queries, dev = (training_queries(store.query("SELECT * FROM benchmark_queries WHERE split = ? ORDER BY query_id",
                                                 [split]).iter_rows(named=True)) for split in ("train", "dev"))
    rows = store.query("""SELECT s.skill_id, s.name, s.description, s.body, p.pool FROM skills s
                          JOIN skill_pools p USING (skill_id) ORDER BY skill_id""")
    skills = skills_from_rows(rows.iter_rows(named=True))
    train_pool = [s for s, pool in zip(skills, rows["pool"]) if pool == "train"]
    data = pipeline_only(queries, dev, train_pool, "off (config curated: false)")
    if config.curated:
        requests = load_requests()
        raw = store.query("""SELECT r.skill_id, coalesce(d.kept_skill_id, r.skill_id) AS kept FROM raw_skills r
                             LEFT JOIN skill_duplicates d ON d.duplicate_skill_id = r.skill_id""")
        kept_of = dict(zip(raw["skill_id"].to_list(), raw["kept"].to_list()))
        try:
            holds = corpus_holds_curated(requests, set(kept_of))
        except UnresolvedSkillIds as exc:
            raise dg.Failure(str(exc)) from exc
        data = (with_curated(queries, dev, train_pool, {s.id: s for s in skills}, requests, kept_of,
                             curated_data_version(requests)) if holds
                else pipeline_only(queries, dev, train_pool, "not in this corpus (none of its skill ids is)"))
    if log:
        log(f"training data: {data.card}")
    if not data.train:
        raise dg.Failure("no train queries: every WRITE was excluded or SKIPped (see query_audit.reasons) and the "
                         "curated benchmark does not apply; nothing to train on")
    return data


def _register(store: DuckDBStore, table: str, variant: str, base: str, loss: str,
              trained: TrainedModel) -> dg.MaterializeResult:
    """One registry row per variant; metadata adds the held-out selection and the mining filter counts."""
    n_queries = trained.card["train_queries"]
    registry.register(store.path, table, frame(table, [{
        "variant": variant, "path": str(trained.path), "base_model": base, "loss": loss, "train_queries": n_queries,
        "steps": trained.steps, "final_loss": trained.final_loss, "wall_s": trained.wall_s,
        "trained_at": datetime.now(UTC)}]))
    extra = {f"negatives_removed/{k}": v for k, v in trained.card.get("negatives_removed", {}).items()}
    return dg.MaterializeResult(metadata={
        "path": dg.MetadataValue.path(str(trained.path)), "train_queries": n_queries, "steps": trained.steps,
        "resumed_from_step": trained.resumed_from_step, "final_loss": trained.final_loss,
        "wall_s": round(trained.wall_s, 2), "dev_queries": trained.card["dev_queries"],
        "selected_step": trained.card["selected_step"], "card": dg.MetadataValue.json(trained.card), **extra})


@dg.asset(group_name=GROUP, kinds={"duckdb", "sentence_transformers"},
          deps=["benchmark_queries", "skill_pools", "skill_duplicates"], op_tags=DUCKDB_WRITER_TAG)
def hard_negatives(context: dg.AssetExecutionContext, config: TrainingConfig, store: DuckDBStore,
                   models: ModelSettings):
    """Hard negatives of every train query by each mining rule, after the three-layer false-negative filter."""
    data = train_data(store, config, context.log.info)
    super_domain = dict(store.query("SELECT skill_id, super_domain FROM skill_pools").iter_rows())
    teacher = load_bi_encoder(models.teacher, config.max_seq_length)
    rows, removed = [], {}
    for rule in MINING_RULES:
        mined, counts = mine_negatives(rule, data.train, data.skills, teacher, models.query_prompt, config.seed,
                                       super_domain=super_domain)
        rows += [{"rule": rule, "query_id": qid, "position": i + 1, "skill_id": sid, "teacher_model": models.teacher}
                 for qid, negatives in mined.items() for i, sid in enumerate(negatives)]
        removed |= {f"removed/{rule}/{layer}": n for layer, n in counts.items()}
        context.log.info(f"{rule}: {sum(len(v) for v in mined.values())} negatives for {len(mined)} queries")
    df = frame("hard_negatives", rows)
    store.write("hard_negatives", df)
    return dg.MaterializeResult(metadata=table_metadata("hard_negatives", df, teacher=models.teacher, **removed,
                                                        training_data=dg.MetadataValue.json(data.card)))


def mined_negatives(store: DuckDBStore, rule: str) -> dict[str, list[str]]:
    rows = store.query("SELECT query_id, list(skill_id ORDER BY position) AS negatives FROM hard_negatives "
                       "WHERE rule = ? GROUP BY query_id", [rule])
    return dict(zip(rows["query_id"].to_list(), rows["negatives"].to_list()))


@dg.asset(group_name=GROUP, kinds={"pytorch", "sentence_transformers"}, partitions_def=embedder_variants,
          deps=["benchmark_queries", "hard_negatives"], op_tags=TRAINING_TAGS)
def embedder(context: dg.AssetExecutionContext, config: TrainingConfig, store: DuckDBStore, models: ModelSettings):
    """A fine-tuned bi-encoder for the partition's recipe (R3 multi-positive InfoNCE by default)."""
    variant = EMBEDDER_VARIANTS[context.partition_key]
    data = train_data(store, config, context.log.info)
    trained = train_embedder(variant, data.train, data.skills, models.embedder, models.teacher,
                             store.artifacts_dir / "models" / "embedder" / variant.name, config.settings(models),
                             context.log.info, data.dev, provenance(store, data),
                             mined=mined_negatives(store, mining_rule(variant)))
    return _register(store, "embedder", variant.name, models.embedder, variant.loss, trained)


@dg.asset(group_name=GROUP, kinds={"pytorch", "sentence_transformers"}, partitions_def=reranker_variants,
          deps=["benchmark_queries", dg.AssetDep("embedder", partition_mapping=dg.AllPartitionMapping())],
          op_tags=TRAINING_TAGS)
def reranker(context: dg.AssetExecutionContext, config: TrainingConfig, store: DuckDBStore, models: ModelSettings):
    """A fine-tuned cross-encoder for the partition's recipe (R3 graded ListNet by default)."""
    variant = RERANKER_VARIANTS[context.partition_key]
    data = train_data(store, config, context.log.info)
    first_stage = registry.newest_path(store.path, registry.EMBEDDER) or models.embedder
    trained = train_reranker(variant, data.train, data.skills, models.reranker_base, first_stage,
                             store.artifacts_dir / "models" / "reranker" / variant.name, config.settings(models),
                             context.log.info, data.dev, provenance(store, data))
    return _register(store, "reranker", variant.name, models.reranker_base, variant.loss, trained)
