"""Render the benchmark report: paper-shaped tables, plots, standalone HTML and MTEB-shaped JSON.

Pure functions from the ``benchmark_metrics`` / ``skip_taxonomy`` frames to Markdown, PNG bytes,
HTML text and JSON-ready dicts; the Dagster asset only reads tables and writes files.
"""
from __future__ import annotations

import base64
import html
import io

import polars as pl

HEADLINE = ("hit@1", "mrr@10", "ndcg@10", "recall@10", "fc@10", "comp@10", "set_compat")
RECALL_KS = (5, 10, 15, 20, 50)
ABLATIONS = (("A", "embedder:r3", "teacher-mined hard negative (deployed)"),
             ("B", "embedder:r3-skip-neg", "SKIP partner as the negative"),
             ("C", "reranker:r3-noskip", "reranker without SKIP labels"),
             ("D", "reranker:r3-shuffled-skip", "SKIP labels shuffled across matched queries"),
             ("E", "reranker:r3", "SKIP labels (deployed)"))


def headline_split(metrics: pl.DataFrame) -> str | None:
    """The split a report leads with: test when evaluated, else the first evaluated split."""
    splits = sorted(metrics["split"].unique().to_list()) if metrics.height else []
    return "test" if "test" in splits else (splits[0] if splits else None)


def metrics_table(metrics: pl.DataFrame, slice_name: str = "all", with_significance: bool = False,
                  split: str | None = None) -> pl.DataFrame:
    split = split or headline_split(metrics)
    df = metrics.filter((pl.col("slice") == slice_name) & pl.col("metric").is_in(HEADLINE) & (pl.col("split") == split))
    if df.height == 0:
        return df
    wide = df.pivot(on="metric", index=["system", "n_queries"], values="value")
    out = wide.select(["system", "n_queries", *[m for m in HEADLINE if m in wide.columns]])
    if with_significance:
        sig = df.filter(pl.col("metric").is_in(["hit@1", "ndcg@10"])).pivot(
            on="metric", index="system", values="p_value_vs_base")
        sig = sig.rename({c: f"p({c})" for c in sig.columns if c != "system"})
        out = out.join(sig, on="system", how="left")
    return out.sort("system")


def ablation_table(metrics: pl.DataFrame) -> pl.DataFrame:
    overall = metrics.filter((pl.col("slice") == "all") & (pl.col("split") == headline_split(metrics)))
    rows = []
    for aid, system, what in ABLATIONS:
        vals = {r["metric"]: r["value"] for r in overall.filter(pl.col("system") == system).to_dicts()}
        if vals:
            rows.append({"id": aid, "system": system, "setting": what, "hit@1": vals.get("hit@1"),
                         "ndcg@10": vals.get("ndcg@10"), "set_compat": vals.get("set_compat")})
    return pl.DataFrame(rows) if rows else pl.DataFrame()


def to_markdown(df: pl.DataFrame, percent: bool = True) -> str:
    if df.height == 0:
        return "_no rows_"
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    for row in df.iter_rows(named=True):
        cells = []
        for col, v in row.items():
            if v is None:
                cells.append("–")
            elif isinstance(v, float):
                cells.append("–" if v != v else (f"{v:.3f}" if col.startswith("p(") or not percent else f"{100 * v:.2f}"))
            else:
                cells.append(str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _png(fig) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def metric_plot(table: pl.DataFrame, metrics: tuple[str, ...] = ("hit@1", "ndcg@10", "recall@10")) -> bytes:
    plt = _pyplot()
    systems = table["system"].to_list() if table.height else []
    fig, ax = plt.subplots(figsize=(7, 0.8 + 0.45 * max(1, len(systems))))
    height = 0.8 / len(metrics)
    for j, m in enumerate(metrics):
        if m in table.columns:
            ax.barh([i + j * height for i in range(len(systems))], [100 * (v or 0.0) for v in table[m].to_list()],
                    height=height, label=m)
    ax.set_yticks([i + height for i in range(len(systems))], systems)
    ax.set_xlabel("score (%)")
    ax.set_xlim(0, 100)
    ax.set_title("Metrics by system (whole skill library)")
    ax.legend(fontsize=8, loc="lower right")
    return _png(fig)


def recall_curve_plot(metrics: pl.DataFrame) -> bytes:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.8))
    overall = metrics.filter((pl.col("slice") == "all") & (pl.col("split") == headline_split(metrics)))
    for system in sorted(overall["system"].unique().to_list()):
        vals = {r["metric"]: r["value"] for r in overall.filter(pl.col("system") == system).to_dicts()}
        ax.plot(RECALL_KS, [100 * vals.get(f"recall@{k}", float("nan")) for k in RECALL_KS], marker="o", label=system)
    ax.set_xlabel("K")
    ax.set_ylabel("Recall@K (%)")
    ax.set_ylim(0, 100)
    ax.set_title("Recall@K")
    ax.legend(fontsize=7)
    return _png(fig)


def taxonomy_plot(shares: pl.DataFrame) -> bytes:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.2))
    if shares.height:
        ax.barh(shares["label"].to_list()[::-1], shares["n"].to_list()[::-1], color="#8a6")
    ax.set_xlabel("k ≥ 2 SKIP records")
    ax.set_title("Rejection taxonomy")
    return _png(fig)


def html_document(title: str, markdown_sections: list[tuple[str, str]], images: dict[str, bytes]) -> str:
    """A standalone HTML page: Markdown tables rendered as HTML tables, images inlined."""
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>"
             "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}"
             "table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;"
             "font-size:13px;text-align:right}th{background:#f3f3f3}td:first-child{text-align:left}"
             "img{max-width:100%;margin:0.5em 0}</style></head><body>", f"<h1>{html.escape(title)}</h1>"]
    for heading, text in markdown_sections:
        if heading:
            parts.append(f"<h2>{html.escape(heading)}</h2>")
        parts.append(_markdown_block(text))
    for caption, png in images.items():
        parts.append(f"<figure><img alt='{html.escape(caption)}' src='data:image/png;base64,"
                     f"{base64.b64encode(png).decode()}'><figcaption>{html.escape(caption)}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _markdown_block(text: str) -> str:
    """Markdown pipe tables and ### headings to HTML; other lines become paragraphs."""
    out, table = [], []

    def flush() -> None:
        if table:
            rows = [r.strip().strip("|").split("|") for r in table if not set(r.strip()) <= set("|-: ")]
            head, body = rows[0], rows[1:]
            out.append("<table><tr>" + "".join(f"<th>{html.escape(c.strip())}</th>" for c in head) + "</tr>"
                       + "".join("<tr>" + "".join(f"<td>{html.escape(c.strip())}</td>" for c in r) + "</tr>"
                                 for r in body) + "</table>")
            table.clear()

    for line in text.splitlines():
        if line.strip().startswith("|"):
            table.append(line)
            continue
        flush()
        if line.startswith("### "):
            out.append(f"<h3>{html.escape(line[4:])}</h3>")
        elif line.strip():
            out.append(f"<p>{html.escape(line)}</p>")
    flush()
    return "\n".join(out)


def mteb_results(metrics: pl.DataFrame, data_version: str, code_version: str) -> dict[str, dict]:
    """Per system, a result dict in MTEB's shape (task_name, scores per split with main_score)."""
    results: dict[str, dict] = {}
    for system in sorted(metrics["system"].unique().to_list()):
        rows = metrics.filter(pl.col("system") == system)
        scores: dict[str, list] = {}
        for split in sorted(rows["split"].unique().to_list()):
            entries = []
            for slice_name in sorted(rows.filter(pl.col("split") == split)["slice"].unique().to_list()):
                part = rows.filter((pl.col("split") == split) & (pl.col("slice") == slice_name))
                vals = {r["metric"].replace("@", "_at_"): r["value"] for r in part.to_dicts()}
                entries.append({"hf_subset": slice_name, "languages": ["eng-Latn", "cmn-Hans"],
                                "main_score": vals.get("ndcg_at_10"), **vals})
            scores[split] = entries
        results[system] = {"task_name": "SkillRouting", "dataset_revision": data_version,
                           "mteb_version": None, "skill_assets_version": code_version, "scores": scores}
    return results
