"""Fuzz suite: every hostile input of issue 17 (and the ones handled before) through ingest, each under a timeout.

For every case: the run completes, every file is accounted for with its reason (the good skills
beside it still ingest), nothing is written outside the work folder, temp-disk use stays under
the archive limits, and nothing is left behind.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import duckdb
import pytest
from hostile_inputs import (
    CASES,
    MAX_BYTES,
    add_folder_hazards,
    build_tree,
    good,
    permission_denied,
    tar_gz,
    write,
    zip_directory,
    zip_file,
)

import skill_assets.lib.corpus.ingest as ingest_mod
from skill_assets.lib.corpus.archives import ArchiveError, ArchiveLimits, extract_skill_members
from skill_assets.lib.corpus.sources import SourceSpec
from skill_assets.lib.corpus.corpus_store import dedup_in_store, ingest_into_store
from skill_assets.lib.corpus.dedup import DedupConfig
from skill_assets.lib.corpus.ingest import UNCOUNTED_REASONS, ingest_sources
from skill_assets.lib.corpus.workspace import PREFIX, ingest_workdir

pytestmark = pytest.mark.timeout(600)
LIMITS = ArchiveLimits(max_member_bytes=100_000, max_total_bytes=400_000, max_ratio=10, ratio_floor_bytes=1_000_000)


def tree_snapshot(root: Path, skip: set[Path]) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if not any(p == s or s in p.parents for s in skip)}


def outcome(result) -> dict[tuple[str, str], str]:
    """(source, path) -> 'raw' or the reject reason ('|'-joined where one archive name occurs twice)."""
    out: dict[tuple[str, str], str] = {}
    for key, what in [((r["source"], r["path"]), "raw") for r in result.raw_skills] + [
            ((r["source"], r["path"]), r["reason"]) for r in result.rejects]:
        out[key] = "|".join(sorted(filter(None, [out.get(key), what])))
    assert all(r["message"] for r in result.rejects)
    return out


def accounted(result) -> bool:
    counted = [r for r in result.rejects if r["reason"] not in UNCOUNTED_REASONS]
    return result.files_seen == len(result.raw_skills) + len(counted)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_hostile_file_is_one_reject_and_its_neighbour_ingests(case, tmp_path):
    root, work = tmp_path / "src", tmp_path / "work"
    work.mkdir()
    case.build(root / "bad", tmp_path / "outside.md")
    write(root / "fine" / "SKILL.md", good("fine"))
    result = ingest_sources([SourceSpec("s", "dir", str(root))], work, max_bytes=MAX_BYTES)
    assert outcome(result) == {("s", "bad/SKILL.md"): case.reason, ("s", "fine/SKILL.md"): "raw"}
    assert accounted(result)
    assert not Path("HACKED").exists() and not (root / "bad" / "HACKED").exists()


def test_whole_hostile_tree_through_the_store(tmp_path, monkeypatch):
    """All cases in one source, plus folder hazards and an unreadable LICENSE, into DuckDB: nothing aborts."""
    root, work, db = tmp_path / "src", tmp_path / "work", tmp_path / "store" / "s.duckdb"
    work.mkdir()
    expected = build_tree(root, tmp_path / "outside.md")
    folders = add_folder_hazards(root)
    write(root / "good-a" / "LICENSE", "MIT License")
    os.mkfifo(root / "nested" / "LICENSE")  # a FIFO named LICENSE beside a good skill
    write(root / "perm" / "SKILL.md", good("perm"))
    write(root / "perm" / "LICENSE", "MIT License")
    before = tree_snapshot(tmp_path, {work, db.parent})
    with permission_denied(monkeypatch, root / "locked", root / "perm" / "LICENSE"):
        result = ingest_into_store(db, [SourceSpec("s", "dir", str(root))], work, MAX_BYTES, 1)
        dedup_in_store(db, ["s"], DedupConfig())
    got = outcome(result)
    for path, reason in expected.items():
        assert got.pop(("s", path)) == reason, path
    for path, reason in folders.items():
        assert got.pop(("s", path)) == reason, path
    assert got == {("s", "nested/LICENSE"): "license_unreadable", ("s", "perm/LICENSE"): "license_unreadable",
                   ("s", "perm/SKILL.md"): "raw"}
    assert accounted(result)
    with duckdb.connect(str(db), read_only=True) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        raw = con.execute("SELECT count(*) FROM raw_skills").fetchone()[0]
        longest = con.execute("SELECT max(length(extra_front_matter)) FROM raw_skills").fetchone()[0]
    assert "raw_skills__staging" not in tables and raw == len(result.raw_skills) == 3
    assert longest < 1000
    assert tree_snapshot(tmp_path, {work, db.parent}) == before  # nothing written outside the work folder
    assert list(work.iterdir()) == []


# --- archives ----------------------------------------------------------------------------------------------

def ingest_archive(tmp_path: Path, archive: Path, monkeypatch) -> tuple[dict, object, list[int]]:
    """Ingest one archive source under LIMITS; also the temp-disk use measured right after extraction."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    peaks: list[int] = []
    real_prepare = ingest_mod.prepare_source

    def measured(spec, workdir, limits):
        src = real_prepare(spec, workdir, limits)
        peaks.append(sum(p.stat().st_size for p in Path(workdir).rglob("*") if p.is_file()))
        return src

    monkeypatch.setattr(ingest_mod, "prepare_source", measured)
    before = tree_snapshot(tmp_path, {work})
    result = ingest_sources([SourceSpec("a", "archive", str(archive))], work, max_bytes=MAX_BYTES,
                            archive_limits=LIMITS)
    assert tree_snapshot(tmp_path, {work}) == before and list(work.iterdir()) == []
    assert accounted(result)
    return outcome(result), result, peaks


def test_tar_bomb_of_non_skill_content_stops_at_the_ratio(tmp_path, monkeypatch):
    archive = tar_gz(tmp_path / "bomb.tar.gz", [("ok/SKILL.md", good("ok").encode(), "file"),
                                                 ("blob.bin", b"\0" * 30_000_000, "file"),
                                                 ("late/SKILL.md", good("late").encode(), "file")])
    assert archive.stat().st_size < 100_000
    got, _, peaks = ingest_archive(tmp_path, archive, monkeypatch)
    assert got == {("a", "ok/SKILL.md"): "raw", ("a", "blob.bin"): "archive_ratio_too_high"}
    assert max(peaks) < 10_000  # only the skill file was ever written


@pytest.mark.parametrize("mode", ["w:bz2", "w:gz", "w:xz"])
@pytest.mark.parametrize("last", [True, False])
def test_tar_stream_bomb_stops_while_its_member_is_read(mode, last, tmp_path, monkeypatch):
    """tarfile skips a member by decompressing all of it: the ratio was checked only at the next header,
    and never after the last member (issue 21, finding 6). The limit now holds inside the member."""
    members = [("ok/SKILL.md", good("ok").encode(), "file"), ("blob.bin", b"\0" * 30_000_000, "file")]
    archive = tar_gz(tmp_path / f"bomb.tar.{mode[2:]}", members + ([] if last else [
        ("late/SKILL.md", good("late").encode(), "file")]), mode)
    got, result, _ = ingest_archive(tmp_path, archive, monkeypatch)
    assert got == {("a", "ok/SKILL.md"): "raw", ("a", "blob.bin"): "archive_ratio_too_high"}
    stop = next(r["message"] for r in result.rejects if r["path"] == "blob.bin")
    allowed = max(LIMITS.ratio_floor_bytes, LIMITS.max_ratio * archive.stat().st_size)
    assert int(stop.split()[0]) <= allowed + 2 * tarfile.RECORDSIZE  # stopped within one read of the limit


def test_zip_bomb_of_skill_members_stops_at_the_ratio_and_member_cap(tmp_path, monkeypatch):
    members = [("good/SKILL.md", good("good").encode()), ("huge/SKILL.md", b"\0" * 5_000_000)]
    members += [(f"z{i:02d}/SKILL.md", b"---\n" + b"\0" * 90_000) for i in range(40)]
    archive = zip_file(tmp_path / "bomb.zip", members)
    got, _, peaks = ingest_archive(tmp_path, archive, monkeypatch)
    assert got.pop(("a", "good/SKILL.md")) == "raw"
    assert got.pop(("a", "huge/SKILL.md")) == "archive_member_too_large"
    stop = [k for k, v in got.items() if v in ("archive_ratio_too_high", "archive_total_too_large")]
    assert len(stop) == 1 and all(v == "too_large" for k, v in got.items() if k not in stop)
    assert max(peaks) <= LIMITS.max_total_bytes


def test_duplicate_members_and_name_clashes_are_rejected_per_member(tmp_path, monkeypatch):
    archive = tar_gz(tmp_path / "clash.tar.gz", [
        ("dup/SKILL.md", good("first").encode(), "file"),
        ("dup/SKILL.md", good("second").encode(), "file"),
        ("x/SKILL.md", good("x").encode(), "file"),
        ("x/SKILL.md/SKILL.md", good("under-a-file").encode(), "file"),
        ("LICENSE", b"MIT License", "file"),
        ("LICENSE/SKILL.md", good("under-license").encode(), "file"),
        ("../escape/SKILL.md", good("e").encode(), "file"),
        ("/abs/SKILL.md", good("a").encode(), "file"),
        ("linky/SKILL.md", b"/etc/passwd", "symlink"),
        ("big/SKILL.md", b"y" * 200_000, "file"),
        ("fine/SKILL.md", good("fine").encode(), "file"),
    ])
    got, result, _ = ingest_archive(tmp_path, archive, monkeypatch)
    assert got == {("a", "dup/SKILL.md"): "duplicate_archive_member|raw", ("a", "x/SKILL.md"): "raw",
                   ("a", "x/SKILL.md/SKILL.md"): "archive_name_clash",
                   ("a", "LICENSE/SKILL.md"): "archive_name_clash",
                   ("a", "../escape/SKILL.md"): "unsafe_archive_path", ("a", "/abs/SKILL.md"): "unsafe_archive_path",
                   ("a", "linky/SKILL.md"): "archive_link", ("a", "big/SKILL.md"): "archive_member_too_large",
                   ("a", "fine/SKILL.md"): "raw"}
    assert next(r for r in result.raw_skills if r["skill_id"] == "a/dup")["name"] == "first"  # first copy kept
    assert not (tmp_path / "escape").exists() and not Path("/abs/SKILL.md").exists()


def test_killed_runs_temp_folders_are_removed_at_the_next_start(tmp_path):
    stale = tmp_path / f"{PREFIX}999999.1-abcd1234"
    (stale / "archive-x").mkdir(parents=True)
    write(stale / "archive-x" / "SKILL.md", good("left"))
    foreign = tmp_path / "someone-elses"
    foreign.mkdir()
    with ingest_workdir(tmp_path) as (work, removed):
        assert removed == [stale] and not stale.exists() and work.is_dir()
        mine = work
    assert not mine.exists() and foreign.exists()


def test_extraction_is_removed_when_ingest_fails_midway(tmp_path, monkeypatch):
    archive = tar_gz(tmp_path / "ok.tar.gz", [("s/SKILL.md", good("s").encode(), "file")])
    work = tmp_path / "work"
    work.mkdir()

    def boom(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(ingest_mod, "_ingest_one", boom)
    with pytest.raises(KeyboardInterrupt):
        ingest_sources([SourceSpec("a", "archive", str(archive))], work)
    assert list(work.iterdir()) == []
    shutil.rmtree(work)


def test_a_failed_ingest_leaves_no_staging_table_and_the_old_corpus(tmp_path, monkeypatch):
    root, db = tmp_path / "src", tmp_path / "s.duckdb"
    write(root / "one" / "SKILL.md", good("one"))
    ingest_into_store(db, [SourceSpec("s", "dir", str(root))], tmp_path, MAX_BYTES, 1)
    write(root / "two" / "SKILL.md", good("two"))

    def fail_midway(*_a, **_k):
        raise RuntimeError("disk full")

    monkeypatch.setattr("skill_assets.lib.corpus.corpus_store._publish", fail_midway)
    with pytest.raises(RuntimeError, match="disk full"):
        ingest_into_store(db, [SourceSpec("s", "dir", str(root))], tmp_path, MAX_BYTES, 1)
    with duckdb.connect(str(db), read_only=True) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        assert con.execute("SELECT skill_id FROM raw_skills").fetchall() == [("s/one",)]
    assert "raw_skills__staging" not in tables


# --- archive memory (issue 31, finding 7) ---------------------------------------------------------------------

#: peak memory an extraction may add, whatever the archive
MEMORY_BOUND_KB = 64 * 1024
#: a ratio limit that lets the whole stream through: memory must be bounded by the reader, not by the ratio
NO_RATIO = {"max_member_bytes": 100_000, "max_total_bytes": 400_000, "max_ratio": 1e9, "ratio_floor_bytes": 10**12}
#: VmHWM, the process's peak RSS (ru_maxrss would not do: Linux carries the parent's peak over fork and exec)
_MEASURE = """
import json, re, sys, tempfile
from pathlib import Path
from skill_assets.lib.corpus.archives import ArchiveError, ArchiveLimits, extract_skill_members
def peak_kb():
    return int(re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1))
base = peak_kb()
rejects, error = [], None
with tempfile.TemporaryDirectory() as dest:
    try:
        rejects = extract_skill_members(Path(sys.argv[1]), Path(dest), "a", ArchiveLimits(**json.loads(sys.argv[2])))
    except ArchiveError as exc:
        error = str(exc)
    extracted = sorted(p.relative_to(dest).as_posix() for p in Path(dest).rglob("SKILL.md"))
print(json.dumps({"added_kb": peak_kb() - base, "rejects": rejects, "extracted": extracted, "error": error}))
"""


def extract_in_subprocess(archive: Path, limits: dict) -> dict:
    """Extract in a fresh process: the peak RSS the extraction added to it, its rejects, what it wrote, and
    the ArchiveError that refused the whole archive (None when none did)."""
    done = subprocess.run([sys.executable, "-c", _MEASURE, str(archive), json.dumps(limits)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def tar_gz_with_header(path: Path, header_type: bytes, size: int) -> Path:
    """ok/SKILL.md, then a long-name or pax header of ``size`` bytes of 'a', then late/SKILL.md; written as a stream."""
    def member(name: str, data: bytes) -> bytes:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        return info.tobuf(format=tarfile.GNU_FORMAT) + data + b"\0" * (-len(data) % tarfile.BLOCKSIZE)

    header = tarfile.TarInfo("././@LongLink")
    header.type, header.size = header_type, size
    with gzip.open(path, "wb") as out:
        out.write(member("ok/SKILL.md", good("ok").encode()) + header.tobuf(format=tarfile.GNU_FORMAT))
        chunk = b"a" * (1 << 20)
        for start in range(0, size, len(chunk)):
            out.write(chunk[:size - start])
        out.write(b"\0" * (-size % tarfile.BLOCKSIZE) + member("late/SKILL.md", good("late").encode()))
        out.write(b"\0" * 2 * tarfile.BLOCKSIZE)
    return path


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak RSS is read from /proc")
@pytest.mark.parametrize("header_type", [tarfile.GNUTYPE_LONGNAME, tarfile.XHDTYPE], ids=["gnu_long_name", "pax"])
def test_huge_tar_header_is_refused_unread_in_bounded_memory(header_type, tmp_path):
    """A 256 MB long-name or pax header was read into memory whole (a 2 GB one took 2 GB, bounded only
    by 100 x the archive size): it is refused from its size field, with the reason, before it is read."""
    archive = tar_gz_with_header(tmp_path / "long.tar.gz", header_type, 256 << 20)
    assert archive.stat().st_size < 2_000_000
    got = extract_in_subprocess(archive, NO_RATIO)
    assert got["added_kb"] < MEMORY_BOUND_KB
    assert got["extracted"] == ["ok/SKILL.md"]
    [stop] = got["rejects"]
    assert stop["reason"] == "archive_header_too_large"
    assert str(256 << 20) in stop["message"] and "65536" in stop["message"]
    assert "later members not read" in stop["message"]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak RSS is read from /proc")
def test_stream_of_members_keeps_no_index_of_their_headers(tmp_path):
    """tarfile keeps every header it has read; 3,000 members with a 50 KB pax header each (each under
    the header cap) held 150 MB. The reader keeps none once passed."""
    archive = tmp_path / "many.tar.gz"
    with tarfile.open(archive, "w:gz", format=tarfile.PAX_FORMAT) as tf:
        skill = good("ok").encode()
        info = tarfile.TarInfo("ok/SKILL.md")
        info.size = len(skill)
        tf.addfile(info, io.BytesIO(skill))
        for i in range(3000):
            info = tarfile.TarInfo(f"notes/{i}.txt")
            info.pax_headers = {"comment": f"{i:05d}" + "a" * 50_000}
            tf.addfile(info, io.BytesIO(b""))
    got = extract_in_subprocess(archive, NO_RATIO)
    assert got["rejects"] == [] and got["extracted"] == ["ok/SKILL.md"]
    assert got["added_kb"] < MEMORY_BOUND_KB


def pax_record(key: str, value: str) -> bytes:
    """One pax record, '<length> key=value\\n', its length counting its own digits."""
    body = f" {key}={value}\n".encode()
    length = len(body) + 1
    while len(str(length)) + len(body) != length:
        length += 1
    return str(length).encode() + body


def test_global_pax_headers_count_together_against_the_header_cap(tmp_path):
    """Global pax headers are kept for the rest of the archive: four of 30 KB are one of 120 KB."""
    blocks = []
    for i in range(4):
        records = pax_record(f"key{i}", "v" * 30_000)
        header = tarfile.TarInfo("pax_global_header")
        header.type, header.size = tarfile.XGLTYPE, len(records)
        skill = good(f"s{i}").encode()
        info = tarfile.TarInfo(f"s{i}/SKILL.md")
        info.size = len(skill)
        blocks += [header.tobuf(format=tarfile.USTAR_FORMAT), records, b"\0" * (-len(records) % tarfile.BLOCKSIZE),
                   info.tobuf(format=tarfile.USTAR_FORMAT), skill, b"\0" * (-len(skill) % tarfile.BLOCKSIZE)]
    archive = tmp_path / "global.tar"
    archive.write_bytes(b"".join(blocks) + b"\0" * 2 * tarfile.BLOCKSIZE)
    with tarfile.open(archive) as tf:  # a valid archive: tarfile reads all four members
        assert [m.name for m in tf] == [f"s{i}/SKILL.md" for i in range(4)]
    got = extract_in_subprocess(archive, NO_RATIO)
    assert got["extracted"] == ["s0/SKILL.md", "s1/SKILL.md"]
    [stop] = got["rejects"]
    assert stop["reason"] == "archive_header_too_large" and stop["path"] == "s1/SKILL.md"
    assert "global pax" in stop["message"]


def test_a_chain_of_headers_counts_together_against_the_header_cap(tmp_path):
    """Ten 30 KB long-name headers before one member: each under the cap, 300 KB for one member."""
    blocks = []
    for i in range(10):
        name = f"n{i}/".encode() * 7_500
        header = tarfile.TarInfo("././@LongLink")
        header.type, header.size = tarfile.GNUTYPE_LONGNAME, len(name)
        blocks += [header.tobuf(format=tarfile.GNU_FORMAT), name, b"\0" * (-len(name) % tarfile.BLOCKSIZE)]
    members = tmp_path / "members.tar"
    tar_gz(members, [("ok/SKILL.md", good("ok").encode(), "file"), ("late/SKILL.md", good("late").encode(), "file")],
           "w")
    first, rest = members.read_bytes()[:tarfile.BLOCKSIZE * 2], members.read_bytes()[tarfile.BLOCKSIZE * 2:]
    archive = tmp_path / "chain.tar"
    archive.write_bytes(first + b"".join(blocks) + rest)
    with tarfile.open(archive) as tf:  # a valid archive: the first long name names the second member
        assert [m.name[:6] for m in tf] == ["ok/SKI", "n0/n0/"]
    got = extract_in_subprocess(archive, NO_RATIO)
    assert got["extracted"] == ["ok/SKILL.md"]
    [stop] = got["rejects"]
    assert stop["reason"] == "archive_header_too_large" and "65536" in stop["message"]


# --- zip central directory (issue 31, finding 7) ------------------------------------------------------------------

@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak RSS is read from /proc")
def test_a_huge_zip_central_directory_is_refused_unread_in_bounded_memory(tmp_path):
    """zipfile reads the whole central directory and keeps an object per entry: 500,000 empty names (a 25 MB
    file whose end record says 65,535) took ~120 MB before a member was read. The end record is checked first."""
    names = [f"n/{i}".encode() for i in range(500_000)]
    archive = zip_directory(tmp_path / "many.zip", names, count=0xFFFF)
    got = extract_in_subprocess(archive, NO_RATIO)
    assert got["added_kb"] < MEMORY_BOUND_KB
    assert got["error"] is not None and "refused unread" in got["error"]
    assert "central directory of" in got["error"] and "passes the cap of 8000000" in got["error"]
    assert got["rejects"] == [] and got["extracted"] == []


ZIP_LIES = {
    "count_over_the_cap": ({"count": 0xFFFF}, {"max_zip_entries": 1_000}, "65535 entries pass the cap of 1000"),
    "count_the_directory_cannot_hold": ({"count": 0xFFFF}, {}, "more than a 168-byte central directory"),
    "count_under_the_entries": ({"count": 1}, {}, "counts 1 entries, its central directory holds 3"),
    "offset_past_the_end_record": ({"offset": 2**31}, {}, "runs past its end record"),
}


@pytest.mark.parametrize("case", ZIP_LIES)
def test_a_zip_end_record_that_lies_is_refused_with_one_line(case, tmp_path):
    """An end record whose entry count or directory offset disagrees with its central directory: zipfile opened
    each of these (it follows the directory's size alone) and read whatever the directory held."""
    claims, limits, message = ZIP_LIES[case]
    archive = zip_directory(tmp_path / "lie.zip", [b"a/SKILL.md", b"b/SKILL.md", b"c/SKILL.md"], **claims)
    with pytest.raises(ArchiveError, match="refused") as refused:
        extract_skill_members(archive, tmp_path / "out", "a", ArchiveLimits(**limits))
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_a_zip_name_flagged_utf8_that_is_not_is_refused_with_one_line(tmp_path):
    """zipfile decodes a name flagged UTF-8 (bit 11) strictly: a latin-1 name raised UnicodeDecodeError."""
    archive = zip_directory(tmp_path / "name.zip", ["caf\xe9/SKILL.md".encode("latin-1")], flag_bits=0x800)
    with pytest.raises(ArchiveError, match="cannot be opened"):
        extract_skill_members(archive, tmp_path / "out", "a")


def test_an_encrypted_zip_member_is_one_reject_and_the_others_extract(tmp_path):
    """zipfile refuses an encrypted member with a bare RuntimeError: it is that member's reject row."""
    archive = zip_file(tmp_path / "enc.zip", [("enc/SKILL.md", b"secret"), ("ok/SKILL.md", good("ok").encode())])
    data = bytearray(archive.read_bytes())
    entry = data.index(b"enc/SKILL.md", data.index(zipfile.stringCentralDir)) - zipfile.sizeCentralDir
    data[entry + 8] |= 0x1  # the central directory's flag bits: encrypted
    archive.write_bytes(data)
    rejects = extract_skill_members(archive, tmp_path / "out", "a")
    assert [(r["path"], r["reason"]) for r in rejects] == [("enc/SKILL.md", "unreadable")]
    assert "encrypted" in rejects[0]["message"]
    assert (tmp_path / "out" / "ok" / "SKILL.md").read_text() == good("ok")
