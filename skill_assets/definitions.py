"""The one Definitions object: every stage's assets and checks, shared resources, the schedule.

Steps that touch DuckDB carry the ``skill_assets/store: duckdb-writer`` tag and the executor
runs at most one of them at a time, since DuckDB allows one writing process per file.
"""
import warnings

import dagster as dg

from skill_assets.defs import corpus, evaluation, generation, neighbourhoods, review, router, splits, taxonomy, training
from skill_assets.defs.resources import DUCKDB_WRITER_TAG, default_resources
from skill_assets.defs.schedules import (
    AUTOMATED_ASSETS,
    benchmark_rebuild_job,
    follow_upstream,
    weekly_benchmark_rebuild,
)

STAGES = (corpus, neighbourhoods, generation, taxonomy, review, splits, training, router, evaluation)

executor = dg.multiprocess_executor.configured({
    "max_concurrent": 2,
    "tag_concurrency_limits": [{"key": k, "value": v, "limit": 1} for k, v in DUCKDB_WRITER_TAG.items()],
})

with warnings.catch_warnings():
    # map_resolved_asset_specs is marked preview; it is the one place project-wide policy is applied
    warnings.simplefilter("ignore", dg.PreviewWarning)
    defs = dg.Definitions(
        assets=[a for stage in STAGES for a in dg.load_assets_from_package_module(stage)],
        asset_checks=[c for stage in STAGES for c in dg.load_asset_checks_from_package_module(stage)],
        jobs=[benchmark_rebuild_job],
        schedules=[weekly_benchmark_rebuild],
        resources=default_resources(),
        executor=executor,
    ).map_resolved_asset_specs(func=follow_upstream, selection=AUTOMATED_ASSETS)
