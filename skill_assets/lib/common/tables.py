"""The public table contract: every tabular asset's columns, types and meaning.

Assets build their frames through ``frame()`` so an empty result still has the documented
columns, and ``docs/ARCHITECTURE.md`` is checked against this module by a test.
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

S, I, F, B, T = pl.Utf8, pl.Int64, pl.Float64, pl.Boolean, pl.Datetime("us", "UTC")
LS = pl.List(pl.Utf8)


@dataclass(frozen=True)
class Column:
    name: str
    dtype: pl.DataType
    doc: str


@dataclass(frozen=True)
class Table:
    name: str
    doc: str
    columns: tuple[Column, ...]

    @property
    def schema(self) -> dict[str, pl.DataType]:
        return {c.name: c.dtype for c in self.columns}


def _t(name: str, doc: str, *cols: tuple) -> Table:
    return Table(name, doc, tuple(Column(*c) for c in cols))


#: the value columns benchmark_metrics and external_metrics share (one metric of one system on one slice)
_METRIC_VALUE_COLUMNS = (
    ("metric", S, "hit@1, mrr@10, ndcg@K, recall@K, fc@K, comp@K, set_compat"), ("value", F, "mean"),
    ("ci_low", F, "2.5th percentile of the mean over 2,000 bootstrap resamples of the queries"),
    ("ci_high", F, "97.5th percentile of the same"),
    ("n_queries", I, "queries in the slice"),
    ("delta_vs_base", F, "mean paired difference to embedder:base on the same queries"),
    ("p_value_vs_base", F, "two-sided paired-bootstrap p-value of that difference"),
)


TABLES: dict[str, Table] = {t.name: t for t in [
    _t("raw_skills", "One row per SKILL.md that parsed.",
       ("skill_id", S, "stable id: source name / skill folder path"), ("source", S, "source name"),
       ("path", S, "file path inside the source"), ("repo", S, "repository URL or source location"),
       ("commit", S, "git commit of the source, when known"),
       ("license", S, "SPDX id from the skill folder's or the source's license file; 'other' if unrecognised"),
       ("name", S, "front-matter name"),
       ("description", S, "front-matter description"), ("body", S, "Markdown body"),
       ("language", S, "skill language (en/zh) from description + body"), ("name_language", S, "en/zh"),
       ("description_language", S, "en/zh"), ("body_language", S, "en/zh"),
       ("file_hash", S, "blake2b-128 of the file bytes"), ("name_hash", S, "hash of the normalised name"),
       ("content_hash", S, "hash of normalised description + body"),
       ("body_chars", I, "length of the normalised body (the dedup keep policy prefers the longest)"),
       ("n_bytes", I, "file size"),
       ("extra_front_matter", S, "JSON of the other front-matter keys"), ("ingested_at", T, "ingest time")),
    _t("ingest_rejects", "Files (or sources) that could not become a skill, with the reason.",
       ("source", S, "source name"), ("path", S, "file path inside the source, or the source path"),
       ("reason", S, "reason code (missing_front_matter, invalid_yaml, missing_name, not_utf8, ...)"),
       ("message", S, "human-readable detail"), ("ingested_at", T, "ingest time")),
    _t("skills", "Deduplicated skills: the corpus every later stage uses.",
       ("skill_id", S, "stable id"), ("source", S, "source name"), ("path", S, "file path"),
       ("name", S, "name"), ("description", S, "description"), ("body", S, "body"), ("language", S, "en/zh"),
       ("content_hash", S, "normalised content hash (unique)"), ("n_duplicates", I, "raw files folded into this skill"),
       ("file_operation_rule", S, "rule name when a generic file-format handler (excluded from sampling), else null")),
    _t("skill_duplicates", "Every raw skill folded into a kept one, and by which layer.",
       ("duplicate_skill_id", S, "the folded raw skill"), ("kept_skill_id", S, "the skill kept in `skills`"),
       ("layer", S, "name_and_content | content | near_duplicate"), ("similarity", F, "1.0, or the verified Jaccard")),
    _t("skill_embeddings", "Embedding of each skill document; also the embedding cache.",
       ("skill_id", S, "skill id"), ("model_id", S, "model name or path"), ("model_fingerprint", S, "hash of the weights / embedding backend (@ CPU where the backend depends on it); the cache key with text_hash"),
       ("text_hash", S, "hash of the embedded text"), ("embedding", pl.List(pl.Float32), "L2-normalised vector")),
    _t("cluster_sweep", "KMeans quality figures for every candidate K.",
       ("k", I, "number of sub-clusters"), ("inertia", F, "KMeans inertia (lower better)"),
       ("intra_cosine", F, "mean cosine of skills to their centroid (higher better)"),
       ("neighbour_centroid_cosine", F, "mean cosine of each centroid to its nearest other (lower better)"),
       ("inertia_score", F, "normalised, higher better"), ("intra_score", F, "normalised, higher better"),
       ("separation_score", F, "normalised, higher better"), ("score", F, "mean of the three"),
       ("selected", B, "the chosen K")),
    _t("skill_clusters", "Sub-cluster and super-domain of each skill, with readable keywords.",
       ("skill_id", S, "skill id"), ("sub_cluster", I, "KMeans cluster at the chosen K"),
       ("super_domain", I, "agglomerative merge of sub-clusters"), ("sub_cluster_keywords", S, "c-TF-IDF keywords"),
       ("super_domain_keywords", S, "c-TF-IDF keywords"),
       ("is_noise", B, "HDBSCAN called it noise; assigned to the nearest centroid (always false for kmeans)")),
    _t("skill_pools", "Skill-level train/test pool, fixed before sampling.",
       ("skill_id", S, "skill id"), ("pool", S, "train | test"), ("language", S, "en/zh"),
       ("sub_cluster", I, "sub-cluster"), ("super_domain", I, "super-domain")),
    _t("skill_combinations", "Sampled 1–3-skill sets to show the generator.",
       ("combination_id", S, "id"), ("pool", S, "train | test"), ("direction", S, "en2en | en2zh | zh2en | zh2zh"),
       ("k", I, "set size"), ("skill_ids", LS, "the skills"), ("neighbourhood", S, "any | sub_cluster:N | super_domain:N"),
       ("style", S, "request style")),
    _t("llm_records", "One generator decision per combination.",
       ("record_id", S, "= combination_id"), ("combination_id", S, "combination"), ("pool", S, "pool"),
       ("direction", S, "direction"), ("k", I, "set size"), ("skill_ids", LS, "the skills"),
       ("neighbourhood", S, "neighbourhood"), ("style", S, "style"),
       ("decision", S, "WRITE | SKIP | INVALID | FAILED"), ("query", S, "the query when WRITE"),
       ("rationale", S, "the rejection rationale when SKIP"), ("error", S, "parse or request error"),
       ("model", S, "generator model"), ("template_version", S, "prompt template hash"),
       ("request_key", S, "response-cache key"), ("raw_response", S, "the model's text"),
       ("prompt_tokens", I, "tokens in"), ("completion_tokens", I, "tokens out"), ("latency_s", F, "request latency"),
       ("retries", I, "HTTP retries the request took (429, 5xx, timeouts, dropped connections)"),
       ("cost_usd", F, "estimated cost from the run config's price table (0 for unpriced/local models)"),
       ("cached", B, "answer came from the response cache (no request this run)")),
    _t("query_audit", "Audit flags of each WRITE query.",
       ("record_id", S, "record"), ("direction", S, "direction"), ("k", I, "set size"),
       ("duplicate_exact", B, "same text as an earlier query"), ("duplicate_normalised", B, "same normalised text"),
       ("name_leakage", B, "a skill name appears in the query"), ("length_out_of_window", B, "outside 50–300 words/chars"),
       ("language_mismatch", B, "query language ≠ direction target"), ("empty_or_refusal", B, "empty or a refusal"),
       ("leaked_names", LS, "names found"), ("query_length", I, "words (en) or CJK characters (zh)"),
       ("query_language", S, "detected"), ("passed", B, "no flag raised"), ("reasons", S, "why not passed")),
    _t("skip_taxonomy", "Rejection class of every SKIP rationale.",
       ("record_id", S, "record"), ("direction", S, "direction"), ("k", I, "set size"), ("rationale", S, "rationale"),
       ("label", S, "taxonomy class"), ("method", S, "how the label was reached: rule | model | llm | none (unknown)"),
       ("rule_id", S, "rule that matched (null unless method = rule)"),
       ("matched_span", S, "text the rule matched"),
       ("confidence", F, "1.0 for a rule; the model's calibrated probability (also kept when below its floor)"),
       ("model_version", S, "taxonomy model consulted (null when a rule decided)"),
       ("ruleset_version", S, "hash of the rule set")),
    _t("taxonomy_llm_labels", "The configured LLM's class for SKIPs the rules and the model leave below the floor "
       "(off by default).",
       ("record_id", S, "SKIP record"), ("rationale", S, "rationale asked about"),
       ("rationale_key", S, "hash of the rationale: what skip_taxonomy matches the answer on"),
       ("label", S, "the class the answer names (null: no single class, unknown, or no answer)"),
       ("answer", S, "the LLM's answer text (null when not answered)"),
       ("error", S, "why there is no label: the unsent request's reason (budget, circuit_open) or the answer's"),
       ("model", S, "LLM asked"), ("template_version", S, "taxonomy prompt version"),
       ("request_key", S, "key in llm_response_cache"), ("cached", B, "answered from the response cache")),
    _t("taxonomy_review_labels", "Settled taxonomy review items as labelled rationales for the model's next fit.",
       ("item_id", S, "review item"), ("rationale", S, "SKIP rationale"), ("label", S, "the class it teaches"),
       ("lang", S, "en | zh"), ("outcome", S, "confirmed (the shown class) | corrected (the class reviewers named)"),
       ("shown_label", S, "the class the reviewers were shown"),
       ("shown_method", S, "how the shown class was reached: rule | model | llm")),
    _t("benchmark_queries", "Benchmark queries with ground truth and SKIP partners.",
       ("query_id", S, "= record_id"), ("split", S, "train | dev | test | excluded"), ("query", S, "query text"),
       ("skill_ids", LS, "ground-truth skill set"), ("direction", S, "direction"), ("k", I, "set size"),
       ("style", S, "style"), ("generator_model", S, "model"), ("skip_partners", LS, "skills judged not to fit (label 1)"),
       ("exclusion_reason", S, "audit reasons when excluded (or `review: rejected`)"),
       ("review_status", S, "unreviewed | confirmed | corrected (skill_ids are the reviewers' set) | rejected")),
    _t("review_tasks", "What needs human eyes: one row per review item and round (Label Studio tasks).",
       ("item_id", S, "<kind>:<subject_id> (external benchmark: <kind>:external:<name>:<subject_id>)"),
       ("round", I, "1, or n+1 for an item disputed after round n"),
       ("kind", S, "skill_set | naturalness | taxonomy"),
       ("subject_id", S, "query_id (skill_set, naturalness) or SKIP record_id (taxonomy)"),
       ("source", S, "pipeline | external:<benchmark>"), ("query", S, "request text (taxonomy: null)"),
       ("direction", S, "direction"), ("k", I, "set size"),
       ("skill_ids", LS, "the label under review: ground-truth set, or the SKIP record's set"),
       ("candidate_skill_ids", LS, "other skills offered as possibly missing (skill_set)"),
       ("taxonomy_label", S, "rejection class under review (taxonomy)"),
       ("taxonomy_method", S, "how that class was reached: rule | model | llm (taxonomy)"),
       ("rationale", S, "SKIP rationale (taxonomy)"),
       ("matched_span", S, "text the taxonomy rule matched (taxonomy)"),
       ("reviewers_needed", I, "verdicts the round needs"),
       ("exclude_reviewers", LS, "reviewers who saw the item in an earlier round (not counted again)"),
       ("project", S, "Label Studio project title"), ("created_at", T, "when the task was first built")),
    _t("review_verdicts", "Imported Label Studio annotations: one row per reviewer, item and round.",
       ("item_id", S, "review item"), ("round", I, "round"), ("kind", S, "skill_set | naturalness | taxonomy"),
       ("subject_id", S, "query_id or SKIP record_id"),
       ("reviewer", S, "annotator e-mail (or label-studio-user-<id> while no e-mail is known for the id)"),
       ("reviewer_id", I, "annotator's Label Studio user id"),
       ("answer", S, "confirm | correct | reject (skill_set); 1-5 (naturalness); correct | incorrect (taxonomy)"),
       ("decision", S, "what agreement compares: confirm | reject | correct:<sorted ids>; natural | unnatural; "
        "correct | incorrect"),
       ("skill_ids", LS, "the reviewer's skill set (skill_set: shown set minus extra plus missing)"),
       ("missing_skill_ids", LS, "skills the reviewer added"), ("extra_skill_ids", LS, "skills the reviewer removed"),
       ("comment", S, "free text"), ("annotation_id", S, "<origin>#<Label Studio annotation id>"),
       ("origin", S, "Label Studio URL or export file name"), ("lead_time_s", F, "time the reviewer spent"),
       ("annotated_at", T, "annotation updated_at"), ("task_updated_at", T, "task updated_at (the pull watermark)"),
       ("retracted_at", T, "when a newer export of the task no longer held the annotation (deleted or skipped): "
        "kept, not counted; null: counted")),
    _t("label_agreement", "Agreement per review item and round (scope item) and per kind and round (scope round).",
       ("scope", S, "item | round"), ("kind", S, "skill_set | naturalness | taxonomy"), ("round", I, "round"),
       ("item_id", S, "review item (item rows)"), ("subject_id", S, "query_id or SKIP record_id (item rows)"),
       ("source", S, "pipeline | external:<benchmark> (item rows)"),
       ("direction", S, "direction (item rows)"), ("k", I, "set size (item rows)"),
       ("n_reviewers", I, "verdicts counted (item: all rounds so far) / distinct reviewers in the round"),
       ("n_items", I, "1 / items with verdicts in the round"),
       ("majority", S, "decision held by a strict majority, else null"),
       ("majority_skill_ids", LS, "the majority's skill set (skill_set)"),
       ("agreement", F, "share of reviewer pairs with the same decision (skill_set: exact-set agreement); "
        "round: mean over items"),
       ("per_skill_agreement", F, "share of reviewer pairs agreeing on each candidate skill's inclusion (skill_set; "
        "round: pooled over the round's candidate skills)"),
       ("status", S, "pending | settled | disputed (item rows)"),
       ("disagreement_rate", F, "round: share of completed items disputed after the round"),
       ("kappa", F, "round: Fleiss' κ (≥ 3 reviewers) or Cohen's κ (2) on the round's decisions"),
       ("kappa_method", S, "fleiss | cohen | null (undefined: one verdict per item or one category)"),
       ("per_skill_kappa", F, "round: the same κ on per-skill include decisions (skill_set)"),
       ("mean_rating", F, "mean naturalness rating 1-5 (naturalness)")),
    _t("hard_negatives", "Teacher-mined hard negatives of every train query, per mining rule.",
       ("rule", S, "r3 (rank 20-50, cosine < 0.85, one) | skillrouter (4 semantic, 3 BM25, 2 same super-domain, "
        "1 random)"), ("query_id", S, "train query"), ("position", I, "1-based order within the query's negatives"),
       ("skill_id", S, "negative skill (never a ground-truth skill, sibling or near-duplicate of one)"),
       ("teacher_model", S, "embedder that ranked the pool")),
    _t("embedder", "Registry of trained embedders: one row per variant partition.",
       ("variant", S, "partition"), ("path", S, "model folder"), ("base_model", S, "starting model"),
       ("loss", S, "loss name"), ("train_queries", I, "training queries"), ("steps", I, "optimizer steps"),
       ("final_loss", F, "last loss"), ("wall_s", F, "training time"), ("trained_at", T, "time")),
    _t("reranker", "Registry of trained rerankers: one row per variant partition.",
       ("variant", S, "partition"), ("path", S, "model folder"), ("base_model", S, "starting model"),
       ("loss", S, "loss name"), ("train_queries", I, "training queries"), ("steps", I, "optimizer steps"),
       ("final_loss", F, "last loss"), ("wall_s", F, "training time"), ("trained_at", T, "time")),
    _t("router_fusion", "Registry of fitted router fusions (fusion weights + selection cut): one row per model folder.",
       ("path", S, "model folder (fusion.json, selection.json, skill_assets_card.json)"),
       ("kind", S, "linear | lambdarank (chosen on dev)"), ("data_source", S, "benchmark_queries | curated:<file>"),
       ("train_requests", I, "requests fitted on"), ("dev_requests", I, "requests chosen on"),
       ("pool_skills", I, "skills in the pool"), ("embedder", S, "bi-encoder of the dense signal"),
       ("dev_hit_at_1", F, "Hit@1 on dev (ground-truth groups)"), ("dev_ndcg_at_10", F, "NDCG@10 on dev"),
       ("dev_set_f1", F, "set F1 of `selected` on dev"),
       ("adopted", B, "the adoption rule lets this fusion replace the shipped router"),
       ("adoption_reason", S, "why it is used or not, in one line"),
       ("dev_delta_vs_default", F, "dev NDCG@10 minus the shipped router's (paired, same pool); null if not compared"),
       ("dev_delta_low", F, "95% bootstrap interval of that difference, low end"),
       ("dev_delta_high", F, "95% bootstrap interval of that difference, high end"),
       ("fusion_digest", S, "sha256 of the model folder's files when judged: a changed folder is not used"),
       ("reranker_path", S, "the store's newest reranker, judged over the fused head"),
       ("reranker_adopted", B, "the adoption rule lets that reranker rerank the fused head"),
       ("reranker_reason", S, "why it is used or not, in one line"),
       ("reranker_train_requests", I, "requests that reranker was trained on"),
       ("reranker_dev_delta", F, "dev NDCG@10 with minus without that reranker (paired); null if not compared"),
       ("reranker_digest", S, "sha256 of that reranker's folder when judged"),
       ("trained_at", T, "time")),
    _t("retrieval_runs", "Ranked skills per (system, query), top 50.",
       ("system", S, "bm25 | multilingual | embedder:<v> | reranker:<v> | rrf:<a>+<b> | fusion | fusion+reranker:<v> | router:default"),
       ("split", S, "evaluated split"), ("query_id", S, "query"),
       ("rank", I, "1-based rank"), ("skill_id", S, "skill"), ("score", F, "system score"),
       ("model_version", S, "bm25s version, or fingerprint of the model weights (reranker: and its first stage)")),
    _t("benchmark_metrics", "Metric values per system, overall and by direction and k.",
       ("system", S, "system"), ("split", S, "split"), ("slice", S, "all | direction=… | k=…"),
       *_METRIC_VALUE_COLUMNS,
       ("data_version", S, "benchmark version (date + hash of the query ids and splits)"),
       ("code_version", S, "skill-assets version + git commit"),
       ("model_version", S, "as in retrieval_runs")),
    _t("benchmark_report", "The rendered report (one row) and where its files are.",
       ("markdown", S, "report Markdown"), ("report_path", S, "Markdown file"), ("plot_path", S, "PNG plot"),
       ("html_path", S, "standalone HTML report"), ("mteb_path", S, "MTEB-shaped results JSON"),
       ("created_at", T, "time")),
    _t("external_skills", "Skill pool of each external benchmark (partition = benchmark name).",
       ("benchmark", S, "benchmark name (partition)"), ("skill_id", S, "skill id as released"),
       ("name", S, "name"), ("description", S, "description"), ("body", S, "body")),
    _t("external_queries", "Queries and ground truth of each external benchmark.",
       ("benchmark", S, "benchmark name (partition)"), ("layout", S, "r3 | skillret | skill_md | curated"),
       ("query_id", S, "query id as released, else <split>-<line>"), ("query", S, "query text"),
       ("skill_ids", LS, "ground-truth skills present in the pool"),
       ("skill_groups", pl.List(LS), "ground truth as groups of interchangeable copies, one per required skill "
                                     "(a ranked member counts as its group); one skill each unless the layout names copies"),
       ("unknown_skill_ids", LS, "ground-truth ids the pool lacks (not scored)"),
       ("k", I, "skills the query needs: len(skill_groups)"),
       ("direction", S, "skill language → query language, where the layout records it (curated), else null"),
       ("evaluated", B, "scored (has at least one ground-truth skill in the pool)"),
       ("data_version", S, "content hash of the imported pool and ground truth")),
    _t("external_runs", "Ranked skills per (benchmark, system, query), by the same systems as retrieval_runs.",
       ("benchmark", S, "benchmark name (partition)"), ("system", S, "as in retrieval_runs"),
       ("query_id", S, "query"), ("rank", I, "1-based rank"), ("skill_id", S, "skill"), ("score", F, "system score"),
       ("model_version", S, "as in retrieval_runs")),
    _t("external_metrics", "Metric values per benchmark and system, overall, by k and by direction, as in benchmark_metrics.",
       ("benchmark", S, "benchmark name (partition)"), ("system", S, "system"), ("slice", S, "all | k=… | direction=…"),
       *_METRIC_VALUE_COLUMNS,
       ("data_version", S, "external_queries.data_version"), ("code_version", S, "skill-assets version + git commit"),
       ("model_version", S, "as in retrieval_runs")),
]}


def frame(table: str, rows: list[dict]) -> pl.DataFrame:
    """A DataFrame with exactly the documented columns, in order, even when ``rows`` is empty."""
    schema = TABLES[table].schema
    # column-wise: lists of references to the rows' values, no per-row dict copies (matters at 100K rows)
    return pl.DataFrame({c: [r.get(c) for r in rows] for c in schema}, schema=schema)
