"""Corpus stage: ingest raw SKILL.md files, quarantine bad input, deduplicate in layers."""

import tempfile
from pathlib import Path

import dagster as dg

from skill_assets.defs.metadata import table_metadata
from skill_assets.defs.resources import DUCKDB_WRITER_TAG, DuckDBStore, SkillSources
from skill_assets.lib.common.tables import frame
from skill_assets.lib.corpus.corpus_store import dedup_in_store, ingest_into_store
from skill_assets.lib.corpus.dedup import DedupConfig

GROUP = "corpus"


@dg.multi_asset(
    specs=[
        dg.AssetSpec("raw_skills", group_name=GROUP, kinds={"duckdb"}, description="Every parsed SKILL.md."),
        dg.AssetSpec("ingest_rejects", group_name=GROUP, kinds={"duckdb"},
                     description="Quarantined files and unreadable sources, each with a reason code."),
    ],
    op_tags=DUCKDB_WRITER_TAG,
)
def ingested_skills(context: dg.AssetExecutionContext, store: DuckDBStore, sources: SkillSources):
    with tempfile.TemporaryDirectory(prefix="skill-assets-ingest-") as workdir:
        result = ingest_into_store(store.path, sources.sources(), Path(workdir), sources.max_file_bytes,
                                   sources.workers)
    raw, rejects = store.query("SELECT * EXCLUDE (body) FROM raw_skills"), frame("ingest_rejects", result.rejects)
    context.log.info(f"{result.files_seen} files: {raw.height} parsed, {len(result.rejects)} rejects")
    reasons = rejects.group_by("reason").len().sort("reason").to_dicts()
    yield dg.MaterializeResult(asset_key="raw_skills", metadata=table_metadata(
        "raw_skills", raw, files_seen=result.files_seen, sources=", ".join(s.name for s in sources.sources())))
    yield dg.MaterializeResult(asset_key="ingest_rejects", metadata=table_metadata(
        "ingest_rejects", rejects, **{f"reason/{r['reason']}": r["len"] for r in reasons}))


class DedupSettings(dg.Config):
    shingle_size: int = 5
    num_perm: int = 64
    bands: int = 16
    jaccard_threshold: float = 0.7


@dg.multi_asset(
    specs=[
        dg.AssetSpec("skills", group_name=GROUP, kinds={"duckdb"}, deps=["raw_skills"],
                     description="Deduplicated skills, with generic file-format handlers flagged."),
        dg.AssetSpec("skill_duplicates", group_name=GROUP, kinds={"duckdb"}, deps=["raw_skills"],
                     description="Each folded raw skill → the kept skill and the dedup layer."),
    ],
    op_tags=DUCKDB_WRITER_TAG,
)
def deduplicated_skills(context: dg.AssetExecutionContext, config: DedupSettings, store: DuckDBStore,
                        sources: SkillSources):
    skills, dups = dedup_in_store(store.path, [s.name for s in sources.sources()], DedupConfig(
        config.shingle_size, config.num_perm, config.bands, config.jaccard_threshold))
    layers = dups.group_by("layer").len().sort("layer").to_dicts()
    yield dg.MaterializeResult(asset_key="skills", metadata=table_metadata(
        "skills", skills, file_operation_skills=int(skills["file_operation_rule"].is_not_null().sum()),
        **{f"language/{r['language']}": r["len"] for r in skills.group_by("language").len().to_dicts()}))
    yield dg.MaterializeResult(asset_key="skill_duplicates", metadata=table_metadata(
        "skill_duplicates", dups, **{f"layer/{r['layer']}": r["len"] for r in layers}))
