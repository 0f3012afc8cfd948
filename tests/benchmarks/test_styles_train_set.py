"""The styles train set (``skill_assets/benchmarks/styles/written/``, built into ``train.jsonl``) keeps its rules.

It is what the shipped fusion and abstention learn other registers from (terse, vague, pasted errors, casual,
cross-language), so it must never hold a skill any set chooses or tests on, nor name the skills it asks for; and
``train.jsonl`` with the card's counts is exactly what ``bench/styles_set.py`` builds from the writer's file and
the blind second reading (``train_review.jsonl``: a request whose label the reading disputes is left out).
"""
from __future__ import annotations

import json
from collections import Counter

import pytest

from skill_assets.lib.common.hashing import normalise_name
from skill_assets.lib.common.language import DIRECTIONS, count_length, detect_language
from skill_assets.lib.evaluation.curated_benchmark import LONG_TASK_MAX_GROUPS, LONG_TASK_REQUESTS, load_requests
from skill_assets.lib.generation.query_audit import leaked_names
from skill_assets.lib.retrieval.pools import load_pool
from skill_assets.lib.review.agreement import blind_pass_agrees
from skill_assets.router.shipped_embedder import CURATED_REQUESTS, MEANING_REQUESTS
from skill_assets.router.shipped_router import STYLES_REQUESTS, STYLES_TRAIN_REQUESTS
from bench_scripts import bench_module

STYLES = ("terse", "vague", "pasted_error", "other_language", "casual")
KEYS = {"id", "query", "lang", "direction", "k", "gt", "style", "topic", "writer"}
WRITTEN = [json.loads(line) for path in sorted((STYLES_TRAIN_REQUESTS.parent / "written").glob("*.jsonl"))
           for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
TRAIN = load_requests(STYLES_TRAIN_REQUESTS)


def _builder(monkeypatch):
    return bench_module("styles_set", monkeypatch)


def test_every_written_line_has_the_schema_and_its_language():
    assert len({r["id"] for r in WRITTEN}) == len(WRITTEN)
    for r in WRITTEN:
        assert set(r) == KEYS, r["id"]
        assert r["style"] in STYLES and r["direction"] in DIRECTIONS, r["id"]
        assert r["lang"] == DIRECTIONS[r["direction"]][1] == detect_language(r["query"]), r["id"]
        assert 1 <= r["k"] == len(r["gt"]) == len(set(r["gt"])) <= 3, r["id"]
        if r["style"] == "other_language":
            assert r["direction"] in ("en2zh", "zh2en"), r["id"]
        if r["style"] == "terse":
            length = count_length(r["query"], r["lang"])
            assert (length <= 12) if r["lang"] == "en" else (length <= 25), (r["id"], length)


def test_counts_cover_every_style_both_languages_and_the_cross_language_directions():
    assert len(TRAIN) >= 150 and len(TRAIN) >= 0.9 * len(WRITTEN)  # few dropped for a held-out skill
    styles, directions = Counter(r.writing.style for r in TRAIN), Counter(r.direction for r in TRAIN)
    assert set(styles) == set(STYLES) and min(styles.values()) >= 20
    assert directions["en2zh"] >= 40 and directions["zh2en"] >= 15
    assert sum(r.writing.lang == "zh" for r in TRAIN) >= 60


def test_no_query_names_a_skill_it_is_labelled_with(shared_corpus):
    pool = {s.id: s for s in load_pool(shared_corpus).skills}
    leaks = {r["id"]: found for r in WRITTEN
             if (found := leaked_names(r["query"], [pool[s].name for s in r["gt"] if s in pool]))}
    assert leaks == {}


def test_train_holds_no_skill_any_set_chooses_or_tests_on():
    every = [*load_requests(CURATED_REQUESTS), *load_requests(MEANING_REQUESTS), *load_requests(STYLES_REQUESTS),
             *load_requests(LONG_TASK_REQUESTS, max_groups=LONG_TASK_MAX_GROUPS)]
    held = {sid for r in every if r.split in ("dev", "test") for sid in r.gt}
    assert {r.split for r in TRAIN} == {"train"}
    assert sorted({sid for r in TRAIN for sid in r.gt} & held) == []


def test_train_and_counts_are_what_the_script_builds_from_written(shared_corpus, monkeypatch):
    records, section, _ = _builder(monkeypatch).build(shared_corpus)
    built = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    assert STYLES_TRAIN_REQUESTS.read_text(encoding="utf-8") == built
    assert (STYLES_TRAIN_REQUESTS.parent / "README.md").read_text(encoding="utf-8").endswith(section)


def test_the_blind_second_reading_decides_which_requests_train(shared_corpus, monkeypatch, tmp_path):
    """Every train request was read by someone who is not its writer, its picks made before the label; the verdicts
    are the rule's (``blind_pass_agrees``); a disputed request is not in ``train.jsonl``, an agreed one is, marked so;
    and a row stating a verdict the rule does not give stops the build."""
    review = [json.loads(line) for line in (STYLES_TRAIN_REQUESTS.parent / "train_review.jsonl")
              .read_text(encoding="utf-8").splitlines() if line.strip()]
    names = {s.id: normalise_name(s.name) for s in load_pool(shared_corpus).skills}
    rows = {r["id"]: r for r in map(json.loads, STYLES_TRAIN_REQUESTS.read_text(encoding="utf-8").splitlines())}
    assert len({r["id"] for r in review}) == len(review) >= len(rows)
    disputed = set()
    for row in review:
        assert row["reviewer"] != row["writer"] and row["reviewer_confidence"] in ("high", "medium", "low"), row["id"]
        # a pick is a corpus skill folder (a few the project's parser rejects, a merge conflict left in the file)
        assert all((shared_corpus / s / "SKILL.md").is_file() for g in row["reviewer_gt_groups"] for s in g), row["id"]
        assert row["why"].strip(), row["id"]
        agreed = blind_pass_agrees(row["writer_gt_groups"], row["reviewer_gt_groups"], names)
        assert row["resolution"] == ("agreed" if agreed else "disputed"), row["id"]
        if agreed:
            assert rows[row["id"]]["review_status"] == "agreed", row["id"]
        else:
            disputed.add(row["id"])
    assert disputed and not disputed & set(rows)
    assert all(r["review_status"] == "agreed" for r in rows.values())  # every train request was read

    builder = _builder(monkeypatch)
    flipped = next(r["id"] for r in review if r["resolution"] == "agreed")
    (tmp_path / builder.REVIEW_FILE).write_text("".join(
        json.dumps({**r, "resolution": "disputed"} if r["id"] == flipped else r, ensure_ascii=False) + "\n"
        for r in review), encoding="utf-8")
    monkeypatch.setattr(builder, "STYLES_DIR", tmp_path)
    with pytest.raises(SystemExit, match="where the rule gives 'agreed'"):
        builder.second_reading([{"id": r["id"], "gt_groups": r["writer_gt_groups"]} for r in review], names)
