"""The weekly benchmark rebuild: re-ingest, regenerate (cache makes unchanged prompts free) and re-evaluate."""
import dagster as dg

benchmark_rebuild_job = dg.define_asset_job(
    "benchmark_rebuild",
    selection=dg.AssetSelection.all() - dg.AssetSelection.assets("embedder", "reranker"),
    description="Every unpartitioned asset; evaluation uses the newest trained models in the registry.",
)

weekly_benchmark_rebuild = dg.ScheduleDefinition(
    name="weekly_benchmark_rebuild", job=benchmark_rebuild_job, cron_schedule="0 3 * * 1",
    default_status=dg.DefaultScheduleStatus.STOPPED,
)
