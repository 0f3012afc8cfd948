"""Corpus stage: ingest raw SKILL.md files, quarantine bad input, deduplicate in layers.

Both steps record the sources that ``raw_skills`` was actually read from (``corpus_sources``), and
dedup fails, naming both, if another run replaced ``raw_skills`` with other sources in between.
"""

import dagster as dg

from skill_assets.defs.metadata import table_metadata
from skill_assets.defs.resources import DUCKDB_WRITER_TAG, DuckDBStore, SkillSources
from skill_assets.lib.common.tables import frame
from skill_assets.lib.corpus.corpus_store import dedup_in_store, ingest_into_store, sources_read
from skill_assets.lib.corpus.dedup import DedupConfig
from skill_assets.lib.corpus.workspace import ingest_workdir


def _sources_metadata(rows: list[dict]) -> dg.MetadataValue:
    """The sources read, as a Markdown table (name, kind, location, commit, files seen)."""
    lines = ["| source | kind | location | commit | files_seen |", "|---|---|---|---|---|"]
    lines += [f"| {r['source']} | {r['kind']} | {r['location']} | {r['commit'] or ''} | {r['files_seen']} |"
              for r in rows]
    return dg.MetadataValue.md("\n".join(lines))

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
    specs = sources.sources()
    with ingest_workdir() as (workdir, stale):
        for path in stale:
            context.log.info(f"removed {path}, left behind by a killed ingest")
        result = ingest_into_store(store.path, specs, workdir, sources.max_file_bytes, sources.workers,
                                   sources.archive_limits(), on_wait=context.log.info)
    raw, rejects = store.query("SELECT * EXCLUDE (body) FROM raw_skills"), frame("ingest_rejects", result.rejects)
    context.log.info(f"{result.files_seen} files: {raw.height} parsed, {len(result.rejects)} rejects")
    reasons = rejects.group_by("reason").len().sort("reason").to_dicts()
    yield dg.MaterializeResult(asset_key="raw_skills", metadata=table_metadata(
        "raw_skills", raw, files_seen=result.files_seen, sources=", ".join(s.name for s in specs),
        sources_read=_sources_metadata(result.sources_read)))
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
    specs = sources.sources()
    skills, dups = dedup_in_store(store.path, [s.name for s in specs], DedupConfig(
        config.shingle_size, config.num_perm, config.bands, config.jaccard_threshold),
        expected_sources=specs, on_wait=context.log.info)
    read = sources_read(store.path).to_dicts()
    layers = dups.group_by("layer").len().sort("layer").to_dicts()
    yield dg.MaterializeResult(asset_key="skills", metadata=table_metadata(
        "skills", skills, file_operation_skills=int(skills["file_operation_rule"].is_not_null().sum()),
        sources_read=_sources_metadata(read),
        **{f"language/{r['language']}": r["len"] for r in skills.group_by("language").len().to_dicts()}))
    yield dg.MaterializeResult(asset_key="skill_duplicates", metadata=table_metadata(
        "skill_duplicates", dups, **{f"layer/{r['layer']}": r["len"] for r in layers}))
