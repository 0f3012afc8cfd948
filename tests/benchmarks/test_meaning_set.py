"""The meaning-only request set (``skill_assets/benchmarks/meaning/``) keeps the rules it was written to.

Leakage (no skill name, no product name from the skill's name or description, no copied 6-word or
10-character run, Chinese requests mostly CJK) is checked for every request against its labelled skills
in the shared corpus; counts, directions and the split by skill are checked on the file itself.
"""
from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from skill_assets.lib.evaluation.curated_benchmark import load_requests
from skill_assets.lib.evaluation.meaning_leakage import SkillText, proper_nouns, request_problems
from skill_assets.lib.retrieval.pools import load_pool
from skill_assets.router.shipped_embedder import CURATED_REQUESTS, MEANING_REQUESTS

REQUESTS = load_requests(MEANING_REQUESTS)


@cache
def _pool(repos: Path) -> dict:
    return {s.id: s for s in load_pool(repos).skills}


def test_counts_directions_and_sizes_meet_the_issue():
    splits = Counter(r.split for r in REQUESTS)
    directions = Counter(r.direction for r in REQUESTS)
    assert len(REQUESTS) >= 900 and splits["train"] >= 600 and splits["dev"] >= 150 and splits["test"] >= 150
    assert directions["en2zh"] >= 150 and directions["zh2en"] >= 150 and set(directions) == {"en2en", "en2zh",
                                                                                               "zh2en", "zh2zh"}
    assert {r.k for r in REQUESTS} == {1, 2, 3}


def test_no_test_skill_is_a_train_or_dev_positive_here_or_in_the_curated_set():
    """Split by skill across both hand-written sets: a model trained on either train split never saw a test skill."""
    curated = load_requests(CURATED_REQUESTS)
    seen = {sid for r in [*REQUESTS, *curated] if r.split in ("train", "dev") for sid in r.gt}
    test = {sid for r in [*REQUESTS, *curated] if r.split == "test" for sid in r.gt}
    assert not seen & test


def test_no_request_is_written_twice():
    texts = Counter(" ".join(r.query.lower().split()) for r in REQUESTS)
    assert [t for t, n in texts.items() if n > 1] == []


def test_every_request_is_meaning_only_against_its_skills(shared_corpus):
    pool = _pool(shared_corpus)
    proper = proper_nouns(s.description for s in pool.values())
    problems = {}
    for r in REQUESTS:
        missing = [sid for sid in r.gt if sid not in pool]
        assert not missing, (r.id, missing)
        written_for = [g[0] for g in r.groups]  # the skills the writer read; copies share their text
        texts = [SkillText(s, pool[s].name, pool[s].description, pool[s].body) for s in written_for]
        found = request_problems(r.query, r.writing.lang, texts, proper)
        if found:
            problems[r.id] = found
    assert problems == {}


@pytest.mark.parametrize("query, lang, problem", [
    ("My Docker containers cannot reach each other", "en", "uses names from"),
    ("set up docker-expert for me", "en", "names skill"),
    ("用 nginx postgres redis 跑起来", "zh", "CJK"),
])
def test_the_leakage_check_catches_each_kind_of_leak(query, lang, problem):
    skill = SkillText("x/docker-expert", "docker-expert", "Expert help with Docker and Compose networking.",
                      "Containers on one network reach each other by name.")
    assert any(problem in p for p in request_problems(query, lang, [skill], frozenset({"docker", "compose"})))


def test_the_leakage_check_catches_a_copied_run():
    body = "Run the migration in a transaction so a failure leaves the schema as it was before."
    skill = SkillText("x/migrations", "migrations", "Schema changes.", body)
    found = request_problems("please run the migration in a transaction so a failure does not hurt", "en", [skill],
                             frozenset())
    assert any("copies 6 words" in p for p in found)
    assert request_problems("my schema change broke halfway and left tables behind", "en", [skill], frozenset()) == []


def test_the_written_files_and_the_built_file_agree():
    """``requests.jsonl`` is built by ``bench/meaning_set.py`` from ``written/``: every built request is written."""
    written = {}
    for path in sorted((MEANING_REQUESTS.parent / "written").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                written[rec["id"]] = rec
    for r in REQUESTS:
        assert r.query == written[r.id]["query"] and [g[0] for g in r.groups] == written[r.id]["gt"]
