"""Sources on real disk: a git repository made in the test, archives with unsafe members, licenses."""
import io
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from skill_assets.lib.corpus.sources import SourceError, SourceSpec, detect_license, load_source_specs, prepare_source
from skill_assets.lib.corpus.ingest import ingest_sources

SKILL = "---\nname: {name}\ndescription: Does {name} things.\n---\n\n# {name}\n\nSteps for {name}.\n"
MIT = "MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy"


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def make_repo(path: Path) -> str:
    path.mkdir()
    git("init", "-q", cwd=path)
    git("config", "user.email", "t@example.org", cwd=path)
    git("config", "user.name", "t", cwd=path)
    (path / "LICENSE").write_text(MIT)
    (path / "skills" / "alpha").mkdir(parents=True)
    (path / "skills" / "alpha" / "SKILL.md").write_text(SKILL.format(name="alpha"))
    git("add", "-A", cwd=path)
    git("commit", "-qm", "one", cwd=path)
    first = git("rev-parse", "HEAD", cwd=path)
    (path / "skills" / "beta").mkdir()
    (path / "skills" / "beta" / "SKILL.md").write_text(SKILL.format(name="beta"))
    git("add", "-A", cwd=path)
    git("commit", "-qm", "two", cwd=path)
    return first


def test_git_source_is_cloned_at_the_pinned_commit(tmp_path):
    first = make_repo(tmp_path / "origin")
    work = tmp_path / "work"
    work.mkdir()
    result = ingest_sources([SourceSpec("origin", "git", str(tmp_path / "origin"), commit=first)], work)
    assert [r["skill_id"] for r in result.raw_skills] == ["origin/skills/alpha"]  # beta came later
    row = result.raw_skills[0]
    assert row["commit"] == first and row["license"] == "MIT"


def test_archive_member_with_dotdot_is_rejected_and_never_written(tmp_path):
    archive = tmp_path / "skills.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        for name, text in [("pack/good/SKILL.md", SKILL.format(name="good")), ("../escape/SKILL.md", "x"),
                           ("/abs/SKILL.md", "x")]:
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    work = tmp_path / "work"
    work.mkdir()
    result = ingest_sources([SourceSpec("arch", "archive", str(archive))], work)
    assert [r["skill_id"] for r in result.raw_skills] == ["arch/pack/good"]
    assert sorted(r["reason"] for r in result.rejects) == ["unsafe_archive_path", "unsafe_archive_path"]
    assert result.files_seen == 3
    assert not (tmp_path / "escape").exists() and not Path("/abs/SKILL.md").exists()


def test_zip_archive_and_symlink_member(tmp_path):
    archive = tmp_path / "skills.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("a/SKILL.md", SKILL.format(name="a"))
        link = zipfile.ZipInfo("b/SKILL.md")
        link.external_attr = (0o120777 << 16)
        zf.writestr(link, "/etc/passwd")
    work = tmp_path / "work"
    work.mkdir()
    result = ingest_sources([SourceSpec("z", "archive", str(archive))], work)
    assert [r["skill_id"] for r in result.raw_skills] == ["z/a"]
    assert [r["reason"] for r in result.rejects] == ["archive_link"]


def test_unreadable_source_is_named_and_others_still_ingest(tmp_path):
    good = tmp_path / "good" / "s"
    good.mkdir(parents=True)
    (good / "SKILL.md").write_text(SKILL.format(name="s"))
    work = tmp_path / "work"
    work.mkdir()
    specs = [SourceSpec("missing", "git", str(tmp_path / "nope")), SourceSpec("good", "dir", str(tmp_path / "good"))]
    result = ingest_sources(specs, work)
    assert [r["skill_id"] for r in result.raw_skills] == ["good/s"]
    [reject] = result.rejects
    assert reject["reason"] == "source_unreadable" and "missing" in reject["message"]


def test_prepare_source_errors_name_the_source(tmp_path):
    with pytest.raises(SourceError, match="'ghost'"):
        prepare_source(SourceSpec("ghost", "dir", str(tmp_path / "ghost")), tmp_path)
    with pytest.raises(SourceError, match="unknown kind"):
        prepare_source(SourceSpec("odd", "ftp", str(tmp_path)), tmp_path)


def test_sources_yaml_guesses_kind_and_name(tmp_path):
    cfg = tmp_path / "sources.yaml"
    cfg.write_text("sources:\n  - location: /x/repo.git\n  - location: /x/dump.tar.gz\n  - {location: /x/dir, name: mine}\n")
    specs = load_source_specs(cfg)
    assert [(s.kind, s.name) for s in specs] == [("git", "repo"), ("archive", "dump"), ("dir", "mine")]
    cfg.write_text("sources:\n  - {name: broken}\n")
    with pytest.raises(SourceError, match="location"):
        load_source_specs(cfg)


def test_license_detection():
    assert detect_license(MIT) == "MIT"
    assert detect_license("Apache License\nVersion 2.0, January 2004\n... Apache License, Version 2.0") == "Apache-2.0"
    assert detect_license("All rights reserved by someone") == "other"
