"""Render the benchmark report: paper-shaped tables, plots, standalone HTML and MTEB-shaped JSON.

Pure functions from the ``benchmark_metrics`` / ``skip_taxonomy`` frames to Markdown, PNG bytes,
HTML text and JSON-ready dicts; the Dagster asset only reads tables and writes files.
"""
from __future__ import annotations

import base64
import html
import io
import re
from collections.abc import Mapping

import polars as pl

#: below this many queries a table says it cannot rank systems: a 95% interval of a 0/1 metric then spans
#: about ±18 points, wider than most differences between systems
MIN_RANKING_QUERIES = 30
HEADLINE = ("hit@1", "mrr@10", "ndcg@10", "recall@10", "fc@10", "comp@10", "set_compat")
RECALL_KS = (5, 10, 15, 20, 50)
ABLATIONS = (("A", "embedder:r3", "teacher-mined hard negative (deployed)"),
             ("B", "embedder:r3-skip-neg", "SKIP partner as the negative"),
             ("C", "reranker:r3-noskip", "reranker without SKIP labels"),
             ("D", "reranker:r3-shuffled-skip", "SKIP labels shuffled across matched queries"),
             ("E", "reranker:r3", "SKIP labels (deployed)"))


#: what each column means, in words a reader needs without opening code (METHOD.md §4)
GLOSSARY = (
    ("hit@1", "a ground-truth skill is ranked first"),
    ("mrr@10", "1 / rank of the first ground-truth skill, 0 when none is in the top 10"),
    ("ndcg@K", "ranking quality of the top K: binary gains, log2 discount, 100 = every ground-truth skill on top"),
    ("recall@K", "share of the query's ground-truth skills found in the top K"),
    ("fc@K", "full coverage (SkillRouter): every ground-truth skill is in the top K"),
    ("comp@K", "R3-Skill's released completeness: found in top K / min(set size, K); = recall@K when K ≥ set size"),
    ("set_compat", "every ground-truth skill in the top m, m = set size; multi-skill queries only (– for k=1)"),
    ("p(·)", ("paired-bootstrap p-value of the difference to embedder:base on the same queries (small = unlikely "
              "to be chance); – for the base itself")),
    ("n_queries", "queries the numbers average over"),
    ("x [a, b]", "mean x with its 95% bootstrap interval [a, b] (2,000 resamples of the queries)"),
)
DIRECTIONS = "direction = skill language → query language (en2zh: English skills, Chinese request)"


def glossary() -> str:
    """The metric glossary as a Markdown table; values in the report are percentages unless said otherwise."""
    return "| column | meaning |\n|---|---|\n" + "\n".join(f"| {name} | {text} |" for name, text in GLOSSARY)


def headline_split(metrics: pl.DataFrame) -> str | None:
    """The split a report leads with: test when evaluated, else the first evaluated split."""
    splits = sorted(metrics["split"].unique().to_list()) if metrics.height else []
    return "test" if "test" in splits else (splits[0] if splits else None)


def interval_cell(value: float | None, low: float | None, high: float | None) -> str:
    """``45.2 [38.1, 52.3]`` in percent; ``–`` where the mean is undefined (set_compat without multi-skill queries)."""
    if value is None or value != value:
        return "–"
    if low is None or low != low:
        return f"{100 * value:.1f}"
    return f"{100 * value:.1f} [{100 * low:.1f}, {100 * high:.1f}]"


def _shown(df: pl.DataFrame, intervals: bool) -> pl.DataFrame:
    """``value`` as a number, or (``intervals``) as the text cell with its 95% interval."""
    if not intervals:
        return df
    return df.with_columns(value=pl.Series([interval_cell(v, lo, hi) for v, lo, hi in
                                            df.select("value", "ci_low", "ci_high").iter_rows()], dtype=pl.Utf8))


def slice_sizes(metrics: pl.DataFrame, split: str | None = None) -> dict[str, int]:
    """Queries per slice of one split (or benchmark): what each figure of its tables averages over."""
    split = split or headline_split(metrics)
    return dict(metrics.filter(pl.col("split") == split).select("slice", "n_queries").unique("slice", maintain_order=True).iter_rows())


def small_sample_note(sizes: Mapping[str, int]) -> str:
    """A plain warning under a table when any of its columns averages fewer than ``MIN_RANKING_QUERIES`` queries."""
    small = {name: n for name, n in sizes.items() if n < MIN_RANKING_QUERIES}
    if not small:
        return ""
    where = ", ".join(f"{name.removeprefix('direction=')}: n={n}" for name, n in small.items())
    return (f"**This table cannot rank systems** where it averages fewer than {MIN_RANKING_QUERIES} queries ({where}): "
            "the intervals are too wide for a difference between systems to mean anything.")


def with_note(table_markdown: str, sizes: Mapping[str, int]) -> str:
    note = small_sample_note(sizes)
    return f"{table_markdown}\n\n{note}" if note else table_markdown


def metrics_table(metrics: pl.DataFrame, slice_name: str = "all", with_significance: bool = False,
                  split: str | None = None, intervals: bool = False) -> pl.DataFrame:
    """Headline metrics per system; ``intervals`` turns each figure into ``value [95% interval]`` text."""
    split = split or headline_split(metrics)
    df = metrics.filter((pl.col("slice") == slice_name) & pl.col("metric").is_in(HEADLINE) & (pl.col("split") == split))
    if df.height == 0:
        return df
    wide = _shown(df, intervals).pivot(on="metric", index=["system", "n_queries"], values="value")
    out = wide.select(["system", "n_queries", *[m for m in HEADLINE if m in wide.columns]])
    if with_significance:
        sig = df.filter(pl.col("metric").is_in(["hit@1", "ndcg@10"])).pivot(
            on="metric", index="system", values="p_value_vs_base")
        sig = sig.rename({c: f"p({c})" for c in sig.columns if c != "system"})
        out = out.join(sig, on="system", how="left")
    return out.sort("system")


def breakdown_table(metrics: pl.DataFrame, metric: str, split: str | None = None,
                    intervals: bool = False) -> pl.DataFrame:
    """One metric, systems × slices (all, each direction, each set size k), slice sizes in the headers."""
    split = split or headline_split(metrics)
    df = metrics.filter((pl.col("metric") == metric) & (pl.col("split") == split))
    if df.height == 0:
        return df
    sizes = dict(df.select("slice", "n_queries").unique("slice", maintain_order=True).iter_rows())
    order = sorted(sizes, key=lambda s: (s != "all", not s.startswith("direction"), s))
    wide = _shown(df, intervals).pivot(on="slice", index="system", values="value").select("system", *order)
    label = {s: s.removeprefix("direction=") for s in order}
    return wide.rename({s: f"{label[s]} (n={sizes[s]})" for s in order}).sort("system")


def cutoff_table(metrics: pl.DataFrame, family: str, split: str | None = None, intervals: bool = False
                 ) -> pl.DataFrame:
    """One metric family (ndcg, recall, fc, comp) at every cutoff K (R3: 5, 10, 15; SkillRouter: 10, 20, 50)."""
    split = split or headline_split(metrics)
    names = [f"{family}@{k}" for k in RECALL_KS]
    df = metrics.filter((pl.col("slice") == "all") & (pl.col("split") == split) & pl.col("metric").is_in(names))
    if df.height == 0:
        return df
    wide = _shown(df, intervals).pivot(on="metric", index=["system", "n_queries"], values="value")
    return wide.select("system", "n_queries", *[n for n in names if n in wide.columns]).sort("system")


def ablation_table(metrics: pl.DataFrame, intervals: bool = False) -> pl.DataFrame:
    overall = _shown(metrics.filter((pl.col("slice") == "all") & (pl.col("split") == headline_split(metrics))),
                     intervals)
    rows = []
    for aid, system, what in ABLATIONS:
        part = overall.filter(pl.col("system") == system)
        vals = {r["metric"]: r["value"] for r in part.to_dicts()}
        if vals:
            rows.append({"id": aid, "system": system, "setting": what, "n_queries": part["n_queries"][0],
                         "hit@1": vals.get("hit@1"), "ndcg@10": vals.get("ndcg@10"),
                         "set_compat": vals.get("set_compat")})
    return pl.DataFrame(rows) if rows else pl.DataFrame()


def signal_ablation_table(metrics: pl.DataFrame, split: str, metric: str = "hit@1") -> pl.DataFrame:
    """``metric`` of each router system (every system but a reranker over the bi-encoder) by query direction on
    ``split``: which signal adds what, where."""
    part = metrics.filter((pl.col("split") == split) & (pl.col("metric") == metric)
                          & ~pl.col("system").str.starts_with("reranker:")
                          & (pl.col("slice").is_in(["all"]) | pl.col("slice").str.starts_with("direction=")))
    if not part.height:
        return pl.DataFrame({"system": []}, schema={"system": pl.Utf8})
    wide = part.with_columns(pl.col("slice").str.replace("direction=", "")).pivot(
        on="slice", index="system", values="value").sort("system")
    return wide.select("system", *[c for c in ("all", "en2en", "en2zh", "zh2en", "zh2zh") if c in wide.columns])


def as_splits(external: pl.DataFrame) -> pl.DataFrame:
    """``external_metrics`` in ``benchmark_metrics``' shape, each benchmark standing where a split would.

    Every table and JSON helper here then serves external benchmarks unchanged.
    """
    return external.rename({"benchmark": "split"})


def benchmark_tables(metrics: pl.DataFrame, name: str, subheading: str = "####") -> str:
    """One benchmark's tables (``metrics`` as ``as_splits`` makes them): headline metrics with p-values against the
    base embedder, then hit@1 and ndcg@10 by direction and set size k, each table with its small-sample note.

    ``subheading`` is the Markdown level of the by-slice headings: one below wherever the benchmark's own heading
    stands (the report's opening section or the external benchmarks' section)."""
    sizes = slice_sizes(metrics, name)
    overall = with_note(to_markdown(metrics_table(metrics, with_significance=True, split=name, intervals=True)),
                        {"all": sizes.get("all", 0)})
    by_slice = "\n\n".join(
        f"{subheading} {metric} by direction and set size k\n\n"
        + with_note(to_markdown(breakdown_table(metrics, metric, split=name, intervals=True)), sizes)
        for metric in ("hit@1", "ndcg@10") if len(sizes) > 1)
    return overall + (f"\n\n{by_slice}" if by_slice else "")


def external_section(external: pl.DataFrame, opening: str | None = None) -> str:
    """One table per external benchmark (headline metrics, p-values against the base embedder).

    ``opening``: the benchmark the report opens with; its tables stand there, and here only a pointer to them,
    so no table is printed twice."""
    if external.height == 0:
        return ("_none evaluated: list benchmarks in `$SKILL_ASSETS_EXTERNAL_BENCHMARKS` and materialize the "
                "`external_*` partitions (docs/ARCHITECTURE.md)_")
    metrics = as_splits(external)
    parts = []
    for name in sorted(metrics["split"].unique().to_list()):
        version = metrics.filter(pl.col("split") == name)["data_version"][0]
        tables = ("_at the top of the report: the largest benchmark that can rank systems_" if name == opening
                  else benchmark_tables(metrics, name))
        parts.append(f"### {name} (data {version})\n\n{tables}")
    return ("Benchmarks with a skill pool and queries of their own (releases of others, and `curated`: requests "
            "this project's team wrote by hand over real skills); every system ranks that benchmark's whole pool, "
            "and a ranked copy of a ground-truth skill counts as that skill.\n\n" + "\n\n".join(parts))


def training_data_table(cards: Mapping[str, dict]) -> pl.DataFrame:
    """Which queries trained each model and which picked its checkpoint, from the model cards.

    ``cards``: system name (``embedder:r3``) → the model's ``skill_assets_card.json``."""
    rows = []
    for system, card in sorted(cards.items()):
        data = card.get("training_data", {})
        dropped = data.get("dropped_touching_curated_test", {})
        rows.append({"model": system, "train queries": card.get("train_queries"),
                     "from": ", ".join(f"{k} {v}" for k, v in data.get("train_sources", {}).items()) or "–",
                     "checkpoint picked on": f"{card.get('dev_queries', 0)} queries of the "
                                             f"{data.get('dev_source', 'held-out set')}, step "
                                             f"{card.get('selected_step')} of {card.get('steps')}",
                     "dropped (touch a curated test skill)": ", ".join(f"{k} {v}" for k, v in dropped.items()) or "–",
                     "curated benchmark": data.get("curated", "–")})
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
    ax.set_xlabel("score (%), higher is better")
    ax.set_xlim(0, 100)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title("Hit@1, NDCG@10 and Recall@10 by system (whole skill library)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1), title="metric", title_fontsize=8)
    return _png(fig)


def recall_curve_plot(metrics: pl.DataFrame) -> bytes:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 3.8))
    overall = metrics.filter((pl.col("slice") == "all") & (pl.col("split") == headline_split(metrics)))
    for system in sorted(overall["system"].unique().to_list()):
        vals = {r["metric"]: r["value"] for r in overall.filter(pl.col("system") == system).to_dicts()}
        ax.plot(range(len(RECALL_KS)), [100 * vals.get(f"recall@{k}", float("nan")) for k in RECALL_KS], marker="o",
                label=system)
    ax.set_xlabel("K (skills kept from the top of the ranking; evenly spaced)")
    ax.set_xticks(range(len(RECALL_KS)), [str(k) for k in RECALL_KS])
    ax.set_ylabel("Recall@K (%)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.set_title("Recall@K: share of ground-truth skills within the top K")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1), title="system", title_fontsize=8)
    return _png(fig)


def taxonomy_summary(shares: pl.DataFrame) -> str:
    """Coverage and how the labels were reached, beside the shares (``label, n, by_rule, by_model`` rows)."""
    total = int(shares["n"].sum()) if shares.height else 0
    if not total:
        return "_No k ≥ 2 SKIPs._"
    unknown = int(shares.filter(pl.col("label") == "unknown")["n"].sum())
    by_rule, by_model = int(shares["by_rule"].sum()), int(shares["by_model"].sum())
    return (f"Coverage {1 - unknown / total:.1%} of {total} SKIPs (the rest `unknown`): {by_rule / total:.1%} "
            f"labelled by a rule, {by_model / total:.1%} by the model, {(total - unknown - by_rule - by_model) / total:.1%} "
            "by the LLM fallback. `skip_taxonomy.method`, `rule_id` and `confidence` say which, per SKIP.")


def taxonomy_plot(shares: pl.DataFrame) -> bytes:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 3.2))
    if shares.height:
        ax.barh(shares["label"].to_list()[::-1], shares["n"].to_list()[::-1], color="#8a6")
    ax.set_xlabel("SKIP records (sets of 2–3 skills the generator refused)")
    ax.set_title("Why the generator refused a skill set")
    return _png(fig)


_STYLE = ("body{font-family:system-ui,sans-serif;max-width:1150px;margin:2em auto;padding:0 1em;color:#222;"
          "line-height:1.45}h2{border-bottom:1px solid #ddd;padding-bottom:0.2em;margin-top:1.8em}"
          "table{border-collapse:collapse;margin:0.5em 0 1.2em}td,th{border:1px solid #ccc;padding:3px 8px;"
          "font-size:13px;text-align:left;white-space:nowrap}th{background:#f3f3f3}td.num,th.num{text-align:right;"
          "font-variant-numeric:tabular-nums}tr:nth-child(even) td{background:#fafafa}"
          "code{background:#f3f3f3;padding:0 3px;border-radius:3px;font-size:90%}"
          "figure{margin:0.8em 0 1.5em}img{max-width:100%}figcaption{color:#555;font-size:13px}")
_IMAGE = re.compile(r"^!\[(?P<caption>[^\]]*)\]\((?P<name>[^)]+)\)$")
_NUMBER = re.compile(r"^[-+]?\d+(\.\d+)?( \[[-+]?\d+(\.\d+)?, [-+]?\d+(\.\d+)?\])?$|^–$")


def markdown_document(title: str, markdown_sections: list[tuple[str, str]]) -> str:
    """The sections as one Markdown page; a section without a heading runs on under the title."""
    return f"# {title}\n\n" + "\n\n".join((f"## {h}\n\n{t}" if h else t) for h, t in markdown_sections)


def html_document(title: str, markdown_sections: list[tuple[str, str]], images: dict[str, bytes]) -> str:
    """A standalone HTML page: Markdown tables as HTML tables, ``![caption](name)`` lines as inline figures.

    Images referenced by no section are appended at the end, so none is lost.
    """
    parts = [(f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
              f"<style>{_STYLE}</style></head><body>"), f"<h1>{html.escape(title)}</h1>"]
    used: set[str] = set()
    for heading, text in markdown_sections:
        if heading:
            parts.append(f"<h2>{html.escape(heading)}</h2>")
        parts.append(_markdown_block(text, images, used))
    parts += [_figure(name, png, name) for name, png in images.items() if name not in used]
    parts.append("</body></html>")
    return "\n".join(parts)


def _figure(caption: str, png: bytes, name: str) -> str:
    return (f"<figure><img alt='{html.escape(name)}' src='{_data_uri(png)}'>"
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _data_uri(png: bytes) -> str:
    return f"data:image/png;base64,{base64.b64encode(png).decode()}"


def inline_images(markdown: str, images: Mapping[str, bytes]) -> str:
    """``markdown`` with each ``(name)`` image link made a data URI, for a viewer with no files beside it
    (Dagster's UI)."""
    for name, png in images.items():
        markdown = markdown.replace(f"({name})", f"({_data_uri(png)})")
    return markdown


def _inline(text: str) -> str:
    """Escaped text with `code` spans and **bold** runs."""
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>",
                  re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text)))


def _markdown_block(text: str, images: dict[str, bytes] | None = None, used: set[str] | None = None) -> str:
    """Markdown pipe tables, ### headings and image lines to HTML; other lines become paragraphs.

    Columns whose cells are all numbers (or –) are right-aligned, text columns left-aligned.
    """
    out, table = [], []
    images, used = images or {}, used if used is not None else set()

    def flush() -> None:
        if table:
            rows = [[c.strip() for c in r.strip().strip("|").split("|")] for r in table
                    if not set(r.strip()) <= set("|-: ")]
            head, body = rows[0], rows[1:]
            numeric = [bool(body) and all(_NUMBER.match(r[i]) for r in body if i < len(r)) for i in range(len(head))]
            cls = ["num" if n else "txt" for n in numeric]
            out.append("<table><tr>" + "".join(f"<th class='{k}'>{_inline(c)}</th>" for c, k in zip(head, cls))
                       + "</tr>" + "".join("<tr>" + "".join(f"<td class='{k}'>{_inline(c)}</td>"
                                                           for c, k in zip(r, cls)) + "</tr>" for r in body)
                       + "</table>")
            table.clear()

    for line in text.splitlines():
        if line.strip().startswith("|"):
            table.append(line)
            continue
        flush()
        image = _IMAGE.match(line.strip())
        if image and image["name"] in images:
            used.add(image["name"])
            out.append(_figure(image["caption"], images[image["name"]], image["name"]))
        elif line.startswith(("### ", "#### ")):
            level = line.index(" ")
            out.append(f"<h{level}>{_inline(line[level + 1:])}</h{level}>")
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
    flush()
    return "\n".join(out)


def mteb_results(metrics: pl.DataFrame, data_version: str, code_version: str,
                 task_name: str = "SkillRouting") -> dict[str, dict]:
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
        results[system] = {"task_name": task_name, "dataset_revision": data_version,
                           "mteb_version": None, "skill_assets_version": code_version, "scores": scores}
    return results


def external_mteb_results(external: pl.DataFrame, code_version: str) -> dict[str, dict]:
    """``mteb_results`` per external benchmark (task ``SkillRouting-<name>``), each at its own data version."""
    if not external.height:
        return {}
    by_benchmark = as_splits(external).partition_by("split", as_dict=True)
    return {name: mteb_results(part, part["data_version"][0], code_version, task_name=f"SkillRouting-{name}")
            for (name,), part in by_benchmark.items()}
