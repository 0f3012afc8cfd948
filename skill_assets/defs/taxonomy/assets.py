"""Taxonomy stage: classify every SKIP rationale (settled rules, then the shipped model, then, when
asked for, the configured LLM), and turn reviewers' taxonomy verdicts into labelled rationales for the
model's next fit.

The LLM fallback is off by default and is its own asset, ``taxonomy_llm_labels``: it needs the ``llm``
resource, which with no endpoint configured starts the bundled SmolLM2 server, and ``skip_taxonomy``
(automated) must not start a server to ask nothing. With ``enabled: true`` and an endpoint configured it
asks for the class of every SKIP that the rules and the model leave below the floor, through the
generation stage's response cache, journal and budget (a rerun sends nothing already answered); with the
bundled SmolLM2 it stays off. ``skip_taxonomy`` reads its answers when the table is there (not as a
dependency: it comes after) and labels those rows ``method = llm``, so the loop is: materialize
``skip_taxonomy``, then ``taxonomy_llm_labels``, then ``skip_taxonomy`` again.
"""

import dagster as dg

from skill_assets.defs.metadata import table_metadata
from skill_assets.defs.resources import DUCKDB_WRITER_TAG, DuckDBStore, LLMEndpoint
from skill_assets.lib.common.tables import frame
from skill_assets.lib.generation.llm_client import GenerationLimits, SamplingParams
from skill_assets.lib.generation.pricing import ModelPrice
from skill_assets.lib.generation.records import GenerationItem, generate
from skill_assets.lib.generation.response_cache import ResponseCache
from skill_assets.lib.review.agreement import latest_items
from skill_assets.lib.taxonomy.classify import classify_rationales, shipped_model
from skill_assets.lib.taxonomy.llm_fallback import (
    RESPONSE_SCHEMA,
    TEMPLATE_VERSION,
    answers_fallback,
    llm_messages,
    parse_llm_label,
    rationale_key,
)
from skill_assets.lib.taxonomy.review_labels import review_labelled_rationales, write_review_labels
from skill_assets.lib.taxonomy.rules import RULESET_VERSION

#: the generation stage's journal folder (a journal left by a killed run is committed by whichever run comes next)
JOURNAL_DIR = "llm_journal"


def _llm_answers(store: DuckDBStore) -> dict[str, str]:
    """rationale key → class from ``taxonomy_llm_labels``, when it has been materialized."""
    if not store.exists("taxonomy_llm_labels"):
        return {}
    rows = store.query("SELECT rationale_key, label FROM taxonomy_llm_labels WHERE label IS NOT NULL").to_dicts()
    return {r["rationale_key"]: r["label"] for r in rows}


@dg.asset(group_name="taxonomy", kinds={"duckdb"}, deps=["llm_records"], op_tags=DUCKDB_WRITER_TAG)
def skip_taxonomy(store: DuckDBStore):
    """Rejection class of every SKIP and how it was reached (rule_id, model or llm, confidence); shares over k ≥ 2.

    Reads ``taxonomy_llm_labels`` when present (not as a dependency: it comes after) for what the rules
    and the model leave unknown; it sends no request itself.
    """
    skips = store.query("SELECT record_id, direction, k, rationale FROM llm_records WHERE decision = 'SKIP' "
                        "ORDER BY record_id").to_dicts()
    answers = _llm_answers(store)
    labels = classify_rationales([s["rationale"] or "" for s in skips],
                                 fallback=answers_fallback(answers) if answers else None)
    rows = [{**s, "label": x.label, "method": x.method, "rule_id": x.rule_id, "matched_span": x.matched_span,
             "confidence": x.confidence, "model_version": x.model_version, "ruleset_version": RULESET_VERSION}
            for s, x in zip(skips, labels)]
    df = frame("skip_taxonomy", rows)
    store.write("skip_taxonomy", df)
    multi = df.filter(df["k"] >= 2)
    shares = multi.group_by("label").len().to_dicts()
    methods = multi.group_by("method").len().to_dicts()
    coverage = (1 - multi.filter(multi["label"] == "unknown").height / multi.height) if multi.height else float("nan")
    model = shipped_model()
    return dg.MaterializeResult(metadata=table_metadata(
        "skip_taxonomy", df, ruleset_version=RULESET_VERSION, model_version=model.version if model else "none",
        coverage_k2plus=coverage, llm_answers_available=len(answers),
        **{f"share/{r['label']}": round(r["len"] / multi.height, 3) for r in shares},
        **{f"method/{r['method']}": round(r["len"] / multi.height, 3) for r in methods}))


class TaxonomyLLMSettings(dg.Config):
    enabled: bool = False  # off by default: asking costs money; with the bundled SmolLM2 it stays off anyway
    max_tokens: int = 32  # the answer is one short JSON object
    batch_size: int = 8
    max_consecutive_failures: int = 8
    max_total_tokens: int | None = None  # the same budget generation has: stops cleanly before it is exceeded
    max_total_cost_usd: float | None = None
    input_per_m: float = 0.0  # US dollars per million tokens of the configured model (for the dollar budget)
    output_per_m: float = 0.0


@dg.asset(group_name="taxonomy", kinds={"duckdb", "openai"}, deps=["skip_taxonomy"], op_tags=DUCKDB_WRITER_TAG)
def taxonomy_llm_labels(context: dg.AssetExecutionContext, config: TaxonomyLLMSettings, store: DuckDBStore,
                        llm: LLMEndpoint):
    """The configured LLM's class for every SKIP the rules and the model leave below the floor (off by default).

    Requests go through the generation stage's response cache, journal and token / dollar budget, so an
    answer is never paid for twice and a rerun sends only what is not answered yet; requests the budget or a
    dead endpoint left unsent are rows with an ``error`` and no label, asked again next run. Rematerialize
    ``skip_taxonomy`` afterwards to fold the answers in (``method = llm``).
    """
    off = ("off (enabled: false)" if not config.enabled else
           "off: the bundled SmolLM2 is no judge of rejection classes; configure an LLM endpoint"
           if llm.uses_local_server else "")
    skips = [] if off else store.query(
        "SELECT record_id, rationale FROM skip_taxonomy WHERE method IN ('none', 'llm') "
        "AND coalesce(trim(rationale), '') <> '' ORDER BY record_id").to_dicts()
    if off:
        context.log.info(f"taxonomy LLM fallback {off}: nothing asked")
    items = [GenerationItem(s["record_id"], llm.model, llm_messages(s["rationale"]), TEMPLATE_VERSION,
                            {"rationale_text": s["rationale"]}) for s in skips]
    limits = GenerationLimits(llm.effective_concurrency, config.batch_size, config.max_consecutive_failures,
                              config.max_total_tokens, config.max_total_cost_usd)
    outcome = generate(items, llm.client(), SamplingParams(0.0, config.max_tokens, 0, RESPONSE_SCHEMA),
                       ResponseCache(store.path), limits,
                       {llm.model: ModelPrice(config.input_per_m, config.output_per_m)},
                       journal_path=store.artifacts_dir / JOURNAL_DIR / "taxonomy.jsonl",
                       log=context.log.info) if items else None
    rows = []
    for r in outcome.rows if outcome else []:
        answered = r["decision"] != "FAILED"
        label = parse_llm_label(r["raw_response"]) if answered else None
        rows.append({"record_id": r["record_id"], "rationale": r["rationale_text"], "rationale_key":
                     rationale_key(r["rationale_text"]), "label": label, "answer": r["raw_response"],
                     "error": r["error"] if not answered else None if label else "no class in the answer",
                     "model": r["model"], "template_version": r["template_version"], "request_key": r["request_key"],
                     "cached": bool(r["cached"])})
    df = frame("taxonomy_llm_labels", rows)
    store.write("taxonomy_llm_labels", df)
    stop = " | ".join(outcome.stop_reasons) if outcome else ""
    if stop:
        context.log.warning(f"taxonomy LLM fallback stopped early: {stop}")
    return dg.MaterializeResult(metadata=table_metadata(
        "taxonomy_llm_labels", df, state=off or "on", asked=len(items),
        requests_sent=outcome.requests_sent if outcome else 0,
        answered_from_cache=sum(r["cached"] for r in rows), labelled=sum(r["label"] is not None for r in rows),
        not_answered=sum(r["answer"] is None for r in rows), stop_reason=stop or "none"))


@dg.asset(group_name="taxonomy", kinds={"duckdb", "json"}, deps=["label_agreement"], op_tags=DUCKDB_WRITER_TAG)
def taxonomy_review_labels(store: DuckDBStore):
    """Settled taxonomy review items as labelled rationales (confirmed class, or the reviewers' correction).

    Written beside the store as ``taxonomy/review_labels.jsonl``: copy it over
    ``lib/taxonomy/data/review_labels.jsonl`` and rerun ``python -m skill_assets.lib.taxonomy.fitting``
    for the next training round (a fit reads only committed data, so a rebuild stays reproducible).
    """
    stored = {t: store.read(t).to_dicts() if store.exists(t) else [] for t in
              ("review_tasks", "review_verdicts", "label_agreement")}
    rows = review_labelled_rationales(stored["review_tasks"], stored["review_verdicts"],
                                      latest_items(stored["label_agreement"]))
    df = frame("taxonomy_review_labels", rows)
    store.write("taxonomy_review_labels", df)
    path = write_review_labels(store.artifacts_dir / "taxonomy" / "review_labels.jsonl", rows)
    return dg.MaterializeResult(metadata=table_metadata(
        "taxonomy_review_labels", df, export=str(path),
        corrected=sum(r["outcome"] == "corrected" for r in rows), confirmed=sum(r["outcome"] == "confirmed" for r in rows)))
