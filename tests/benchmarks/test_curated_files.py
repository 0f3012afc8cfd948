"""The shipped curated benchmark (``skill_assets/benchmarks/curated/``) meets the rules it was written to.

Counts, splits and rejection classes are read from the package files; the query audit, id resolution
and the pinned sources are checked against the shared corpus beside the checkout (``../shared``),
which CI has: there a missing corpus fails these tests instead of skipping them (``conftest.py``).
"""
import json
from collections import Counter
from functools import cache
from pathlib import Path

import pytest
import yaml

from skill_assets.lib.evaluation.curated_benchmark import (
    CURATED_DIR,
    load_rejections,
    load_requests,
    split_skills,
)
from skill_assets.lib.evaluation.curated_card import count_tables
from skill_assets.lib.generation.query_audit import AuditWindow, audit_queries
from skill_assets.lib.retrieval.pools import load_pool
from skill_assets.lib.retrieval.requests import require_in_pool
from skill_assets.lib.taxonomy.rules import TAXONOMY_CLASSES

REQUESTS = load_requests()
REJECTIONS = load_rejections()


@cache
def _names(repos: Path) -> dict[str, str]:
    return {s.id: s.name for s in load_pool(repos).skills}


@pytest.fixture
def shared_pool(shared_corpus) -> dict[str, str]:
    """Skill id → name of every parseable SKILL.md of the shared corpus (ids relative to ``repos/``)."""
    return _names(shared_corpus)


def test_request_counts_meet_the_issue():
    assert len(REQUESTS) >= 600
    directions = Counter(r.direction for r in REQUESTS)
    assert directions["en2en"] >= 250 and directions["en2zh"] >= 150
    assert directions["zh2en"] >= 60 and directions["zh2zh"] >= 60
    k = Counter(r.k for r in REQUESTS)
    assert 0.4 <= k[1] / len(REQUESTS) <= 0.6      # about half
    assert 0.25 <= k[2] / len(REQUESTS) <= 0.42    # about a third
    assert k[3] > 0 and set(k) == {1, 2, 3}        # the rest
    styles = Counter(r.writing.style for r in REQUESTS)
    assert len(styles) == 6 and min(styles.values()) >= len(REQUESTS) / 12  # all six, none a token share


def test_rejections_cover_every_taxonomy_class_in_both_languages():
    assert len(REJECTIONS) >= 200
    classes = set(TAXONOMY_CLASSES) - {"unknown"}
    assert {r.label for r in REJECTIONS} == classes
    assert {r.lang for r in REJECTIONS} == {"en", "zh"}
    assert all(2 <= len(r.skills) <= 3 for r in REJECTIONS)
    assert len({r.id for r in REJECTIONS}) == len(REJECTIONS)


def test_splits_are_about_60_10_30_and_skill_disjoint():
    share = {s: n / len(REQUESTS) for s, n in Counter(r.split for r in REQUESTS).items()}
    assert abs(share["train"] - 0.6) <= 0.07 and abs(share["dev"] - 0.1) <= 0.04 and abs(share["test"] - 0.3) <= 0.05
    test_skills = split_skills(REQUESTS, ["test"])
    assert not test_skills & split_skills(REQUESTS, ["train", "dev"])


def test_card_counts_are_the_files_counts():
    card = (CURATED_DIR / "README.md").read_text(encoding="utf-8")
    for table in count_tables(REQUESTS).values():
        assert table in card
    assert f"{len(REQUESTS)} requests and {len(REJECTIONS)} SKIP decisions" in card


def test_every_ground_truth_id_resolves_in_the_shared_corpus(shared_pool):
    require_in_pool(REQUESTS, set(shared_pool), "../shared/corpus/github-skills/repos")  # raises naming any id
    missing = sorted({s for r in REJECTIONS for s in r.skills} - set(shared_pool))
    assert missing == []


def test_the_project_query_audit_passes_on_every_request(shared_pool):
    rows = audit_queries([{"record_id": r.id, "query": r.query, "direction": r.direction, "k": r.k,
                           "skill_names": [shared_pool[s] for s in r.gt]} for r in REQUESTS],
                         AuditWindow(min_length=8, max_length=300))
    failed = {row["record_id"]: row["reasons"] for row in rows if not row["passed"]}
    assert failed == {}


def test_sources_pin_every_repository_at_its_manifest_commit(shared_corpus):
    manifest = [json.loads(line) for line in (shared_corpus.parent / "MANIFEST.jsonl").read_text().splitlines()
                if line.strip()]
    sources = yaml.safe_load((CURATED_DIR / "sources.yaml").read_text())["sources"]
    assert [s["name"] for s in sources] == sorted(p.name for p in shared_corpus.iterdir() if p.is_dir())
    assert {s["name"]: (s["kind"], s["location"], s["commit"]) for s in sources} == {
        m["repo"].replace("/", "__"): ("git", f"https://github.com/{m['repo']}.git", m["commit"]) for m in manifest}
