"""Generation stage: ask the generator for WRITE/SKIP on every combination, then audit the queries.

``llm_records`` is partitioned by direction: a partition reads only its direction's combinations
and replaces only its direction's rows, so one direction can be regenerated alone. Answers go to
the ``llm_response_cache`` table (keyed by template version, model, sampling parameters and
rendered prompt) through a crash-safe journal, so a killed run loses only in-flight requests and a
rerun sends only what is not cached yet (``lib/generation/records.py``).
"""

import dagster as dg
import polars as pl

from skill_assets.defs.generation.partitions import direction_partitions
from skill_assets.defs.metadata import table_metadata
from skill_assets.defs.resources import DUCKDB_WRITER_TAG, DuckDBStore, LLMEndpoint
from skill_assets.lib.common.tables import frame
from skill_assets.lib.generation.llm_client import GenerationLimits, SamplingParams
from skill_assets.lib.generation.pricing import ModelPrice
from skill_assets.lib.generation.prompts import RESPONSE_SCHEMA, TEMPLATE_VERSION, render_messages
from skill_assets.lib.generation.query_audit import AuditWindow, audit_queries
from skill_assets.lib.generation.records import GenerationItem, generate, summarize
from skill_assets.lib.generation.response_cache import ResponseCache

GROUP = "generation"
JOURNAL_DIR = "llm_journal"


class PriceConfig(dg.Config):
    """US dollars per one million tokens for one model."""

    input_per_m: float = 0.0
    output_per_m: float = 0.0


class GenerationSettings(dg.Config):
    temperature: float = 0.7
    max_tokens: int = 400
    seed: int = 0
    use_json_schema: bool = True
    prompt_body_chars: int = 800
    batch_size: int = 8
    max_consecutive_failures: int = 8
    max_total_tokens: int | None = None
    max_total_cost_usd: float | None = None
    prices: dict[str, PriceConfig] = {}


def _replace_direction_rows(store: DuckDBStore, direction: str, df: pl.DataFrame) -> None:
    """Delete this direction's rows and insert ``df`` in one transaction; other directions stay.

    A table written by an older column contract is migrated in the same transaction (shared
    columns kept, new ones null), so adding a column never needs a full regeneration.
    """
    with store.connection() as con:
        con.register("_incoming", df.to_arrow())
        con.execute("BEGIN")
        con.execute("CREATE TABLE IF NOT EXISTS llm_records AS SELECT * FROM _incoming LIMIT 0")
        existing = [r[0] for r in con.execute("SELECT * FROM llm_records LIMIT 0").description]
        if existing != df.columns:
            shared = ", ".join(f'"{c}"' for c in df.columns if c in existing)
            con.execute("ALTER TABLE llm_records RENAME TO _llm_records_old")
            con.execute("CREATE TABLE llm_records AS SELECT * FROM _incoming LIMIT 0")
            if shared:
                con.execute(f"INSERT INTO llm_records ({shared}) SELECT {shared} FROM _llm_records_old")
            con.execute("DROP TABLE _llm_records_old")
        con.execute("DELETE FROM llm_records WHERE direction = ?", [direction])
        con.execute("INSERT INTO llm_records SELECT * FROM _incoming")
        con.execute("COMMIT")
        con.unregister("_incoming")


@dg.asset(group_name=GROUP, kinds={"duckdb", "openai"}, deps=["skill_combinations", "skills"],
          partitions_def=direction_partitions, op_tags=DUCKDB_WRITER_TAG)
def llm_records(context: dg.AssetExecutionContext, config: GenerationSettings, store: DuckDBStore, llm: LLMEndpoint):
    """One WRITE/SKIP/INVALID/FAILED decision per combination of one direction, never paying twice for a prompt."""
    direction = context.partition_key
    combos = store.query("SELECT * FROM skill_combinations WHERE direction = ? ORDER BY combination_id",
                         [direction]).to_dicts()
    needed = sorted({s for c in combos for s in c["skill_ids"]})
    skills = {s["skill_id"]: s for s in store.query(
        "SELECT skill_id, name, description, body FROM skills WHERE skill_id IN (SELECT unnest(?))",
        [needed]).to_dicts()} if needed else {}
    params = SamplingParams(config.temperature, config.max_tokens, config.seed,
                            RESPONSE_SCHEMA if config.use_json_schema else None)
    items = [GenerationItem(c["combination_id"], llm.model_for_pool(c["pool"]),
                            render_messages([skills[s] for s in c["skill_ids"]], direction, c["style"],
                                            config.prompt_body_chars), TEMPLATE_VERSION, c) for c in combos]
    limits = GenerationLimits(llm.effective_concurrency, config.batch_size, config.max_consecutive_failures,
                              config.max_total_tokens, config.max_total_cost_usd)
    prices = {m: ModelPrice(p.input_per_m, p.output_per_m) for m, p in config.prices.items()}
    outcome = generate(items, llm.client(), params, ResponseCache(store.path), limits, prices,
                       journal_path=store.artifacts_dir / JOURNAL_DIR / f"{direction}.jsonl", log=context.log.info)
    df = frame("llm_records", outcome.rows)
    _replace_direction_rows(store, direction, df)
    stats = summarize(outcome)
    if stats["stop_reason"] != "none":
        context.log.warning(f"generation stopped early: {stats['stop_reason']}")
    return dg.MaterializeResult(metadata=table_metadata("llm_records", df, direction=direction, **stats))


class AuditSettings(dg.Config):
    min_length: int = 50
    max_length: int = 300


@dg.asset(group_name=GROUP, kinds={"duckdb"}, op_tags=DUCKDB_WRITER_TAG,
          deps=[dg.AssetDep("llm_records", partition_mapping=dg.AllPartitionMapping())])
def query_audit(config: AuditSettings, store: DuckDBStore):
    """Audit flags for every WRITE query: duplicates, name leakage, length, language, refusals."""
    records = store.query("""
        SELECT r.record_id, r.query, r.direction, r.k, list(s.name ORDER BY s.name) AS skill_names
        FROM llm_records r, unnest(r.skill_ids) AS u(skill_id) JOIN skills s ON s.skill_id = u.skill_id
        WHERE r.decision = 'WRITE' GROUP BY ALL ORDER BY r.record_id""").to_dicts()
    rows = audit_queries(records, AuditWindow(config.min_length, config.max_length))
    df = frame("query_audit", rows)
    store.write("query_audit", df)
    flags = ["duplicate_exact", "duplicate_normalised", "name_leakage", "length_out_of_window",
             "language_mismatch", "empty_or_refusal"]
    return dg.MaterializeResult(metadata=table_metadata(
        "query_audit", df, passed=int(df["passed"].sum() or 0),
        **{f"flag/{f}": int(df[f].sum() or 0) for f in flags}))
