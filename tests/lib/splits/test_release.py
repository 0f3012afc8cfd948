"""A release folder loads with datasets, DuckDB and TREC tooling, and its card tells the counts."""
import json

import duckdb
import polars as pl

from skill_assets.lib.common.tables import frame
from skill_assets.lib.review.outcomes import agreement_markdown
from skill_assets.lib.splits.release import export_release


def _frames():
    skills = pl.DataFrame({
        "skill_id": ["a", "b", "c"], "name": ["docker", "helm", "pandas"], "description": ["d1", "d2", "d3"],
        "body": ["b1", "b2", "b3"], "language": ["en"] * 3, "source": ["demo"] * 3, "repo": ["r"] * 3,
        "commit": [None] * 3, "license": ["MIT"] * 3, "pool": ["train", "train", "test"],
        "sub_cluster": [0, 0, 1], "super_domain": [0, 0, 1]})
    queries = frame("benchmark_queries", [
        {"query_id": "q1", "split": "train", "query": "fix my compose stack", "skill_ids": ["a"], "direction": "en2en",
         "k": 1, "style": "debug", "generator_model": "m1", "skip_partners": ["b"], "exclusion_reason": ""},
        {"query_id": "q2", "split": "test", "query": "clean this frame", "skill_ids": ["c"], "direction": "en2en",
         "k": 1, "style": "scene", "generator_model": "m2", "skip_partners": [], "exclusion_reason": ""},
        {"query_id": "q3", "split": "excluded", "query": "helm", "skill_ids": ["b"], "direction": "en2en",
         "k": 1, "style": "scene", "generator_model": "m1", "skip_partners": [], "exclusion_reason": "name_leakage"},
    ])
    skips = pl.DataFrame({"record_id": ["s1"], "pool": ["train"], "direction": ["en2en"], "k": [2],
                          "skill_ids": [["a", "b"]], "rationale": ["unrelated domains"], "model": ["m1"],
                          "label": ["domain_mismatch"], "rule_id": ["domain.en"], "matched_span": ["unrelated domains"],
                          "ruleset_version": ["v"]})
    audit = frame("query_audit", [{"record_id": "q1", "direction": "en2en", "k": 1, "name_leakage": False,
                                   "passed": True}])
    return skills, queries, skips, audit


def test_release_loads_everywhere(tmp_path):
    import datasets

    root = export_release(tmp_path, *_frames())
    test = datasets.load_dataset("parquet", data_files=str(root / "queries" / "test.parquet"), split="train")
    assert test["query_id"] == ["q2"] and test["skill_ids"] == [["c"]]
    assert duckdb.sql(f"SELECT count(*) FROM '{root}/skills/train.parquet'").fetchone()[0] == 2
    assert (root / "qrels" / "train.qrels").read_text() == "q1 0 a 1\n"
    skills = [json.loads(line) for line in (root / "r3" / "skills.jsonl").read_text().splitlines()]
    assert skills[0] == {"id": "a", "text": "docker | d1 | b1"}
    assert json.loads((root / "r3" / "queries_test.jsonl").read_text()) == {"query": "clean this frame", "skill_ids": ["c"]}
    excluded = pl.concat([pl.read_parquet(root / "queries" / f"{s}.parquet") for s in ("train", "dev", "test")])
    assert "q3" not in excluded["query_id"].to_list() and "exclusion_reason" not in excluded.columns
    card = (root / "README.md").read_text()
    assert "domain_mismatch" in card and "MIT" in card and root.name in card


def test_same_benchmark_same_version(tmp_path):
    assert export_release(tmp_path / "a", *_frames()).name == export_release(tmp_path / "b", *_frames()).name


def test_release_carries_the_review_state_and_its_agreement(tmp_path):
    skills, queries, skips, audit = _frames()
    queries = queries.with_columns(pl.Series("review_status", ["unreviewed", "corrected", "unreviewed"]))
    rounds = pl.DataFrame([{"kind": "skill_set", "round": 1, "n_items": 40, "n_reviewers": 3, "agreement": 0.95,
                            "disagreement_rate": 0.05, "kappa": 0.81, "kappa_method": "fleiss", "per_skill_kappa": 0.9,
                            "mean_rating": None}])
    root = export_release(tmp_path, skills, queries, skips, audit, agreement_markdown(rounds))
    assert pl.read_parquet(root / "queries" / "test.parquet")["review_status"].to_list() == ["corrected"]
    card = (root / "README.md").read_text()
    review = card.split("## Human review")[1].split("\n## ")[0]
    assert "corrected" in review and "unreviewed" in review
    assert "| skill_set | 1 | 40 | 3 | 95.0 % | 5.0 % | 0.810 (fleiss) | 0.900 | – |" in card
