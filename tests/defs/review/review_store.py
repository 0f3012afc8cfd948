"""A small real store upstream of the review stage, and Label Studio annotation results as reviewers submit them."""
from datetime import UTC, datetime

import dagster as dg

from skill_assets.definitions import defs
from skill_assets.defs.resources import DuckDBStore, default_resources
from skill_assets.lib.common import store as store_lib
from skill_assets.lib.common.tables import frame

SKILLS = {
    "ops/compose-debugging": ("docker-compose-debugging", "Diagnose Docker Compose services that cannot reach each other.",
                              "Check the compose network, service names as hostnames and published ports."),
    "ops/nginx-proxy": ("nginx-reverse-proxy", "Configure nginx as a reverse proxy with TLS and upstream health.",
                        "Write server blocks, proxy_pass, headers and certificate paths."),
    "ops/helm-releases": ("helm-release-management", "Upgrade, diff and roll back Helm releases safely.",
                          "Use helm diff, atomic upgrades and release history."),
    "ops/prometheus-alerts": ("prometheus-alert-rules", "Write Prometheus alerting rules with sane thresholds.",
                              "Recording rules, for: durations, labels and runbook links."),
    "data/pandas-cleaning": ("pandas-data-cleaning", "Clean messy tabular data with pandas.",
                             "Types, missing values, duplicates and string normalisation."),
    "data/csv-validation": ("csv-schema-validation", "Validate CSV files against a schema before loading.",
                            "Column types, required fields and row-level error reports."),
    "data/sql-optimization": ("sql-query-optimization", "Find and fix slow SQL queries with EXPLAIN plans.",
                              "Indexes, join order, predicate pushdown and query rewrites."),
    "data/airflow-dags": ("airflow-dag-authoring", "Author Airflow DAGs with retries, sensors and backfills.",
                          "Task dependencies, schedules and idempotent operators."),
}
QUERIES = {  # record id → (k, skill ids, query)
    "q1": ["ops/compose-debugging", "ops/nginx-proxy"],
    "q2": ["data/pandas-cleaning", "data/csv-validation"],
    "q3": ["ops/prometheus-alerts", "ops/helm-releases"],
    "q4": ["data/sql-optimization", "data/airflow-dags"],
    "q5": ["data/pandas-cleaning"],
}
TEXT = {"q1": "My web container can't reach the api container behind our proxy and TLS fails too, help me untangle it.",
        "q2": "I get CSV exports with broken types and missing columns; check them and clean the data in pandas.",
        "q3": "After each chart upgrade my alerts fire nonstop; I need safer upgrades and saner alert thresholds.",
        "q4": "Our nightly pipeline's SQL got slow and the scheduler retries forever; fix the query and the DAG.",
        "q5": "Please tidy up this dataframe: mixed date formats, duplicate rows and stray whitespace."}
SKIPS = {"x1": (["ops/compose-debugging", "data/pandas-cleaning"], "domain_mismatch", "r-domain",
                "These skills belong to different domains: container networking and dataframe cleaning."),
         "x2": (["ops/helm-releases", "data/csv-validation"], "no_shared_task", "r-task",
                "No single realistic task needs both a Helm rollback and CSV schema checks.")}


def build_upstream(db) -> None:
    """The tables review_tasks, benchmark_queries and benchmark_release read, all skills in the test pool."""
    now = datetime.now(UTC)
    write = lambda table, rows: store_lib.replace_table(db, table, frame(table, rows))  # noqa: E731
    write("raw_skills", [{"skill_id": s, "source": "demo", "path": f"{s}/SKILL.md", "repo": "local", "commit": None,
                          "license": "MIT", "name": n, "description": d, "body": b, "ingested_at": now}
                         for s, (n, d, b) in SKILLS.items()])
    write("skills", [{"skill_id": s, "source": "demo", "path": f"{s}/SKILL.md", "name": n, "description": d, "body": b,
                      "language": "en", "content_hash": s, "n_duplicates": 0} for s, (n, d, b) in SKILLS.items()])
    write("skill_pools", [{"skill_id": s, "pool": "test", "language": "en", "sub_cluster": i % 2, "super_domain": 0}
                          for i, s in enumerate(SKILLS)])
    write("skill_clusters", [{"skill_id": s, "sub_cluster": i % 2, "super_domain": 0, "is_noise": False}
                             for i, s in enumerate(SKILLS)])
    records = [{"record_id": q, "combination_id": q, "pool": "test", "direction": "en2en", "k": len(ids),
                "skill_ids": ids, "neighbourhood": "any", "style": "task_direct", "decision": "WRITE", "query": TEXT[q],
                "model": "test"} for q, ids in QUERIES.items()]
    records += [{"record_id": x, "combination_id": x, "pool": "test", "direction": "en2en", "k": 2, "skill_ids": ids,
                 "neighbourhood": "any", "style": "task_direct", "decision": "SKIP", "rationale": why, "model": "test"}
                for x, (ids, _, _, why) in SKIPS.items()]
    write("llm_records", records)
    write("query_audit", [{"record_id": q, "direction": "en2en", "k": len(ids), "duplicate_exact": False,
                           "duplicate_normalised": False, "name_leakage": False, "length_out_of_window": False,
                           "language_mismatch": False, "empty_or_refusal": False, "passed": True}
                          for q, ids in QUERIES.items()])
    write("skip_taxonomy", [{"record_id": x, "direction": "en2en", "k": 2, "rationale": why, "label": label,
                             "rule_id": rule, "matched_span": why.split()[0], "ruleset_version": "t"}
                            for x, (_, label, rule, why) in SKIPS.items()])


def materialize(db, selection: list[str], run_config: dict | None = None) -> dg.ExecuteInProcessResult:
    return dg.materialize(list(defs.assets or []), selection=selection, raise_on_error=False,
                          run_config=run_config or {},
                          resources={**default_resources(), "store": DuckDBStore(database=str(db))})


def tasks_config(**overrides) -> dict:
    config = {"reviewers_per_item": 2, "naturalness_fraction": 0.4, "taxonomy_per_class": 1, "candidates": 2}
    return {"ops": {"review_tasks": {"config": config | overrides}}}


def verdict_result(kind: str, answer: str, extra: tuple = (), missing: tuple = (), typed: str = "") -> list[dict]:
    """An annotation's ``result`` as Label Studio stores it for the review labelling configs."""
    if kind == "naturalness":
        return [{"from_name": "naturalness", "to_name": "query", "type": "rating", "value": {"rating": int(answer)}}]
    to = "rationale" if kind == "taxonomy" else "query"
    result = [{"from_name": "verdict", "to_name": to, "type": "choices", "value": {"choices": [answer]}}]
    if extra:
        result.append({"from_name": "extra", "to_name": to, "type": "choices", "value": {"choices": list(extra)}})
    if missing:
        result.append({"from_name": "missing", "to_name": to, "type": "choices", "value": {"choices": list(missing)}})
    if typed:
        result.append({"from_name": "missing_other", "to_name": to, "type": "textarea", "value": {"text": [typed]}})
    return result
