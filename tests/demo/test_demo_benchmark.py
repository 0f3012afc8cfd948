"""The hand-written demo benchmark (``skill_assets/demo/benchmark/requests.jsonl``) is sound.

Skills are read the way the pipeline reads them: the demo corpus through the ``SkillSources``
resource (source name ``demo``) and ``ingest_sources``, so the ids checked here are the ids the
pipeline gives (``demo/<folder relative to skill_assets/demo/skills>``) and a skill's language is
the one ingest detects. The quarantined files are rejected by ingest and never ground truth.
Copies (exact and near duplicates) are found from the texts here, independently of the file.
"""
import json
import re
from collections import Counter
from functools import cache
from itertools import combinations
from pathlib import Path

import pytest

from skill_assets.defs.resources import DEMO_SKILLS, SkillSources
from skill_assets.lib.common.language import DIRECTIONS, detect_language
from skill_assets.lib.corpus.ingest import ingest_sources

BENCHMARK = DEMO_SKILLS.parent / "benchmark" / "requests.jsonl"
FIELDS = {"id", "query", "lang", "direction", "k", "gt", "gt_groups", "style", "split", "topic", "writer",
          "review_status"}
STYLES = {"terse", "scene", "pasted_error", "vague", "role_setup", "step_list"}
#: copies found by reading the texts (the dataset card lists them); the test re-derives them from the files
EXPECTED_COPIES = {
    frozenset({"demo/web/rest-api-design", "demo/mirrors/rest-api-design"}),
    frozenset({"demo/data/pandas-data-cleaning", "demo/mirrors/pandas-data-cleaning"}),
    frozenset({"demo/devops/docker-compose-debugging", "demo/mirrors/docker-compose-debugging"}),
    frozenset({"demo/business/okr-drafting", "demo/mirrors/okr-writing-guide"}),
    frozenset({"demo/devops/helm-release-management", "demo/mirrors/helm-release-fork"}),
    frozenset({"demo/zh/chinese-resume-optimization", "demo/mirrors/resume-polish-zh"}),
}
COPY_JACCARD = 0.5  # copies score >= 0.86 on character 5-grams; distinct demo skills stay below 0.15


def _requests() -> list[dict]:
    lines = BENCHMARK.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


REQUESTS = _requests()


@cache
def _skills(workdir: str) -> dict[str, dict]:
    specs = [s for s in SkillSources(paths=[str(DEMO_SKILLS)]).sources() if Path(s.location) == DEMO_SKILLS]
    assert [s.name for s in specs] == ["demo"]
    result = ingest_sources(specs, Path(workdir))
    return {row["skill_id"]: row for row in result.raw_skills}


@pytest.fixture(scope="module")
def skills(tmp_path_factory) -> dict[str, dict]:
    """Skill id -> ingested row (name, description, body, language) of every demo skill the pipeline keeps."""
    return _skills(str(tmp_path_factory.mktemp("demo_ingest")))


def _grams(text: str, n: int = 5) -> set[str]:
    flat = re.sub(r"\s+", " ", text.replace("\r\n", "\n")).strip()
    return {flat[i:i + n] for i in range(len(flat) - n + 1)}


@pytest.fixture(scope="module")
def copy_of(skills) -> dict[str, set[str]]:
    """Skill id -> the ids of its exact or near-duplicate copies (itself included)."""
    grams = {sid: _grams(row["description"] + "\n" + row["body"]) for sid, row in skills.items()}
    out = {sid: {sid} for sid in skills}
    for a, b in combinations(sorted(grams), 2):
        if len(grams[a] & grams[b]) / len(grams[a] | grams[b]) >= COPY_JACCARD:
            out[a].add(b)
            out[b].add(a)
    return out


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[-_]", " ", text.lower())).strip()


def test_demo_corpus_is_what_the_benchmark_was_written_against(skills):
    assert len(skills) == 57
    assert all(sid.startswith("demo/") for sid in skills)
    assert not any(sid.startswith("demo/quarantine/") for sid in skills)
    chinese = {sid for sid, row in skills.items() if row["language"] == "zh"}
    assert chinese == {sid for sid in skills if sid.startswith("demo/zh/")} | {"demo/mirrors/resume-polish-zh"}
    assert len([sid for sid in chinese if sid.startswith("demo/zh/")]) == 10


def test_copies_are_the_six_known_pairs(copy_of):
    found = {frozenset(group) for group in copy_of.values() if len(group) > 1}
    assert found == EXPECTED_COPIES


def test_schema():
    for r in REQUESTS:
        where = r.get("id")
        assert set(r) == FIELDS, where
        assert re.fullmatch(r"demo-\d{3}", r["id"]), where
        assert isinstance(r["query"], str) and r["query"].strip(), where
        assert r["direction"] in DIRECTIONS, where
        assert r["lang"] in ("en", "zh") and r["lang"] == DIRECTIONS[r["direction"]][1], where
        assert r["k"] in (1, 2, 3), where
        assert isinstance(r["gt_groups"], list) and len(r["gt_groups"]) == r["k"], where
        assert all(isinstance(g, list) and g and all(isinstance(s, str) for s in g) for g in r["gt_groups"]), where
        assert r["gt"] == [s for g in r["gt_groups"] for s in g], where
        assert len(set(r["gt"])) == len(r["gt"]), where
        assert r["style"] in STYLES, where
        assert r["split"] == "test", where
        assert isinstance(r["topic"], str) and r["topic"].strip(), where
        assert r["writer"] == "demo-w1", where
        assert r["review_status"] == "confirmed", where


def test_ids_and_queries_are_unique():
    ids = [r["id"] for r in REQUESTS]
    assert len(set(ids)) == len(ids)
    queries = [_norm(r["query"]) for r in REQUESTS]
    assert len(set(queries)) == len(queries)


def test_every_gt_id_is_a_real_demo_skill(skills):
    unknown = {(r["id"], s) for r in REQUESTS for s in r["gt"] if s not in skills}
    assert not unknown
    assert not any(s.startswith("demo/quarantine/") for r in REQUESTS for s in r["gt"])


def test_direction_matches_query_and_skill_languages(skills):
    for r in REQUESTS:
        skill_lang, query_lang = DIRECTIONS[r["direction"]]
        assert detect_language(r["query"]) == query_lang, r["id"]
        assert {skills[s]["language"] for s in r["gt"]} == {skill_lang}, r["id"]


def test_groups_hold_each_need_with_all_its_copies(copy_of):
    for r in REQUESTS:
        for group in r["gt_groups"]:
            assert set(group) == copy_of[group[0]], (r["id"], group)  # closed under copying, nothing else
        firsts = [g[0] for g in r["gt_groups"]]
        assert all(b not in copy_of[a] for a, b in combinations(firsts, 2)), r["id"]  # distinct needs


def test_counts():
    assert len(REQUESTS) >= 60
    assert sum(r["lang"] == "zh" for r in REQUESTS) >= 20
    directions = Counter(r["direction"] for r in REQUESTS)
    assert min(directions[d] for d in ("en2zh", "zh2zh", "zh2en")) >= 8 and directions["en2en"] > 0
    k = Counter(r["k"] for r in REQUESTS)
    assert 0.4 <= k[1] / len(REQUESTS) <= 0.6      # about half
    assert 0.25 <= k[2] / len(REQUESTS) <= 0.42    # about a third
    assert k[3] > 0                                # the rest
    styles = Counter(r["style"] for r in REQUESTS)
    assert set(styles) == STYLES and min(styles.values()) >= len(REQUESTS) / 12


def test_every_demo_skill_is_needed_somewhere(skills, copy_of):
    needed = {sid for r in REQUESTS for s in r["gt"] for sid in copy_of[s]}
    assert needed == set(skills)


def test_no_request_names_its_skills(skills):
    for r in REQUESTS:
        query = _norm(r["query"])
        for sid in r["gt"]:
            assert _norm(skills[sid]["name"]) not in query, (r["id"], sid)


def test_no_request_copies_description_wording(skills):
    """No run of 6 words (English) or 8 CJK characters of a ground-truth skill's description."""
    for r in REQUESTS:
        words = " " + " ".join(re.findall(r"[a-z0-9']+", r["query"].lower())) + " "
        cjk = "".join(re.findall(r"[\u4e00-\u9fff]", r["query"]))
        for sid in r["gt"]:
            desc = skills[sid]["description"]
            dw = re.findall(r"[a-z0-9']+", desc.lower())
            dc = "".join(re.findall(r"[\u4e00-\u9fff]", desc))
            assert not [g for i in range(len(dw) - 5) if f" {(g := ' '.join(dw[i:i + 6]))} " in words], (r["id"], sid)
            assert not [dc[i:i + 8] for i in range(len(dc) - 7) if dc[i:i + 8] in cjk], (r["id"], sid)
