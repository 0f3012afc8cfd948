import os
from pathlib import Path

import pytest

from skill_assets.lib.hashing import content_hash, digest, normalise_name
from skill_assets.lib.ingest import SkillSource, ingest_sources, read_skill_file

GOOD_EN = "---\nname: Git Rebase Helper\ndescription: Helps rebase feature branches onto main\nversion: 3\n---\n# Rebase\nUse interactive rebase to squash commits before merging.\n"
GOOD_ZH = "---\nname: 数据清洗\ndescription: 清洗表格数据并处理缺失值\n---\n# 数据清洗\n使用这个技能来清洗数据，删除重复行并填补缺失值。\n"


def _write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


@pytest.fixture
def corpus(tmp_path):
    src = tmp_path / "alpha"
    _write(src / "git-rebase" / "SKILL.md", GOOD_EN)
    _write(src / "nested" / "data-clean" / "skill.md", GOOD_ZH)  # file name is case-insensitive
    _write(src / "latin1" / "SKILL.md", "---\nname: caf\xe9\ndescription: d\n---\nbody caf\xe9\n".encode("latin-1"))
    _write(src / "binary" / "SKILL.md", b"---\nname: bin\ndescription: d\n---\nbody\x00more\n")
    _write(src / "huge" / "SKILL.md", "---\nname: huge\ndescription: d\n---\n" + "word " * 200)
    _write(src / "noname" / "SKILL.md", "---\ndescription: no name here\n---\nbody\n")
    _write(src / "readme" / "README.md", GOOD_EN)  # not a skill file: never seen
    outside = _write(tmp_path / "outside" / "SKILL.md", GOOD_EN)
    (src / "linked").mkdir()
    os.symlink(outside, src / "linked" / "SKILL.md")
    # a symlink that stays inside the source is fine
    (src / "inner-link").mkdir()
    os.symlink(src / "git-rebase" / "SKILL.md", src / "inner-link" / "SKILL.md")

    other = tmp_path / "beta"
    _write(other / "one" / "SKILL.md", GOOD_EN.replace("Git Rebase Helper", "Other"))
    return tmp_path, src, other


def test_every_file_lands_in_exactly_one_output(corpus):
    tmp_path, src, other = corpus
    missing = SkillSource("ghost", tmp_path / "does-not-exist")
    result = ingest_sources([SkillSource.from_path(src), missing, SkillSource.from_path(other)], max_bytes=500)

    raw_paths = {(r["source"], r["path"]) for r in result.raw_skills}
    rej = {(r["source"], r["path"]): r["reason"] for r in result.rejects}
    assert raw_paths == {
        ("alpha", "git-rebase/SKILL.md"),
        ("alpha", "nested/data-clean/skill.md"),
        ("alpha", "inner-link/SKILL.md"),
        ("beta", "one/SKILL.md"),
    }
    assert rej == {
        ("alpha", "latin1/SKILL.md"): "not_utf8",
        ("alpha", "binary/SKILL.md"): "binary",
        ("alpha", "huge/SKILL.md"): "too_large",
        ("alpha", "noname/SKILL.md"): "missing_name",
        ("alpha", "linked/SKILL.md"): "symlink_outside_source",
        ("ghost", str(tmp_path / "does-not-exist")): "source_unreadable",
    }
    assert not raw_paths & set(rej)
    # files_seen counts the files under readable sources (source reject is not a file)
    assert result.files_seen == len(result.raw_skills) + len(result.rejects) - 1 == 9
    for r in result.rejects:
        assert set(r) == {"source", "path", "reason", "message", "ingested_at"}
        assert r["message"]


def test_raw_skill_fields(corpus):
    _, src, _ = corpus
    result = ingest_sources([SkillSource.from_path(src)], max_bytes=500)
    by_id = {r["skill_id"]: r for r in result.raw_skills}
    assert set(by_id) == {"alpha/git-rebase", "alpha/nested/data-clean", "alpha/inner-link"}

    en = by_id["alpha/git-rebase"]
    data = GOOD_EN.encode("utf-8")
    assert en["name"] == "Git Rebase Helper"
    assert en["language"] == "en" and en["name_language"] == "en"
    assert en["file_hash"] == digest(data)
    assert en["n_bytes"] == len(data)
    assert en["name_hash"] == digest(normalise_name("Git Rebase Helper")) == digest("git-rebase-helper")
    assert en["content_hash"] == content_hash(en["description"], en["body"])
    assert en["extra_front_matter"] == '{"version": 3}'

    zh = by_id["alpha/nested/data-clean"]
    assert zh["language"] == "zh"
    assert zh["body_language"] == "zh" and zh["description_language"] == "zh"
    assert zh["path"] == "nested/data-clean/skill.md"

    # the in-source symlink is read through and has the same content as its target
    assert by_id["alpha/inner-link"]["file_hash"] == en["file_hash"]


def test_skill_ids_are_stable_across_runs(corpus):
    _, src, other = corpus
    sources = [SkillSource.from_path(src), SkillSource.from_path(other)]
    first = ingest_sources(sources, max_bytes=500)
    second = ingest_sources(sources, max_bytes=500)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "ingested_at"} for r in rows]
    assert strip(first.raw_skills) == strip(second.raw_skills)
    assert strip(first.rejects) == strip(second.rejects)
    assert [r["skill_id"] for r in first.raw_skills] == [r["skill_id"] for r in second.raw_skills]
    assert "beta/one" in {r["skill_id"] for r in first.raw_skills}


def test_skill_at_source_root_uses_source_name(tmp_path):
    root = tmp_path / "solo"
    _write(root / "SKILL.md", GOOD_EN)
    result = ingest_sources([SkillSource.from_path(root)])
    assert [r["skill_id"] for r in result.raw_skills] == ["solo"]
    assert result.rejects == []


def test_max_bytes_boundary(tmp_path):
    root = tmp_path / "s"
    path = _write(root / "a" / "SKILL.md", GOOD_EN)
    size = len(GOOD_EN.encode())
    assert len(ingest_sources([SkillSource.from_path(root)], max_bytes=size).raw_skills) == 1
    res = ingest_sources([SkillSource.from_path(root)], max_bytes=size - 1)
    assert [r["reason"] for r in res.rejects] == ["too_large"]


def test_only_missing_source_gives_single_reject(tmp_path):
    res = ingest_sources([SkillSource.from_path(tmp_path / "nope")])
    assert res.raw_skills == [] and res.files_seen == 0
    assert [r["reason"] for r in res.rejects] == ["source_unreadable"]
    assert res.rejects[0]["source"] == "nope"


def test_file_as_source_is_unreadable(tmp_path):
    f = _write(tmp_path / "afile.md", GOOD_EN)
    res = ingest_sources([SkillSource.from_path(f)])
    assert [r["reason"] for r in res.rejects] == ["source_unreadable"]


def test_read_skill_file_direct_symlink_rejection(tmp_path):
    from datetime import datetime, timezone
    from skill_assets.lib.frontmatter import SkillParseError

    src = tmp_path / "src"
    (src / "x").mkdir(parents=True)
    target = _write(tmp_path / "elsewhere.md", GOOD_EN)
    os.symlink(target, src / "x" / "SKILL.md")
    with pytest.raises(SkillParseError) as info:
        read_skill_file(src / "x" / "SKILL.md", SkillSource.from_path(src), 10_000, datetime.now(timezone.utc))
    assert info.value.code == "symlink_outside_source"
