"""The benchmark report's outline: which sections, in which order, with the prose around each table.

``report.py`` renders the tables, plots and pages; this module only arranges them, so the Markdown page,
the HTML page and the Dagster UI show one outline. Pure, like ``report.py``: the asset reads and writes.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import polars as pl

from skill_assets.lib.evaluation.report import (
    DIRECTIONS,
    MIN_RANKING_QUERIES,
    ablation_table,
    as_splits,
    benchmark_tables,
    breakdown_table,
    cutoff_table,
    external_section,
    glossary,
    headline_split,
    metric_plot,
    metrics_table,
    recall_curve_plot,
    signal_ablation_table,
    slice_sizes,
    taxonomy_plot,
    taxonomy_summary,
    to_markdown,
    with_note,
)

REPORT_TITLE = "skill-assets benchmark report"


def version_stamp(metrics: pl.DataFrame) -> dict[str, str]:
    """The data and code versions the metrics were computed at; ``–`` for both before anything is evaluated."""
    versions = metrics.select("data_version", "code_version").unique().head(1).to_dicts()
    return versions[0] if versions else {"data_version": "–", "code_version": "–"}


def report_plots(metrics: pl.DataFrame, taxonomy: pl.DataFrame) -> dict[str, bytes]:
    """The report's figures by file name: ``report_sections`` refers to them by these names."""
    return {"metrics_by_system.png": metric_plot(metrics_table(metrics, with_significance=True)),
            "recall_at_k.png": recall_curve_plot(metrics), "taxonomy_shares.png": taxonomy_plot(taxonomy)}


def report_sections(metrics: pl.DataFrame, external: pl.DataFrame, taxonomy: pl.DataFrame, decisions: pl.DataFrame,
                    splits: pl.DataFrame, trained: pl.DataFrame, stamp: Mapping[str, str], generated: datetime
                    ) -> list[tuple[str, str]]:
    """The report's outline, (heading, Markdown) in reading order: one list for the Markdown page and the HTML.

    ``taxonomy``, ``decisions`` and ``splits`` are the asset's summaries of ``skip_taxonomy``, ``llm_records``
    and ``benchmark_queries``; ``trained`` is ``training_data_table`` of the model cards.
    """
    opening = opening_benchmark(metrics, external)
    return [
        ("", f"Generated {generated:%Y-%m-%d %H:%M UTC} · data {stamp['data_version']} · "
             f"code {stamp['code_version']}. Every system ranks the whole skill library for each query; numbers are "
             "percentages averaged over queries (p-values are not)."),
        *([_opening_section(external, opening)] if opening else []),
        ("How to read the tables", glossary()),
        *_metric_sections(metrics),
        *_data_sections(external, opening, trained, splits, decisions, taxonomy),
    ]


def opening_benchmark(metrics: pl.DataFrame, external: pl.DataFrame) -> str | None:
    """The external benchmark the report opens with, or None to open with this run's headline split.

    A reader takes the first table for the result, so it must be one that can rank systems: the external
    benchmark averaging the most queries, where it has at least ``MIN_RANKING_QUERIES`` and more than the
    headline split (the demo's generated test split has a handful; its 82 hand-written requests can rank)."""
    if external.height == 0:
        return None
    benchmarks = as_splits(external)
    sizes = {name: slice_sizes(benchmarks, name).get("all", 0)
             for name in sorted(benchmarks["split"].unique().to_list())}
    largest = max(sizes, key=sizes.__getitem__)  # the first name of the largest size: the same report every time
    own = slice_sizes(metrics).get("all", 0)
    return largest if sizes[largest] >= MIN_RANKING_QUERIES and sizes[largest] > own else None


def _opening_section(external: pl.DataFrame, name: str) -> tuple[str, str]:
    """The section the report opens with: ``opening_benchmark``'s tables, which "External benchmarks" then only
    points to."""
    benchmarks = as_splits(external)
    version = benchmarks.filter(pl.col("split") == name)["data_version"][0]
    return (f"Overall ({name}, the largest benchmark that can rank systems)",
            f"Data {version}. Every system ranks this benchmark's whole skill pool; a ranked copy of a ground-truth "
            "skill counts as that skill. The tables of this run's own queries follow (\"How to read the tables\" "
            "explains the columns), each saying where it averages too few queries to rank systems.\n\n"
            + benchmark_tables(benchmarks, name, subheading="###"))


def _metric_sections(metrics: pl.DataFrame) -> list[tuple[str, str]]:
    """The sections of ``benchmark_metrics``: the headline split first, then the other splits, ablations, slices."""
    lead = headline_split(metrics)
    other_splits = [s for s in sorted(metrics["split"].unique().to_list()) if s != lead]
    sizes = slice_sizes(metrics)
    lead_n = {"all": sizes.get("all", 0)}
    cutoffs = "\n\n".join(f"### {family}@K\n\n"
                           + with_note(to_markdown(cutoff_table(metrics, family, intervals=True)), lead_n)
                           for family in ("ndcg", "recall", "fc", "comp"))
    breakdowns = "\n\n".join(f"### {name} by direction and set size k\n\n"
                              + with_note(to_markdown(breakdown_table(metrics, name, intervals=True)), sizes)
                              for name in ("hit@1", "ndcg@10", "recall@10"))
    return [
        (f"Overall ({lead or 'no evaluated split'})",
         with_note(to_markdown(metrics_table(metrics, with_significance=True, intervals=True)), lead_n) + "\n\n"
         f"![Hit@1, NDCG@10 and Recall@10 per system ({lead} split)](metrics_by_system.png)\n\n"
         f"![Recall@K per system at every cutoff K ({lead} split)](recall_at_k.png)"),
        (f"Every cutoff K ({lead})", "R3-Skill reports K ∈ {5, 10, 15}, SkillRouter K ∈ {10, 20, 50}.\n\n" + cutoffs),
        *[(f"Overall ({s}; queries the trained models saw in training)" if s in ("train", "dev") else f"Overall ({s})",
           with_note(to_markdown(metrics_table(metrics, with_significance=True, split=s, intervals=True)),
                     {"all": slice_sizes(metrics, s).get("all", 0)})) for s in other_splits],
        ("SKIP ablations (R3 Table 7 ids)", "Each row changes one thing about how SKIP records are used in training; "
         "compare A with B (embedders) and E with C and D (rerankers).\n\n"
         + with_note(to_markdown(ablation_table(metrics, intervals=True)), lead_n)),
        ("Breakdowns", f"{DIRECTIONS}; k = number of ground-truth skills of the query; n = queries in the column.\n\n"
         + breakdowns),
        (f"Router signals and fusion ({lead})", "Hit@1 by direction of each router signal alone, RRF of each pair, "
         "the learned fusion and fusion + reranker: which signal adds what, where.\n\n"
         + to_markdown(signal_ablation_table(metrics, lead))),
    ]


def _data_sections(external: pl.DataFrame, opening: str | None, trained: pl.DataFrame, splits: pl.DataFrame,
                   decisions: pl.DataFrame, taxonomy: pl.DataFrame) -> list[tuple[str, str]]:
    """The sections after our own benchmark's figures: external benchmarks (but the one the report opened with),
    then the data behind the models."""
    return [
        ("External benchmarks", external_section(external, opening)),
        ("What each model saw", "Queries each trained model learned from and the queries that picked its checkpoint "
         "(from its model card); test queries of any benchmark are never among them.\n\n"
         + to_markdown(trained, percent=False)),
        ("Benchmark queries", to_markdown(splits, percent=False)),
        ("Generator decisions", "Per direction and set size: how often the generator wrote a query (WRITE) or refused "
         "the set (SKIP); SKIP % = SKIP / (WRITE + SKIP).\n\n" + to_markdown(decisions, percent=False)),
        ("Rejection taxonomy (k ≥ 2 SKIPs)", to_markdown(taxonomy, percent=False) + "\n\n" + taxonomy_summary(taxonomy)
         + "\n\n"
         "![Rejection classes of the generator's SKIP rationales](taxonomy_shares.png)"),
    ]
