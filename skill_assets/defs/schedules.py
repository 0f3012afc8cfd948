"""The weekly benchmark rebuild.

Dagster runs one partitions definition per run, so the rebuild is two-part: the schedule runs
the unpartitioned upstream stretch (ingest → combinations); everything downstream that should
follow (generation per direction, audit, taxonomy, splits, evaluation, report) carries an eager
automation condition and is materialized by the automation sensor as soon as its parents update.
Unchanged prompts come from the response cache, so a rebuild pays only for new combinations.
Training is deliberately not automatic: retrain from the UI or the CLI; evaluation uses the
newest models in the registries.
"""
import dagster as dg

AUTOMATED_ASSETS = ["llm_records", "query_audit", "skip_taxonomy", "benchmark_queries", "retrieval_runs",
                    "benchmark_metrics", "benchmark_report"]

benchmark_rebuild_job = dg.define_asset_job(
    "benchmark_rebuild",
    selection=dg.AssetSelection.assets("skill_combinations").upstream().required_multi_asset_neighbors(),
    description="Ingest, dedup, neighbourhoods and sampling; downstream assets follow through automation.",
)

weekly_benchmark_rebuild = dg.ScheduleDefinition(
    name="weekly_benchmark_rebuild", job=benchmark_rebuild_job, cron_schedule="0 3 * * 1",
    default_status=dg.DefaultScheduleStatus.STOPPED,
)


#: read when present, never waited for: external benchmarks are optional partitions a user adds, the
#: human review (label_agreement) runs at the reviewers' pace, and the router fusion is fitted by hand
#: like the models (evaluation scores the newest one)
OPTIONAL_PARENTS = dg.AssetSelection.assets("external_metrics", "label_agreement", "router_fusion")


def follow_upstream(spec: dg.AssetSpec) -> dg.AssetSpec:
    return spec.replace_attributes(automation_condition=dg.AutomationCondition.eager().ignore(OPTIONAL_PARENTS))
