"""Loaders of external benchmark layouts: the demo's three layouts agree; bad input fails with file and line."""
import json
from pathlib import Path

import pytest

from skill_assets.lib.evaluation.external_benchmarks import (
    DEMO_CONFIG,
    BenchmarkFormatError,
    BenchmarkSpec,
    detect_layout,
    load_benchmark,
    load_benchmark_specs,
)


def _jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def _r3(root: Path, skills: list, queries: list) -> BenchmarkSpec:
    _jsonl(root / "skills.jsonl", skills)
    _jsonl(root / "queries_test.jsonl", queries)
    return BenchmarkSpec("t", root)


GOOD_SKILLS = [{"id": "a", "text": "alpha | does a | body of a"}, {"id": "b", "text": "no separators here"}]


def test_demo_layouts_load_the_same_pool_and_ground_truth():
    specs = load_benchmark_specs(DEMO_CONFIG)
    assert set(specs) == {"demo-r3", "demo-skillret", "demo-skill-md", "demo-handwritten"}
    loaded = {name: load_benchmark(spec) for name, spec in specs.items() if name != "demo-handwritten"}
    assert {b.layout for b in loaded.values()} == {"r3", "skillret", "skill_md"}
    pools = [sorted(b.skills, key=lambda s: s.id) for b in loaded.values()]
    assert len(pools[0]) == 8 and pools[0] == pools[1] == pools[2]
    truths = [sorted((q.query, q.skill_ids, q.unknown_skill_ids) for q in b.queries) for b in loaded.values()]
    assert len(truths[0]) == 6 and truths[0] == truths[1] == truths[2]
    # one demo query names a skill the pool lacks: reported, scored on the rest
    assert [q.unknown_skill_ids for q in loaded["demo-skillret"].queries if q.unknown_skill_ids] == [
        ("newsletter-ab-testing",)]
    assert loaded["demo-skillret"].queries[5].skill_ids == ("email-campaign-report",)


def test_r3_text_splits_into_fields_and_queries_get_line_ids(tmp_path):
    bench = load_benchmark(_r3(tmp_path, GOOD_SKILLS, ["", {"query": "do a", "skill_ids": ["a", "zz"]}]))
    a, b = bench.skills
    assert (a.name, a.description, a.body) == ("alpha", "does a", "body of a")
    assert (b.name, b.description, b.body) == ("b", "", "no separators here")
    (q,) = bench.queries
    assert (q.id, q.skill_ids, q.unknown_skill_ids) == ("test-2", ("a",), ("zz",))


@pytest.mark.parametrize("bad_line, message", [
    ("{not json", "invalid JSON"),
    ('["a list"]', "expected a JSON object"),
    ('{"query": "x"}', "'skill_ids' must be a non-empty list"),
    ('{"query": "x", "skill_ids": []}', "'skill_ids' must be a non-empty list"),
    ('{"query": "", "skill_ids": ["a"]}', "'query' must be a non-empty string"),
    ('{"query": "x", "skill_ids": ["a", 3]}', "'skill_ids' must be a non-empty list"),
])
def test_bad_query_line_names_file_and_line(tmp_path, bad_line, message):
    spec = _r3(tmp_path, GOOD_SKILLS, [{"query": "fine", "skill_ids": ["a"]}, bad_line])
    with pytest.raises(BenchmarkFormatError, match=message) as err:
        load_benchmark(spec)
    assert f"{tmp_path / 'queries_test.jsonl'}:2:" in str(err.value)


def test_bad_skills_fail_with_reason(tmp_path):
    with pytest.raises(BenchmarkFormatError, match="skills.jsonl:2: 'text' must be a non-empty string"):
        load_benchmark(_r3(tmp_path / "one", [GOOD_SKILLS[0], {"id": "b"}], [{"query": "q", "skill_ids": ["a"]}]))
    with pytest.raises(BenchmarkFormatError, match="skill id 'a' appears twice"):
        load_benchmark(_r3(tmp_path / "two", [GOOD_SKILLS[0], GOOD_SKILLS[0]], [{"query": "q", "skill_ids": ["a"]}]))
    root = tmp_path / "three"
    _jsonl(root / "skills.jsonl", GOOD_SKILLS)
    (root / "queries_test.jsonl").write_bytes(b'{"query": "caf\xe9", "skill_ids": ["a"]}\n')
    with pytest.raises(BenchmarkFormatError, match="queries_test.jsonl:1: not UTF-8"):
        load_benchmark(BenchmarkSpec("t", root))


def test_skillret_qrels_are_the_ground_truth_and_duplicate_or_orphan_ids_fail(tmp_path):
    data = tmp_path / "data"
    _jsonl(data / "skills" / "test.jsonl", [{"id": "a", "name": "A", "description": "d", "body": "b"},
                                           {"id": "b", "name": "B", "description": "d", "body": None}])
    _jsonl(data / "queries" / "test.jsonl", [{"id": "q1", "query": "x", "skill_ids": ["a"]},
                                            {"id": "q2", "query": "y", "skill_ids": ["a"]}])
    _jsonl(data / "qrels" / "test.jsonl", [{"query_id": "q1", "skill_id": "b", "relevance": 1},
                                          {"query_id": "q1", "skill_id": "a", "relevance": 0}])
    bench = load_benchmark(BenchmarkSpec("t", tmp_path))
    assert bench.layout == "skillret" and bench.skills[1].body == ""
    assert [(q.id, q.skill_ids) for q in bench.queries] == [("q1", ("b",)), ("q2", ())]  # q2: no relevant qrel
    _jsonl(data / "queries" / "test.jsonl", [{"id": "q1", "query": "x", "skill_ids": ["a"]},
                                            {"id": "q1", "query": "y", "skill_ids": ["a"]}])
    with pytest.raises(BenchmarkFormatError, match=r"test.jsonl:2: query id 'q1' already used at .*test.jsonl:1"):
        load_benchmark(BenchmarkSpec("t", tmp_path))
    _jsonl(data / "qrels" / "test.jsonl", [{"query_id": "q1", "skill_id": "b", "relevance": 1},
                                          {"query_id": "q9", "skill_id": "a", "relevance": 2}])
    with pytest.raises(BenchmarkFormatError, match=r"qrels/test.jsonl: 1 query ids have qrels but no row .*\['q9'\]"):
        load_benchmark(BenchmarkSpec("t", tmp_path))


def test_skill_md_broken_file_fails_and_unknown_layout_is_explained(tmp_path):
    (tmp_path / "skills" / "good").mkdir(parents=True)
    (tmp_path / "skills" / "good" / "SKILL.md").write_text("---\nname: good\ndescription: fine\n---\nbody\n")
    (tmp_path / "skills" / "bad").mkdir()
    (tmp_path / "skills" / "bad" / "SKILL.md").write_text("no front matter\n")
    _jsonl(tmp_path / "queries.jsonl", [{"query": "q", "skill_ids": ["good"]}])
    assert detect_layout(tmp_path) == "skill_md"
    with pytest.raises(BenchmarkFormatError, match=r"bad/SKILL.md: missing_front_matter"):
        load_benchmark(BenchmarkSpec("t", tmp_path))
    with pytest.raises(BenchmarkFormatError, match="no known layout"):
        detect_layout(tmp_path / "skills")


def test_config_resolves_paths_and_rejects_bad_entries(tmp_path):
    (tmp_path / "bench.yaml").write_text("mine: {path: sub/dir, split: dev}\nother: elsewhere\n")
    specs = load_benchmark_specs(tmp_path / "bench.yaml")
    assert specs["mine"] == BenchmarkSpec("mine", (tmp_path / "sub" / "dir").resolve(), None, "dev")
    assert specs["other"].path == (tmp_path / "elsewhere").resolve()
    (tmp_path / "bad.yaml").write_text("x: {path: a, layout: csv}\n")
    with pytest.raises(BenchmarkFormatError, match="layout 'csv'"):
        load_benchmark_specs(tmp_path / "bad.yaml")
    (tmp_path / "bad2.yaml").write_text("'has space': {path: a}\n")
    with pytest.raises(BenchmarkFormatError, match="must be letters"):
        load_benchmark_specs(tmp_path / "bad2.yaml")


def test_the_hand_written_demo_benchmark_reads_the_demo_skills_under_their_pipeline_ids():
    bench = load_benchmark(load_benchmark_specs(DEMO_CONFIG)["demo-handwritten"])
    ids = {s.id for s in bench.skills}
    assert bench.layout == "curated" and len(bench.queries) >= 60
    assert all(sid.startswith("demo/") for sid in ids) and not any(q.unknown_skill_ids for q in bench.queries)
    assert all(set(q.skill_ids) <= ids for q in bench.queries)
