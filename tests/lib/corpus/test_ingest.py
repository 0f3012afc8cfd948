import io
import os
import tarfile
from pathlib import Path

import pytest

import skill_assets.lib.corpus.ingest as ingest_mod
from skill_assets.lib.core.frontmatter import SkillParseError
from skill_assets.lib.common.hashing import content_hash, digest, normalise_name
from skill_assets.lib.core.skill_files import FolderReject, walk_skill_files
from skill_assets.lib.corpus.sources import SourceSpec
from skill_assets.lib.corpus.ingest import ingest_sources, read_skill_file

GOOD_EN = "---\nname: Git Rebase Helper\ndescription: Helps rebase feature branches onto main\nversion: 3\n---\n# Rebase\nUse interactive rebase to squash commits before merging.\n"
GOOD_ZH = "---\nname: 数据清洗\ndescription: 清洗表格数据并处理缺失值\n---\n# 数据清洗\n使用这个技能来清洗数据，删除重复行并填补缺失值。\n"


def _write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def _dir(name: str, root: Path) -> SourceSpec:
    return SourceSpec(name=name, kind="dir", location=str(root))


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
    (src / "inner-link").mkdir()  # a symlink that stays inside the source is fine
    os.symlink(src / "git-rebase" / "SKILL.md", src / "inner-link" / "SKILL.md")

    other = tmp_path / "beta"
    _write(other / "one" / "SKILL.md", GOOD_EN.replace("Git Rebase Helper", "Other"))
    work = tmp_path / "work"
    work.mkdir()
    return tmp_path, src, other, work


def test_every_file_lands_in_exactly_one_output(corpus):
    tmp_path, src, other, work = corpus
    missing = tmp_path / "does-not-exist"
    specs = [_dir("alpha", src), _dir("ghost", missing), _dir("beta", other)]
    result = ingest_sources(specs, work, max_bytes=500)

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
        ("ghost", str(missing)): "source_unreadable",
    }
    assert not raw_paths & set(rej)
    # files_seen counts files under readable sources (the source reject is not a file)
    assert result.files_seen == len(result.raw_skills) + len(result.rejects) - 1 == 9
    for r in result.rejects:
        assert {"source", "path", "reason", "message", "ingested_at"} <= set(r)
        assert r["message"]
    assert "ghost" in next(r for r in result.rejects if r["reason"] == "source_unreadable")["message"]


def test_raw_skill_fields(corpus):
    _, src, _, work = corpus
    result = ingest_sources([_dir("alpha", src)], work, max_bytes=500)
    by_id = {r["skill_id"]: r for r in result.raw_skills}
    assert set(by_id) == {"alpha/git-rebase", "alpha/nested/data-clean", "alpha/inner-link"}

    en = by_id["alpha/git-rebase"]
    data = GOOD_EN.encode("utf-8")
    assert en["name"] == "Git Rebase Helper"
    assert en["description"] == "Helps rebase feature branches onto main"
    assert en["body"].startswith("# Rebase")
    assert en["language"] == "en" and en["name_language"] == "en"
    assert en["file_hash"] == digest(data)
    assert en["n_bytes"] == len(data)
    assert en["name_hash"] == digest(normalise_name("Git Rebase Helper")) == digest("git-rebase-helper")
    assert en["content_hash"] == content_hash(en["description"], en["body"])
    assert en["extra_front_matter"] == '{"version": 3}'
    assert en["repo"] == str(src) and en["commit"] is None and en["license"] is None

    zh = by_id["alpha/nested/data-clean"]
    assert zh["language"] == "zh" and zh["body_language"] == "zh" and zh["description_language"] == "zh"
    assert zh["name_language"] == "zh"
    assert zh["path"] == "nested/data-clean/skill.md"
    assert json_loads(zh["extra_front_matter"]) == {}

    # the in-source symlink is read through and has its target's content
    assert by_id["alpha/inner-link"]["file_hash"] == en["file_hash"]


def json_loads(s):
    import json

    return json.loads(s)


def test_skill_ids_are_stable_across_runs(corpus):
    _, src, other, work = corpus
    specs = [_dir("alpha", src), _dir("beta", other)]
    first = ingest_sources(specs, work, max_bytes=500)
    second = ingest_sources(specs, work, max_bytes=500)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "ingested_at"} for r in rows]
    assert strip(first.raw_skills) == strip(second.raw_skills)
    assert strip(first.rejects) == strip(second.rejects)
    ids = [r["skill_id"] for r in first.raw_skills]
    assert ids == [r["skill_id"] for r in second.raw_skills]
    assert len(ids) == len(set(ids))
    assert "beta/one" in ids


def test_skill_at_source_root_uses_source_name(tmp_path):
    root = tmp_path / "solo"
    _write(root / "SKILL.md", GOOD_EN)
    result = ingest_sources([_dir("solo", root)], tmp_path)
    assert [r["skill_id"] for r in result.raw_skills] == ["solo"]
    assert result.rejects == []


def test_license_file_detected_per_source_and_per_folder(tmp_path):
    root = tmp_path / "lic"
    _write(root / "LICENSE", "MIT License\n\nPermission is hereby granted, free of charge, to any person")
    _write(root / "a" / "SKILL.md", GOOD_EN)
    _write(root / "b" / "SKILL.md", GOOD_EN)
    _write(root / "b" / "LICENSE", "Apache License, Version 2.0, January 2004")
    rows = {r["skill_id"]: r for r in ingest_sources([_dir("lic", root)], tmp_path).raw_skills}
    assert rows["lic/a"]["license"] == "MIT"
    assert rows["lic/b"]["license"] == "Apache-2.0"


def test_max_bytes_boundary(tmp_path):
    root = tmp_path / "s"
    _write(root / "a" / "SKILL.md", GOOD_EN)
    size = len(GOOD_EN.encode())
    assert len(ingest_sources([_dir("s", root)], tmp_path, max_bytes=size).raw_skills) == 1
    res = ingest_sources([_dir("s", root)], tmp_path, max_bytes=size - 1)
    assert [r["reason"] for r in res.rejects] == ["too_large"]


def test_only_missing_source_and_file_as_source(tmp_path):
    res = ingest_sources([_dir("nope", tmp_path / "nope")], tmp_path)
    assert res.raw_skills == [] and res.files_seen == 0
    assert [(r["source"], r["reason"]) for r in res.rejects] == [("nope", "source_unreadable")]
    f = _write(tmp_path / "afile.md", GOOD_EN)
    res = ingest_sources([_dir("f", f), SourceSpec("arch", "archive", str(tmp_path / "missing.tar.gz"))], tmp_path)
    assert [r["reason"] for r in res.rejects] == ["source_unreadable", "source_unreadable"]


def test_archive_source_with_unsafe_members(tmp_path):
    archive = tmp_path / "skills.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        def add(name, data: bytes):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        add("good/SKILL.md", GOOD_EN.encode())
        add("../escape/SKILL.md", GOOD_EN.encode())
        add("/abs/SKILL.md", GOOD_EN.encode())
        link = tarfile.TarInfo("linky/SKILL.md")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tf.addfile(link)
    work = tmp_path / "work"
    work.mkdir()
    res = ingest_sources([SourceSpec("arch", "archive", str(archive))], work)
    assert [r["skill_id"] for r in res.raw_skills] == ["arch/good"]
    assert sorted((r["path"], r["reason"]) for r in res.rejects) == [
        ("../escape/SKILL.md", "unsafe_archive_path"),
        ("/abs/SKILL.md", "unsafe_archive_path"),
        ("linky/SKILL.md", "archive_link"),
    ]
    assert res.files_seen == 4
    assert not (tmp_path / "escape").exists() and not (work / "escape").exists()


def test_parallel_read_matches_serial(tmp_path, monkeypatch):
    root = tmp_path / "many"
    for i in range(12):
        _write(root / f"s{i:02d}" / "SKILL.md", GOOD_EN.replace("Git Rebase Helper", f"Skill {i}"))
    _write(root / "bad" / "SKILL.md", b"\x00")
    serial = ingest_sources([_dir("many", root)], tmp_path, workers=1)
    monkeypatch.setattr(ingest_mod, "PARALLEL_MIN_FILES", 3)
    parallel = ingest_sources([_dir("many", root)], tmp_path, workers=2)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "ingested_at"} for r in rows]
    assert strip(parallel.raw_skills) == strip(serial.raw_skills)
    assert strip(parallel.rejects) == strip(serial.rejects)
    assert len(serial.raw_skills) == 12 and [r["reason"] for r in serial.rejects] == ["binary"]


def test_walk_sorted_and_symlinked_dirs_listed_not_followed(tmp_path):
    root = tmp_path / "r"
    _write(root / "b" / "SKILL.md", GOOD_EN)
    _write(root / "a" / "Skill.MD", GOOD_EN)
    _write(tmp_path / "elsewhere" / "x" / "SKILL.md", GOOD_EN)
    os.symlink(tmp_path / "elsewhere", root / "c-linkdir")
    entries = list(walk_skill_files(root))
    assert [p.relative_to(root).as_posix() for p in entries if isinstance(p, Path)] == ["a/Skill.MD", "b/SKILL.md"]
    [folder] = [e for e in entries if isinstance(e, FolderReject)]
    assert folder.code == "folder_symlink" and folder.path == root / "c-linkdir"


def test_read_skill_file_direct(tmp_path):
    src = tmp_path / "src"
    (src / "x").mkdir(parents=True)
    target = _write(tmp_path / "elsewhere.md", GOOD_EN)
    os.symlink(target, src / "x" / "SKILL.md")
    with pytest.raises(SkillParseError) as info:
        read_skill_file(src / "x" / "SKILL.md", src, 10_000)
    assert info.value.code == "symlink_outside_source"
    ok = _write(src / "y" / "SKILL.md", GOOD_EN)
    row = read_skill_file(ok, src, 10_000)
    assert row["name"] == "Git Rebase Helper" and "skill_id" not in row
