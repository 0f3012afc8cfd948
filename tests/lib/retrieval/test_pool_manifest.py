"""A folder pool read through its manifest: unchanged files are not parsed again, and nothing else changes."""
import logging
import os
from pathlib import Path

import pytest

from skill_assets.lib.retrieval import pool_manifest
from skill_assets.lib.retrieval.pools import load_pool, load_pools

SKILLS = {
    "docker/compose": "---\nname: compose\ndescription: Run multi-container apps with docker compose.\n---\nUse `docker compose up`.\n",
    "pdf/merge": "---\nname: pdf-merge\ndescription: 合并 PDF 文件。\n---\n用 qpdf 合并。\n",
    "notes": "---\nname: notes\ndescription: ''\n---\nKeep notes in markdown.\n",
    "broken": "no front matter here\n",
}


def write_pool(root: Path) -> Path:
    for folder, text in SKILLS.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / "SKILL.md").write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def settled(monkeypatch):
    """Files written by the test count as settled: the racy-write window is covered by its own test."""
    monkeypatch.setattr(pool_manifest, "RACY_SECONDS", 0.0)


def damaged_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "damaged cache file" in r.getMessage()]


def test_a_warm_read_parses_nothing_and_gives_what_a_plain_read_gives(tmp_path, settled):
    pool, cache = write_pool(tmp_path / "pool"), tmp_path / "cache"
    plain = load_pool(pool)
    cold = load_pool(pool, cache_dir=cache)
    warm = load_pool(pool, cache_dir=cache)
    assert (cold.files.parsed, cold.files.unchanged) == (4, 0)
    assert (warm.files.parsed, warm.files.unchanged) == (0, 4)
    for load in (cold, warm):
        assert load.skills == plain.skills and load.rejected == plain.rejected
    assert [r.code for r in warm.rejected] == ["missing_front_matter"]
    assert [s.flags for s in warm.skills if s.id == "notes"] == [("empty_description",)]


def test_an_edit_that_keeps_size_and_mtime_is_parsed_again(tmp_path, settled):
    """The ctime is part of a file's identity: an editor that restores the mtime cannot hide an edit."""
    pool, cache = write_pool(tmp_path / "pool"), tmp_path / "cache"
    load_pool(pool, cache_dir=cache)
    skill = pool / "docker" / "compose" / "SKILL.md"
    before = skill.stat()
    text = skill.read_text(encoding="utf-8").replace("multi-container", "multi-contained")
    assert len(text.encode()) == before.st_size
    skill.write_text(text, encoding="utf-8")
    os.utime(skill, ns=(before.st_atime_ns, before.st_mtime_ns))
    again = load_pool(pool, cache_dir=cache)
    assert (again.files.parsed, again.files.unchanged) == (1, 3)
    assert [s.description for s in again.skills if s.id == "docker/compose"] == [
        "Run multi-contained apps with docker compose."]


def test_added_and_removed_files_are_seen_and_the_manifest_follows(tmp_path, settled):
    pool, cache = write_pool(tmp_path / "pool"), tmp_path / "cache"
    load_pool(pool, cache_dir=cache)
    (pool / "pdf" / "merge" / "SKILL.md").unlink()
    (pool / "lint").mkdir()
    (pool / "lint" / "SKILL.md").write_text("---\nname: lint\ndescription: Lint Python.\n---\nruff\n")
    changed = load_pool(pool, cache_dir=cache)
    assert sorted(s.id for s in changed.skills) == ["docker/compose", "lint", "notes"]
    assert (changed.files.parsed, changed.files.unchanged) == (1, 3)
    again = load_pool(pool, cache_dir=cache)
    assert (again.files.parsed, again.files.unchanged) == (0, 4) and again.skills == changed.skills


def test_a_file_written_just_before_it_was_read_is_parsed_again(tmp_path, monkeypatch):
    """A second write within the file system's timestamp tick could keep the identity: such a file is not kept."""
    monkeypatch.setattr(pool_manifest, "RACY_SECONDS", 3600.0)
    pool, cache = write_pool(tmp_path / "pool"), tmp_path / "cache"
    load_pool(pool, cache_dir=cache)
    again = load_pool(pool, cache_dir=cache)
    assert (again.files.parsed, again.files.unchanged) == (4, 0)


def test_a_symlinked_skill_file_is_judged_every_time(tmp_path, settled):
    pool, cache = write_pool(tmp_path / "pool"), tmp_path / "cache"
    outside = tmp_path / "outside.md"
    outside.write_text("---\nname: out\ndescription: Outside.\n---\nx\n")
    (pool / "linked").mkdir()
    (pool / "linked" / "SKILL.md").symlink_to(outside)
    load_pool(pool, cache_dir=cache)
    again = load_pool(pool, cache_dir=cache)
    assert (again.files.parsed, again.files.unchanged) == (1, 4)
    assert [r.code for r in again.rejected if r.source.endswith("/linked/SKILL.md")] == ["symlink_outside_source"]


@pytest.mark.parametrize("damage", ["manifest", "bodies"])
def test_a_damaged_manifest_is_discarded_with_one_line_naming_it_and_the_pool_read_afresh(tmp_path, settled, caplog,
                                                                                           damage):
    pool, cache = write_pool(tmp_path / "pool"), tmp_path / "cache"
    want = load_pool(pool, cache_dir=cache)
    [manifest] = (cache / "pools").glob("*.json")
    [bodies] = (cache / "pools").glob("*.bodies")
    at_fault = manifest if damage == "manifest" else bodies
    data = bytearray(at_fault.read_bytes())
    i = data.index(b"docker" if damage == "manifest" else b"compose")
    data[i:i + 1] = b"D" if damage == "manifest" else b"C"  # still valid JSON / UTF-8: only a checksum sees it
    at_fault.write_bytes(bytes(data))
    caplog.set_level(logging.WARNING)
    read = load_pool(pool, cache_dir=cache)
    [line] = damaged_lines(caplog)
    assert at_fault.name in line
    assert read.skills == want.skills and read.rejected == want.rejected and read.files.parsed == 4
    caplog.clear()
    again = load_pool(pool, cache_dir=cache)
    assert (again.files.parsed, again.files.unchanged) == (0, 4) and not damaged_lines(caplog)
    assert len(list((cache / "pools").glob("*.bodies"))) == 1


def test_each_root_and_size_cap_has_its_own_manifest(tmp_path, settled):
    first, second = write_pool(tmp_path / "first"), write_pool(tmp_path / "second")
    cache = tmp_path / "cache"
    load_pools([first, second], cache_dir=cache)
    warm = load_pools([first, second], cache_dir=cache)
    assert (warm.files.parsed, warm.files.unchanged) == (0, 8) and len(warm.shadowed) == 3
    capped = load_pool(first, max_file_bytes=40, cache_dir=cache)
    assert capped.files.parsed == 4 and not capped.skills
    assert sorted(r.code for r in capped.rejected) == ["missing_front_matter"] + ["too_large"] * 3


def test_a_change_to_the_reading_rules_reparses_every_file(tmp_path, settled, monkeypatch):
    pool, cache = write_pool(tmp_path / "pool"), tmp_path / "cache"
    load_pool(pool, cache_dir=cache)
    monkeypatch.setattr(pool_manifest, "reading_rules", lambda: "rules of a newer frontmatter.py")
    again = load_pool(pool, cache_dir=cache)
    assert (again.files.parsed, again.files.unchanged) == (4, 0)
    assert len(list((cache / "pools").glob("*.json"))) == 1  # rewritten under the new rules, not one more
    assert (load_pool(pool, cache_dir=cache).files.unchanged) == 4


def test_a_pool_given_as_the_current_folder_keeps_its_ids_and_sources(tmp_path, settled, monkeypatch):
    write_pool(tmp_path / "pool")
    monkeypatch.chdir(tmp_path / "pool")
    for cache in (None, tmp_path / "cache", tmp_path / "cache"):
        load = load_pool(".", cache_dir=cache)
        assert {s.id: s.source for s in load.skills}["docker/compose"] == "docker/compose/SKILL.md"
        assert [r.source for r in load.rejected] == ["broken/SKILL.md"]
