"""Export a frozen benchmark release that loads anywhere without conversion.

Layout of ``<out>/<version>/``:
- ``skills/{train,test}.parquet``, ``queries/{train,dev,test}.parquet``, ``skip_records.parquet``
  — for DuckDB, Polars and ``datasets.load_dataset("parquet", data_files=...)``;
- ``qrels/{split}.qrels`` — TREC qrels (``query_id 0 skill_id 1``) for trec_eval / ranx / ir-measures;
- ``r3/skills.jsonl`` (``{"id", "text"}`` with text ``name | description | body``) and
  ``r3/queries_{split}.jsonl`` (``{"query", "skill_ids"}``) — the R3-Skill release layout;
- ``README.md`` — the dataset card.

The version is the export date plus a content hash of the queries, so two exports of the same
benchmark share a version and a changed benchmark never overwrites an old release.
"""
from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from skill_assets.lib.common.provenance import release_version

SPLITS = ("train", "dev", "test")


def _write_jsonl(path: Path, rows) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


#: the card's review section where the caller gives no agreement table
NO_REVIEW = "_No agreement figures were given for this release._"


def _table(df: pl.DataFrame) -> str:
    return df.to_pandas().to_markdown(index=False) if df.height else "_none_"


def dataset_card(version: str, skills: pl.DataFrame, queries: pl.DataFrame, skips: pl.DataFrame,
                 audit: pl.DataFrame, agreement: str = NO_REVIEW) -> str:
    kept = queries.filter(pl.col("split") != "excluded")
    by_dir_k = (kept.group_by("direction", "k").len().pivot(on="k", index="direction", values="len")
                .fill_null(0).sort("direction")) if kept.height else pl.DataFrame()
    multi = skips.filter(pl.col("k") >= 2)
    shares = (multi.group_by("label").len().with_columns((100 * pl.col("len") / multi.height).round(1).alias("share_%"))
              .sort("len", descending=True)) if multi.height else pl.DataFrame()
    flags = [c for c in audit.columns if audit.schema[c] == pl.Boolean and c != "passed"]
    audit_rates = (audit.group_by("direction").agg([(100 * pl.col(f).mean()).round(1).alias(f) for f in flags])
                   .sort("direction")) if audit.height else pl.DataFrame()
    provenance = skills.group_by("source", "repo", "commit", "license").len().sort("source") if skills.height else skills
    return "\n\n".join([
        f"# skill-assets benchmark release {version}",
        "Skill-routing benchmark: user queries with the set of 1–3 agent skills that solves each, plus the "
        "SKIP records (sets a generator judged not to belong together) with their rejection class.",
        "## Files",
        "- `skills/{train,test}.parquet`, `queries/{train,dev,test}.parquet`, `skip_records.parquet`\n"
        "- `qrels/<split>.qrels` (TREC), `r3/skills.jsonl` + `r3/queries_<split>.jsonl` (R3-Skill layout)",
        "## Queries by split", _table(kept.group_by("split").len().sort("split")),
        "## Queries by direction × k", _table(by_dir_k),
        "## Rejection taxonomy (k ≥ 2 SKIPs)", _table(shares),
        "## Audit flag rates (% of WRITE queries)", _table(audit_rates),
        "## Human review (`review_status` by split; agreement from `label_agreement`)",
        _table(kept.group_by("split", "review_status").len().sort("split", "review_status")),
        agreement,
        "## Generator models", _table(kept.group_by("split", "generator_model").len().sort("split")),
        "## Corpus provenance and licenses", _table(provenance),
    ]) + "\n"


def export_release(out_dir: Path, skills: pl.DataFrame, queries: pl.DataFrame, skips: pl.DataFrame,
                   audit: pl.DataFrame, agreement: str = NO_REVIEW) -> Path:
    """Write the release folder and return it; ``skills`` needs a ``pool`` column, ``queries`` a ``split``.

    The queries carry their ``review_status``; ``agreement`` is the reviewers' agreement table for the card
    (``lib.review.outcomes.agreement_markdown`` of ``label_agreement``'s round rows, rendered by the caller).
    """
    version = release_version(queries)
    root = out_dir / version
    for sub in ("skills", "queries", "qrels", "r3"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for pool in ("train", "test"):
        skills.filter(pl.col("pool") == pool).write_parquet(root / "skills" / f"{pool}.parquet")
    for split in SPLITS:
        part = queries.filter(pl.col("split") == split).drop("exclusion_reason", strict=False)
        part.write_parquet(root / "queries" / f"{split}.parquet")
        qrels = part.select("query_id", "skill_ids").explode("skill_ids")
        (root / "qrels" / f"{split}.qrels").write_text(
            "".join(f"{q} 0 {s} 1\n" for q, s in qrels.iter_rows()))
        _write_jsonl(root / "r3" / f"queries_{split}.jsonl",
                     ({"query": q, "skill_ids": ids} for q, ids in part.select("query", "skill_ids").iter_rows()))
    skips.write_parquet(root / "skip_records.parquet")
    _write_jsonl(root / "r3" / "skills.jsonl",
                 ({"id": i, "text": f"{n} | {d} | {b}"}
                  for i, n, d, b in skills.select("skill_id", "name", "description", "body").iter_rows()))
    (root / "README.md").write_text(dataset_card(version, skills, queries, skips, audit, agreement), encoding="utf-8")
    return root
