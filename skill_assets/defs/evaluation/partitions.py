"""External benchmarks as partitions: one per entry of the benchmarks YAML file.

A static definition read from a file (``$SKILL_ASSETS_EXTERNAL_BENCHMARKS``, default the demo's
``skill_assets/demo/external/benchmarks.yaml``) rather than dynamic partitions: a partition key
only means something together with its folder and layout, which the file holds, and the CLI and
the graph snapshot can list the keys without a Dagster instance. To add a benchmark, add an entry
to the file and reload the code location (UI: Deployment → Reload); it appears as a partition of
the ``external_*`` assets, ready to materialize or backfill.

The curated benchmark (``skill_assets/benchmarks/curated/``) joins as partition ``curated`` when
its pool is configured: ``$SKILL_ASSETS_CURATED_POOL`` names the skill directory (one folder per
repository, e.g. ``../shared/corpus/github-skills/repos``); its test split is scored.
"""
import os

import dagster as dg

from skill_assets.lib.evaluation.curated_benchmark import POOL_ENV
from skill_assets.lib.evaluation.external_benchmarks import (
    CONFIG_ENV,
    DEMO_CONFIG,
    BenchmarkSpec,
    curated_spec,
    load_benchmark_specs,
)


def external_benchmark_specs() -> dict[str, BenchmarkSpec]:
    specs = load_benchmark_specs(os.environ.get(CONFIG_ENV) or DEMO_CONFIG)
    if pool := os.environ.get(POOL_ENV):
        spec = curated_spec(pool)
        specs[spec.name] = spec
    return specs


external_benchmarks = dg.StaticPartitionsDefinition(sorted(external_benchmark_specs()))
