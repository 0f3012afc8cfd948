"""External benchmarks as partitions: one per entry of the benchmarks YAML file.

A static definition read from a file (``$SKILL_ASSETS_EXTERNAL_BENCHMARKS``, default the demo's
``skill_assets/demo/external/benchmarks.yaml``) rather than dynamic partitions: a partition key
only means something together with its folder and layout, which the file holds, and the CLI and
the graph snapshot can list the keys without a Dagster instance. To add a benchmark, add an entry
to the file and reload the code location (UI: Deployment → Reload); it appears as a partition of
the ``external_*`` assets, ready to materialize or backfill.
"""
import os

import dagster as dg

from skill_assets.lib.evaluation.external_benchmarks import CONFIG_ENV, DEMO_CONFIG, BenchmarkSpec, load_benchmark_specs


def external_benchmark_specs() -> dict[str, BenchmarkSpec]:
    return load_benchmark_specs(os.environ.get(CONFIG_ENV) or DEMO_CONFIG)


external_benchmarks = dg.StaticPartitionsDefinition(sorted(external_benchmark_specs()))
