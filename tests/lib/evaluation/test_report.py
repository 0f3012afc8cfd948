"""The report renders every table, plot and MTEB JSON from a real benchmark_metrics-shaped frame."""
from datetime import UTC, datetime

import numpy as np
import polars as pl
import pytest

from skill_assets.lib.core.runs import Qrels, Run
from skill_assets.lib.core.skill_groups import singleton_groups
from skill_assets.lib.evaluation.metric_tables import metric_rows
from skill_assets.lib.evaluation.report import (
    ablation_table,
    breakdown_table,
    cutoff_table,
    glossary,
    html_document,
    markdown_document,
    metric_plot,
    metrics_table,
    mteb_results,
    recall_curve_plot,
    small_sample_note,
    taxonomy_plot,
    to_markdown,
    training_data_table,
)
from skill_assets.lib.evaluation.report_outline import REPORT_TITLE, report_sections

PNG = b"\x89PNG\r\n\x1a\n"


def _metrics(n_queries: int = 20) -> pl.DataFrame:
    """benchmark_metrics rows as the evaluation stage computes them, over random rankings."""
    rng = np.random.default_rng(0)
    docs = [f"d{i}" for i in range(60)]
    truth = [singleton_groups(rng.choice(docs, size=rng.integers(1, 4), replace=False)) for _ in range(n_queries)]
    ids = [f"q{i}" for i in range(n_queries)]
    runs = {system: Run.of(ids, [[(d, 0.0) for d in rng.permutation(docs)] for _ in truth])
            for system in ("bm25", "embedder:base", "embedder:r3", "reranker:r3", "reranker:r3-noskip")}
    slices = {"all": np.ones(n_queries, dtype=bool), "k=1": np.arange(n_queries) < n_queries // 2}
    return pl.DataFrame([{**row, "split": "test", "data_version": "d1", "code_version": "c1"}
                         for row in metric_rows(runs, Qrels.of(ids, truth), slices)])


def test_tables_plots_html_and_mteb():
    metrics = _metrics()
    overall = metrics_table(metrics, with_significance=True)
    assert overall.height == 5 and {"hit@1", "ndcg@10", "p(hit@1)"} <= set(overall.columns)
    md = to_markdown(overall)
    assert md.count("\n") == 6 and "embedder:r3" in md
    ablations = ablation_table(metrics)
    assert ablations["id"].to_list() == ["A", "C", "E"]
    for png in (metric_plot(overall), recall_curve_plot(metrics),
                taxonomy_plot(pl.DataFrame({"label": ["domain_mismatch"], "n": [3]}))):
        assert png[:8] == PNG
    page = html_document("report", [("Overall", md)], {"plot": metric_plot(overall)})
    assert page.count("<tr>") == 6 and "data:image/png;base64," in page and "<h2>Overall</h2>" in page
    mteb = mteb_results(metrics, "d1", "c1")
    entry = mteb["embedder:r3"]["scores"]["test"][0]
    assert mteb["bm25"]["dataset_revision"] == "d1" and entry["main_score"] == entry["ndcg_at_10"]


def test_breakdowns_cutoffs_and_html_a_reader_can_follow():
    metrics = _metrics()
    by_slice = breakdown_table(metrics, "hit@1")
    assert by_slice.columns == ["system", "all (n=20)", "k=1 (n=10)"] and by_slice.height == 5
    cutoffs = cutoff_table(metrics, "recall")
    assert cutoffs.columns == ["system", "n_queries", "recall@5", "recall@10", "recall@15", "recall@20", "recall@50"]
    assert (cutoffs["recall@50"] >= cutoffs["recall@5"]).all()  # recall never falls as K grows
    png = metric_plot(metrics_table(metrics))
    page = html_document("r", [("Read me", glossary()),
                               ("Overall", to_markdown(by_slice) + "\n\n![Caption words](m.png)"),
                               ("Text", "the `fc@K` column")], {"m.png": png, "unused.png": png})
    # the referenced plot sits in its section with its caption; an unreferenced one is still shown, at the end
    assert page.index("<figcaption>Caption words</figcaption>") < page.index("<h2>Text</h2>") < page.index("unused.png")
    assert page.count("data:image/png;base64,") == 2 and "<code>fc@K</code>" in page
    assert "<td class='txt'>bm25</td>" in page and "<td class='txt'>set_compat</td>" in page
    assert "<td class='num'>" in page


def test_external_benchmarks_get_a_table_each_and_their_own_mteb_task():
    from skill_assets.lib.evaluation.report import as_splits, external_section

    assert "SKILL_ASSETS_EXTERNAL_BENCHMARKS" in external_section(pl.DataFrame())
    one = _metrics().filter(pl.col("split") == "test").drop("split")
    external = pl.concat([one.with_columns(benchmark=pl.lit("skillret"), data_version=pl.lit("v-sr")),
                          one.with_columns(benchmark=pl.lit("demo-r3"), data_version=pl.lit("v-r3"))])
    text = external_section(external)
    assert text.index("### demo-r3 (data v-r3)") < text.index("### skillret (data v-sr)")
    # per benchmark: the overall table, then hit@1 and ndcg@10 by slice, each saying n=20 cannot rank systems
    assert text.count("| embedder:r3 |") == 6 and "p(ndcg@10)" in text and text.count("cannot rank systems") == 6
    mteb = mteb_results(as_splits(external).filter(pl.col("split") == "skillret"), "v-sr", "c1",
                        task_name="SkillRouting-skillret")
    assert mteb["embedder:r3"]["task_name"] == "SkillRouting-skillret"
    assert {e["hf_subset"] for e in mteb["embedder:r3"]["scores"]["skillret"]} == {"all", "k=1"}


def test_every_figure_carries_its_interval_and_small_tables_say_they_cannot_rank():
    small, large = _metrics(20), _metrics(60)
    table = metrics_table(large, with_significance=True, intervals=True)
    cell = table.filter(pl.col("system") == "bm25")["hit@1"][0]
    value, low, high = (float(x) for x in cell.replace("[", "").replace("]", "").replace(",", "").split())
    assert low <= value <= high and high - low > 0  # percent, with a real spread over 60 random rankings
    assert table["n_queries"].to_list() == [60] * 5
    for rows in (cutoff_table(large, "ndcg", intervals=True), ablation_table(large, intervals=True),
                 breakdown_table(large, "ndcg@10", intervals=True)):
        assert all("[" in str(c) for c in rows.row(0)[-1:])
    assert small_sample_note({"all": 60, "direction=en2zh": 45}) == ""
    note = small_sample_note({"all": 60, "direction=zh2zh": 12})
    assert "cannot rank systems" in note and "zh2zh: n=12" in note and "all" not in note.split("(")[1]
    page = html_document("r", [("Overall", to_markdown(metrics_table(small, intervals=True)) + "\n\n"
                                + small_sample_note({"all": 20}))], {})
    assert "<strong>This table cannot rank systems</strong>" in page and "<td class='num'>" in page


def test_training_data_table_says_which_queries_each_model_saw():
    cards = {"embedder:r3": {"train_queries": 300, "dev_queries": 48, "selected_step": 20, "steps": 40,
                             "training_data": {"train_sources": {"pipeline": 12, "curated_train": 288},
                                               "dev_source": "curated dev split", "curated": "used (data abc)",
                                               "dropped_touching_curated_test": {"pipeline_train": 3}}},
             "reranker:r3": {"train_queries": 12, "dev_queries": 1, "selected_step": 0, "steps": 2}}
    table = training_data_table(cards)
    first = table.row(0, named=True)
    assert first["from"] == "pipeline 12, curated_train 288" and "48 queries of the curated dev split" in \
        first["checkpoint picked on"] and first["dropped (touch a curated test skill)"] == "pipeline_train 3"
    assert table.row(1, named=True)["from"] == "–"


def _report(metrics: pl.DataFrame, external: pl.DataFrame) -> tuple[list[tuple[str, str]], str]:
    """The report's sections and its Markdown page, with no generator data beside the metrics."""
    empty = pl.DataFrame()
    sections = report_sections(metrics, external, empty, empty, empty, empty,
                               {"data_version": "d1", "code_version": "c1"}, datetime(2026, 1, 1, tzinfo=UTC))
    return sections, markdown_document(REPORT_TITLE, sections)


def _demo_shaped() -> tuple[pl.DataFrame, pl.DataFrame]:
    """The demo's shape (issue 34): 3 generated test queries (and a few train), 82 hand-written requests, and
    three 6-query layout samples."""
    own = pl.concat([_metrics(3), _metrics(12).with_columns(split=pl.lit("train"))])
    benchmarks = {"demo-handwritten": 82, "demo-r3": 6, "demo-skill-md": 6, "demo-skillret": 6}
    external = pl.concat([_metrics(n).drop("split").with_columns(benchmark=pl.lit(name),
                                                                 data_version=pl.lit(f"v-{name}"))
                          for name, n in benchmarks.items()])
    return own, external


def _section(sections: list[tuple[str, str]], prefix: str) -> str:
    [text] = [t for h, t in sections if h.startswith(prefix)]
    return text


def test_report_opens_with_the_largest_benchmark_that_can_rank_systems():
    """The demo report led with 3 generated queries that "cannot rank systems"; the 82 hand-written requests that
    can were at line 226 of 488. Their table is now the first the page shows; the generated split's follows."""
    own, external = _demo_shaped()
    sections, page = _report(own, external)
    lines = page.splitlines()
    first_table = next(i for i, line in enumerate(lines) if line.startswith("|"))
    [heading] = [line for line in lines[:first_table] if line.startswith("## ")]
    assert heading == "## Overall (demo-handwritten, the largest benchmark that can rank systems)"
    assert lines[first_table].startswith("| system | n_queries | hit@1 |") and "| 82 |" in lines[first_table + 2]
    opening = _section(sections, "Overall (demo-handwritten")
    assert "cannot rank systems" not in opening and "### hit@1 by direction and set size k" in opening
    assert [h for h, _ in sections][2:4] == ["How to read the tables", "Overall (test)"]
    assert "cannot rank systems" in _section(sections, "Overall (test)") and "all: n=3" in page
    # printed once: "External benchmarks" points to it and keeps the small samples' tables with their warning
    assert page.count("| embedder:r3 | 82 |") == 1
    others = _section(sections, "External benchmarks")
    assert "### demo-handwritten (data v-demo-handwritten)\n\n_at the top of the report" in others
    assert "### demo-r3 (data v-demo-r3)\n\n| system |" in others and "all: n=6" in others
    html = html_document(REPORT_TITLE, sections, {})
    assert html.index("<h2>Overall (demo-handwritten") < html.index("<table>") < html.index(
        "<h2>How to read the tables</h2>")


@pytest.mark.parametrize("external", ["none", "too small"])
def test_report_without_a_benchmark_that_can_rank_opens_with_its_own_split(external):
    """No external benchmark, or only ones too small to rank: the report renders as before, every table in it."""
    own, demo = _demo_shaped()
    benchmarks = pl.DataFrame() if external == "none" else demo.filter(pl.col("benchmark") != "demo-handwritten")
    sections, page = _report(own, benchmarks)
    assert [h for h, _ in sections][1:3] == ["How to read the tables", "Overall (test)"]
    assert "the largest benchmark that can rank systems" not in page and "cannot rank systems" in page
    assert ("none evaluated" in page) == (external == "none") and page.count("| embedder:r3 | 6 |") == 3 * (
        external == "too small")
