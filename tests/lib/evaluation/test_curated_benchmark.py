"""The curated benchmark's files load strictly, resolve against a real SKILL.md pool, and import as a benchmark.

Fixture: ``tests/data/curated/`` (requests, rejections and a pool of SKILL.md folders per repository,
with an identical mirror, a listed fork, Chinese skills and one broken file).
"""
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from skill_assets.lib.evaluation.curated_benchmark import (
    CuratedFormatError,
    load_rejections,
    load_requests,
    split_skills,
)
from skill_assets.lib.evaluation.external_benchmarks import (
    BenchmarkFormatError,
    BenchmarkSpec,
    load_benchmark,
    load_benchmark_specs,
)
from skill_assets.lib.retrieval.requests import UnresolvedSkillIds, require_in_pool

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "curated"
POOL = FIXTURE / "pool"


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "curated"
    root.mkdir()
    for name in ("requests.jsonl", "rejections.jsonl"):
        shutil.copy(FIXTURE / name, root / name)
    return root


def _rewrite(path: Path, line: int, **changes) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    rec = json.loads(lines[line - 1])
    rec.update(changes)
    lines[line - 1] = json.dumps(rec, ensure_ascii=False)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_requests_and_rejections_load_with_their_groups():
    requests = load_requests(FIXTURE)
    assert [r.id for r in requests][:2] == ["t-001", "t-002"] and len(requests) == 8
    first = requests[0]
    assert first.k == 1 and first.gt == ("alpha__skills/skills/docker-networking", "beta__mirror/docker-net-fork")
    assert {r.direction for r in requests} == {"en2en", "en2zh", "zh2en", "zh2zh"}
    assert split_skills(requests, ["test"]) >= {"alpha__skills/skills/nginx-proxy", "gamma__zh/skills/weekly-report-zh"}
    rejections = load_rejections(FIXTURE)
    assert [r.label for r in rejections] == ["domain_mismatch", "function_redundant"] and rejections[1].lang == "zh"


@pytest.mark.parametrize(("change", "message"), [
    ({"k": 2}, "'k' is 2 but 'gt_groups' has 1 groups"),
    ({"direction": "en2fr"}, "'direction' is 'en2fr'"),
    ({"split": "validation"}, "'split' is 'validation'"),
    ({"gt_groups": [["a/x", "a/x"]], "gt": ["a/x", "a/x"]}, "appears twice"),
    ({"gt": ["alpha__skills/skills/docker-networking"]}, "'gt' is not the ids of 'gt_groups'"),
    ({"lang": "zh"}, "'lang' must be 'en' for en2en"),
    ({"id": "t-002"}, "already used at"),
])
def test_a_malformed_request_names_file_and_line(tmp_path, change, message):
    root = _copy(tmp_path)
    _rewrite(root / "requests.jsonl", 1, **change)
    with pytest.raises(CuratedFormatError, match=message) as err:
        load_requests(root)
    assert f"{root / 'requests.jsonl'}:1" in str(err.value)


def test_an_id_the_pool_lacks_is_an_error_naming_it():
    requests = load_requests(FIXTURE)
    pool = {p.parent.relative_to(POOL).as_posix() for p in POOL.rglob("SKILL.md")}
    require_in_pool(requests, pool, "fixture")  # every fixture id resolves
    with pytest.raises(UnresolvedSkillIds, match=r"1 curated ground-truth skill id\(s\) not in the pool fixture: "
                                                 r"alpha__skills/skills/nginx-proxy \(in t-002\)"):
        require_in_pool(requests, pool - {"alpha__skills/skills/nginx-proxy"}, "fixture")


def test_curated_layout_scores_the_test_split_over_the_whole_pool_with_copy_groups():
    bench = load_benchmark(BenchmarkSpec("curated", FIXTURE, None, "test", POOL))  # layout detected
    assert bench.layout == "curated" and [q.id for q in bench.queries] == ["t-001", "t-002", "t-003", "t-004"]
    assert len(bench.skills) == 10  # every parseable SKILL.md of every repository; the broken file is not a skill
    by_id = {q.id: q for q in bench.queries}
    # the mirror's identical document joins the group the writer listed; the listed fork stays in it
    assert by_id["t-001"].groups == (("alpha__skills/skills/docker-networking", "beta__mirror/docker-net-fork",
                                            "beta__mirror/skills/docker-networking"),)
    assert len(by_id["t-002"].groups) == 2 and by_id["t-004"].direction == "zh2zh"
    assert by_id["t-003"].unknown_skill_ids == ()


def test_curated_pool_comes_from_the_benchmarks_file_and_a_missing_id_fails_the_import(tmp_path):
    root = _copy(tmp_path)
    (tmp_path / "benchmarks.yaml").write_text(f"mine: {{path: curated, layout: curated, pool: {POOL}}}\n")
    spec = load_benchmark_specs(tmp_path / "benchmarks.yaml")["mine"]
    assert spec.pool == POOL and len(load_benchmark(spec).queries) == 4
    _rewrite(root / "requests.jsonl", 3, gt_groups=[["alpha__skills/skills/missing"]], gt=["alpha__skills/skills/missing"])
    with pytest.raises(BenchmarkFormatError, match="alpha__skills/skills/missing \\(in t-003\\)"):
        load_benchmark(spec)
    with pytest.raises(BenchmarkFormatError, match="needs a skill pool"):
        load_benchmark(BenchmarkSpec("curated", root, "curated"))


def test_a_sources_file_rebuilds_the_pool_with_the_same_ids(tmp_path):
    """Each repository folder as a git repository, fetched by the corpus stage's git source: same ids."""
    sources = []
    for repo in sorted(p for p in POOL.iterdir() if p.is_dir()):
        clone = tmp_path / "remote" / repo.name
        shutil.copytree(repo, clone)
        subprocess.run(["git", "init", "-q"], cwd=clone, check=True)
        subprocess.run(["git", "add", "-A"], cwd=clone, check=True)
        subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "skills"], cwd=clone,
                       check=True)
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True,
                                check=True).stdout.strip()
        sources.append(f"  - {{name: {repo.name}, kind: git, location: {clone}, commit: {commit}}}")
    file = tmp_path / "sources.yaml"
    file.write_text("sources:\n" + "\n".join(sources) + "\n")
    from_git = load_benchmark(BenchmarkSpec("curated", FIXTURE, "curated", "test", file))
    from_folder = load_benchmark(BenchmarkSpec("curated", FIXTURE, "curated", "test", POOL))
    assert sorted(s.id for s in from_git.skills) == sorted(s.id for s in from_folder.skills)
    assert from_git.queries == from_folder.queries
