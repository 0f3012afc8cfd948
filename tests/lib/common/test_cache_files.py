"""The one atomic-write helper every cache writer uses (issue 21, finding 7): all or nothing, nothing left behind."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from skill_assets.lib.common.cache_files import (
    atomic_output,
    checksum,
    file_checksum,
    sealed_json,
    unseal_json,
    write_text_atomic,
)


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "verdict.json"
    write_text_atomic(target, '{"old": 1}')
    with pytest.raises(RuntimeError), atomic_output(target) as tmp:
        tmp.write_text('{"ne')
        raise RuntimeError("killed mid-write")
    assert target.read_text() == '{"old": 1}' and [p.name for p in tmp_path.iterdir()] == ["verdict.json"]


def test_a_folder_does_not_replace_another_writers_complete_folder(tmp_path):
    target = tmp_path / "index"
    with atomic_output(target) as tmp:
        tmp.mkdir()
        (tmp / "a").write_text("first")
    with pytest.raises(OSError), atomic_output(target) as tmp:
        tmp.mkdir()
        (tmp / "a").write_text("second")
    assert (target / "a").read_text() == "first" and [p.name for p in tmp_path.iterdir()] == ["index"]


def test_temporaries_of_killed_writers_are_removed_by_the_next_writer(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphans = [tmp_path / f".model_int8.{dead.pid}.0123abcd.tmp.onnx",
               tmp_path / f".model_int8.{dead.pid}.0123abcd.tmp.onnx.raw.onnx"]
    mine = tmp_path / f".model_int8.{os.getpid()}.89abcdef.tmp.onnx"  # a writer still running: kept
    for p in [*orphans, mine]:
        p.write_bytes(b"partial")
    write_text_atomic(tmp_path / "quality_gate.json", "{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([mine.name, "quality_gate.json"])


def test_the_temporary_keeps_the_suffix(tmp_path):
    with atomic_output(tmp_path / "model_int8.onnx") as tmp:
        assert tmp.suffix == ".onnx" and tmp.parent == tmp_path and tmp.name.startswith(".model_int8.")
        tmp.write_bytes(b"x")
    assert (tmp_path / "model_int8.onnx").read_bytes() == b"x"


def test_a_sealed_manifest_reads_back_and_any_change_to_it_is_refused():
    """A cache manifest carries the checksum of its content (issue 31, finding 11): two ids swapped by hand,
    or a manifest without a checksum, is refused."""
    content = {"hashes": ["a1", "b2", "c3"], "npy_sha256": checksum(b"rows")}
    text = sealed_json(content)
    assert unseal_json(text) == content
    swapped = text.replace('"a1"', '"x"').replace('"b2"', '"a1"').replace('"x"', '"b2"')
    with pytest.raises(ValueError, match="does not match its checksum"):
        unseal_json(swapped)
    with pytest.raises(ValueError, match="no checksum"):
        unseal_json('["a1", "b2", "c3"]')


def test_a_file_checksum_is_the_checksum_of_its_bytes(tmp_path):
    path = tmp_path / "rows.npy"
    path.write_bytes(b"x" * (3 << 20) + b"tail")  # more than one read
    assert file_checksum(path) == checksum(b"x" * (3 << 20) + b"tail") != checksum(b"x" * (3 << 20) + b"tale")
