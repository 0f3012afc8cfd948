"""Metadata every table asset reports: row count, column schema and a small preview."""

import dagster as dg
import polars as pl

from skill_assets.lib.common.tables import TABLES


def table_metadata(table: str, df: pl.DataFrame, preview_rows: int = 5, **extra) -> dict:
    columns = [dg.TableColumn(c.name, str(c.dtype), description=c.doc) for c in TABLES[table].columns]
    preview_cols = [c for c in df.columns if df.schema[c] in (pl.Utf8, pl.Int64, pl.Float64, pl.Boolean)][:6]
    preview = df.head(preview_rows).select(preview_cols).with_columns(
        [pl.col(c).cast(pl.Utf8).str.slice(0, 80) for c in preview_cols if df.schema[c] == pl.Utf8])
    return {
        "dagster/row_count": df.height,
        "dagster/column_schema": dg.TableSchema(columns=columns),
        "dagster/table_name": table,
        "preview": dg.MetadataValue.md(preview.to_pandas().to_markdown(index=False) if preview.height else "_empty_"),
        **extra,
    }
