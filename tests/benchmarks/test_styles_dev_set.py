"""The hand-written styles dev set (``skill_assets/benchmarks/styles/``) meets the rules it was written to.

Schema, counts, languages and the card are checked from the package files alone; id resolution and the
name-leak rule read the shared corpus beside the checkout (``../shared``), skipped like the other real-corpus
tests when it is absent (and failed under CI, see ``conftest.py``).
"""
import json
import re
from collections import Counter
from functools import cache
from pathlib import Path

from skill_assets.lib.common.hashing import normalise_name
from skill_assets.lib.core.frontmatter import parse_skill_markdown
from skill_assets.lib.common.language import DIRECTIONS, count_length, detect_language
from skill_assets.lib.evaluation.curated_benchmark import CURATED_DIR, load_requests, split_skills
from skill_assets.lib.generation.query_audit import leaked_names
from skill_assets.lib.retrieval.pools import load_pool
from skill_assets.lib.review.agreement import blind_pass_agrees

STYLES_DIR = CURATED_DIR.parent / "styles"
STYLES = ("terse", "vague", "pasted_error", "other_language", "casual")
KEYS = ["id", "query", "lang", "direction", "k", "gt", "gt_groups", "style", "split", "topic", "writer",
        "review_status"]
ROWS = [json.loads(line) for line in (STYLES_DIR / "requests.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()]


def _skill_file(folder: Path) -> Path | None:
    if not folder.is_dir():
        return None
    return next((p for p in folder.iterdir() if p.is_file() and p.name.lower() == "skill.md"), None)


@cache
def _name(repos: Path, skill_id: str) -> str:
    return parse_skill_markdown(_skill_file(repos / skill_id).read_text(encoding="utf-8"),
                                require_description=False).name


def test_every_line_has_the_schema():
    assert [r["id"] for r in ROWS] == [f"s-{i:03d}" for i in range(1, len(ROWS) + 1)]  # unique, in order
    for r in ROWS:
        assert list(r) == KEYS, r["id"]
        assert isinstance(r["query"], str) and r["query"].strip(), r["id"]
        assert r["direction"] in DIRECTIONS and r["lang"] == DIRECTIONS[r["direction"]][1], r["id"]
        assert r["style"] in STYLES, r["id"]
        assert (r["split"], r["writer"]) == ("dev", "s1") and r["review_status"] in ("agreed", "disputed"), r["id"]
        assert isinstance(r["topic"], str) and r["topic"].strip(), r["id"]
        groups = r["gt_groups"]
        assert isinstance(groups, list) and 1 <= len(groups) <= 3 and r["k"] == len(groups), r["id"]
        assert all(isinstance(g, list) and g and all(isinstance(s, str) and s for s in g) for g in groups), r["id"]
        flat = [s for g in groups for s in g]
        assert r["gt"] == flat and len(set(flat)) == len(flat), r["id"]
        if r["style"] == "other_language":
            assert r["direction"] in ("en2zh", "zh2en"), r["id"]


def test_counts_meet_the_brief():
    assert len(ROWS) >= 100
    langs = Counter(r["lang"] for r in ROWS)
    directions = Counter(r["direction"] for r in ROWS)
    assert langs["zh"] >= 35 and directions["en2zh"] > langs["zh"] / 2  # most Chinese requests are for English skills
    assert directions["zh2en"] >= 10 and directions["zh2zh"] >= 10
    k = Counter(r["k"] for r in ROWS)
    assert 0.5 <= k[1] / len(ROWS) <= 0.7 and 0.2 <= k[2] / len(ROWS) <= 0.4 and k[3] / len(ROWS) >= 0.05
    styles = Counter(r["style"] for r in ROWS)
    assert set(styles) == set(STYLES) and min(styles.values()) >= len(ROWS) / 12
    assert len({s.split("/")[0] for r in ROWS for s in r["gt"]}) >= 20  # spread over many repositories


def test_query_language_and_terse_length():
    for r in ROWS:
        assert detect_language(r["query"]) == r["lang"], r["id"]
        if r["style"] == "terse":
            length = count_length(r["query"], r["lang"])
            assert (3 <= length <= 12) if r["lang"] == "en" else (length <= 25), (r["id"], length)


def test_card_counts_are_the_files_counts():
    card = (STYLES_DIR / "README.md").read_text(encoding="utf-8")
    assert re.search(rf"\b{len(ROWS)} requests, {sum(r['lang'] == 'zh' for r in ROWS)} in Chinese\b", card)
    for key, order in (("style", STYLES), ("direction", tuple(DIRECTIONS)), ("k", (1, 2, 3))):
        counts = Counter(r[key] for r in ROWS)
        table = "\n".join([f"| {key} | requests |", "|---|---|", *(f"| {v} | {counts[v]} |" for v in order)])
        assert table in card, key


def test_no_ground_truth_skill_is_a_curated_test_skill():
    test_skills = split_skills(load_requests(), ["test"])
    assert sorted({s for r in ROWS for s in r["gt"]} & test_skills) == []


def test_every_ground_truth_id_is_a_skill_folder_of_the_shared_corpus(shared_corpus):
    missing = sorted({s for r in ROWS for s in r["gt"] if _skill_file(shared_corpus / s) is None})
    assert missing == []


def test_no_query_contains_a_ground_truth_skill_name(shared_corpus):
    leaks = {r["id"]: found for r in ROWS
             if (found := leaked_names(r["query"], [_name(shared_corpus, s) for s in r["gt"]]))}
    assert leaks == {}


REVIEW_KEYS = ["id", "writer", "writer_gt_groups", "reviewer", "reviewer_gt_groups", "reviewer_confidence",
               "resolution", "why"]


def test_the_blind_second_pass_reads_every_request_once_and_its_verdicts_follow_the_rule(shared_corpus):
    """``review.jsonl``: one row per request, by a reader who is not the writer; the writer's label as the set holds
    it; every pick a skill of the corpus; ``agreed`` exactly where each labelled group holds a pick or a same-name
    copy of one; and each request's ``review_status`` is its row's verdict."""
    rows = [json.loads(line) for line in (STYLES_DIR / "review.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    by_id = {r["id"]: r for r in ROWS}
    assert sorted(row["id"] for row in rows) == sorted(by_id)
    names = {s.id: normalise_name(s.name) for s in load_pool(shared_corpus).skills}
    for row in rows:
        request = by_id[row["id"]]
        assert list(row) == REVIEW_KEYS and row["reviewer"] != row["writer"] == request["writer"], row["id"]
        assert row["writer_gt_groups"] == request["gt_groups"] and row["why"].strip(), row["id"]
        assert row["reviewer_confidence"] in ("high", "medium", "low"), row["id"]
        picked = {s for g in row["reviewer_gt_groups"] for s in g}
        assert picked and picked <= set(names), row["id"]
        agreed = blind_pass_agrees(request["gt_groups"], row["reviewer_gt_groups"], names)
        assert row["resolution"] == ("agreed" if agreed else "disputed") == request["review_status"], row["id"]
