"""Render the benchmark report: Markdown tables and a metric-by-system plot."""
from __future__ import annotations

import io

import polars as pl

HEADLINE = ("hit@1", "mrr@10", "ndcg@10", "recall@10", "fc@10", "comp@10", "set_compat")


def metrics_table(metrics: pl.DataFrame, slice_name: str = "all") -> pl.DataFrame:
    df = metrics.filter((pl.col("slice") == slice_name) & pl.col("metric").is_in(HEADLINE))
    if df.height == 0:
        return df
    wide = df.pivot(on="metric", index=["system", "n_queries"], values="value")
    return wide.select(["system", "n_queries", *[m for m in HEADLINE if m in wide.columns]]).sort("system")


def to_markdown(df: pl.DataFrame) -> str:
    if df.height == 0:
        return "_no rows_"
    cols = df.columns
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.iter_rows():
        lines.append("| " + " | ".join(f"{100 * v:.2f}" if isinstance(v, float) else str(v) for v in row) + " |")
    return "\n".join(lines)


def metric_plot(table: pl.DataFrame, metrics: tuple[str, ...] = ("hit@1", "ndcg@10", "recall@10")) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = table["system"].to_list() if table.height else []
    fig, ax = plt.subplots(figsize=(7, 0.5 + 0.45 * max(1, len(systems))))
    height = 0.8 / len(metrics)
    for j, m in enumerate(metrics):
        if m in table.columns:
            values = [100 * (v or 0.0) for v in table[m].to_list()]
            ax.barh([i + j * height for i in range(len(systems))], values, height=height, label=m)
    ax.set_yticks([i + height for i in range(len(systems))], systems)
    ax.set_xlabel("score (%)")
    ax.set_xlim(0, 100)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()
