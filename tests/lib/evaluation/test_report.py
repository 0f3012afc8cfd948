"""The report renders every table, plot and MTEB JSON from a real benchmark_metrics-shaped frame."""
import numpy as np
import polars as pl

from skill_assets.lib.common.metrics import mean_metrics, per_query_metrics
from skill_assets.lib.evaluation.report import (
    ablation_table,
    breakdown_table,
    cutoff_table,
    glossary,
    html_document,
    metric_plot,
    metrics_table,
    mteb_results,
    recall_curve_plot,
    taxonomy_plot,
    to_markdown,
)

PNG = b"\x89PNG\r\n\x1a\n"


def _metrics() -> pl.DataFrame:
    rng = np.random.default_rng(0)
    docs = [f"d{i}" for i in range(60)]
    relevant = [set(rng.choice(docs, size=rng.integers(1, 4), replace=False)) for _ in range(20)]
    rows = []
    for system in ("bm25", "embedder:base", "embedder:r3", "reranker:r3", "reranker:r3-noskip"):
        rankings = [list(rng.permutation(docs)) for _ in relevant]
        for slice_name, mask in (("all", slice(None)), ("k=1", slice(0, 10))):
            means = mean_metrics({m: v[mask] for m, v in per_query_metrics(rankings, relevant).items()})
            rows += [{"system": system, "split": "test", "slice": slice_name, "metric": m, "value": v, "n_queries": 20,
                      "delta_vs_base": 0.01, "p_value_vs_base": 0.5, "data_version": "d1", "code_version": "c1"}
                     for m, v in means.items()]
    return pl.DataFrame(rows)


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
    assert by_slice.columns == ["system", "all (n=20)", "k=1 (n=20)"] and by_slice.height == 5
    cutoffs = cutoff_table(metrics, "recall")
    assert cutoffs.columns == ["system", "recall@5", "recall@10", "recall@15", "recall@20", "recall@50"]
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
    assert text.count("| embedder:r3 |") == 2 and "p(ndcg@10)" in text
    mteb = mteb_results(as_splits(external).filter(pl.col("split") == "skillret"), "v-sr", "c1",
                        task_name="SkillRouting-skillret")
    assert mteb["embedder:r3"]["task_name"] == "SkillRouting-skillret"
    assert {e["hf_subset"] for e in mteb["embedder:r3"]["scores"]["skillret"]} == {"all", "k=1"}
