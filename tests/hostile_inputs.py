"""Hostile skill files, folders and archives, built in a temp folder for the ingest and router fuzz suites,
and the generated hostile texts of the parser fuzz tests (kept in bench/hostile_texts.py, which times them).

Each case writes one skill folder the way an adversary (or an accident) would and names the
reason code both ingest and the router must give it. Tests run as root, so ``chmod 000`` blocks
nothing: unreadable entries are made with a FIFO, a looping or dangling symlink, or by
injecting a PermissionError (``permission_denied``).
"""
from __future__ import annotations

import io
import os
import struct
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from bench_scripts import bench_module

GOOD = "---\nname: {name}\ndescription: Does {name} things well.\n---\n# {name}\n\nSteps for {name}.\n"
#: nine levels of ten aliases each: a 400-byte front matter that expands to ~10^9 strings
ALIAS_BOMB = ("---\nname: bomb\ndescription: d\n" + "a0: &a0 [\"lol\"]\n"
              + "".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 10))
              + "---\nbody\n")
MAX_BYTES = 20_000


def good(name: str) -> str:
    return GOOD.format(name=name)


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


@dataclass(frozen=True)
class Case:
    """One hostile skill folder: ``build(folder, outside)`` makes it; ``reason`` is the expected code."""

    name: str
    build: Callable[[Path, Path], None]
    reason: str


def _fifo(folder: Path, _: Path) -> None:
    folder.mkdir(parents=True)
    os.mkfifo(folder / "SKILL.md")


def _link(target: Callable[[Path, Path], Path]) -> Callable[[Path, Path], None]:
    def build(folder: Path, outside: Path) -> None:
        folder.mkdir(parents=True)
        os.symlink(target(folder, outside), folder / "SKILL.md")
    return build


def _text(data: str | bytes) -> Callable[[Path, Path], None]:
    def build(folder: Path, _: Path) -> None:
        write(folder / "SKILL.md", data)
    return build


CASES = [
    Case("alias_cycle", _text("---\nname: cyc\ndescription: d\nmetadata: &a [*a]\n---\nbody\n"), "yaml_alias_cycle"),
    Case("alias_recursive_name", _text("---\nname: &n [*n]\ndescription: d\n---\nbody\n"), "yaml_alias_cycle"),
    Case("alias_bomb", _text(ALIAS_BOMB), "front_matter_too_large"),
    Case("deep_nesting", _text("---\nname: deep\ndescription: d\nm: " + "[" * 500 + "]" * 500 + "\n---\nbody\n"),
         "front_matter_too_deep"),
    Case("python_tag", _text("---\nname: !!python/object/apply:os.system ['touch HACKED']\ndescription: d\n---\nb\n"),
         "invalid_yaml"),
    Case("surrogate_escape", _text('---\nname: "\\ud800"\ndescription: d\n---\nbody\n'), "invalid_yaml"),
    Case("not_utf8", _text("---\nname: caf\xe9\ndescription: d\n---\nbody\n".encode("latin-1")), "not_utf8"),
    Case("nul_bytes", _text(b"---\nname: n\ndescription: d\n---\nbody\x00more\n"), "binary"),
    Case("oversize", _text(good("big") + "x" * MAX_BYTES), "too_large"),
    Case("no_front_matter", _text("just text\n"), "missing_front_matter"),
    Case("fifo", _fifo, "not_regular_file"),
    Case("symlink_loop", _link(lambda folder, _: folder / "SKILL.md"), "broken_symlink"),
    Case("dangling_symlink", _link(lambda folder, _: folder / "missing.md"), "broken_symlink"),
    Case("symlink_outside", _link(lambda _, outside: outside), "symlink_outside_source"),
]


def build_tree(root: Path, outside: Path) -> dict[str, str]:
    """Every case under ``root/<case>/`` plus good skills; {skill file path relative to root: expected reason or 'raw'}."""
    write(outside, good("outside"))
    expected = {}
    for case in CASES:
        case.build(root / case.name, outside)
        expected[f"{case.name}/SKILL.md"] = case.reason
    for name in ("good-a", "nested/good-b"):
        write(root / name / "SKILL.md", good(name.rsplit("/", 1)[-1]))
        expected[f"{name}/SKILL.md"] = "raw"
    return expected


def add_folder_hazards(root: Path) -> dict[str, str]:
    """A looping folder symlink, one leaving the root, and a folder to make unreadable; {folder: reason}."""
    (root / "loops").mkdir()
    os.symlink(root, root / "loops" / "back-to-root")
    os.symlink("/", root / "to-filesystem-root")
    write(root / "locked" / "inner" / "SKILL.md", good("locked"))
    return {"loops/back-to-root": "folder_symlink", "to-filesystem-root": "folder_symlink",
            "locked": "unreadable_folder"}


@contextmanager
def permission_denied(monkeypatch: pytest.MonkeyPatch, *paths: Path) -> Iterator[None]:
    """``os.scandir``/``os.open``/``os.stat`` raise PermissionError on ``paths`` (root ignores chmod 000)."""
    blocked = {str(p) for p in paths}
    real_scandir, real_open = os.scandir, os.open

    def scandir(path=".", *a, **k):
        if str(path) in blocked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path, *a, **k)

    def open_(path, *a, **k):
        if str(path) in blocked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **k)

    with monkeypatch.context() as patch:
        patch.setattr(os, "scandir", scandir)
        patch.setattr(os, "open", open_)
        yield


# --- archives ----------------------------------------------------------------------------------------------

def tar_gz(path: Path, members: list[tuple[str, bytes | None, str]], mode: str = "w:gz") -> Path:
    """members: (name, data, kind) with kind 'file', 'symlink' (data = target) or 'dir'; ``mode``: the compression."""
    with tarfile.open(path, mode) as tf:
        for name, data, kind in members:
            info = tarfile.TarInfo(name)
            if kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, (data or b"").decode()
                tf.addfile(info)
            elif kind == "dir":
                info.type = tarfile.DIRTYPE
                tf.addfile(info)
            else:
                info.size = len(data or b"")
                tf.addfile(info, io.BytesIO(data or b""))
    return path


def zip_file(path: Path, members: list[tuple[str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members:
            zf.writestr(name, data)
    return path


def zip_directory(path: Path, names: list[bytes], *, count: int | None = None, offset: int = 0,
                  flag_bits: int = 0) -> Path:
    """A zip of nothing but a central directory naming ``names`` (no member data: zipfile opens it all the same)
    and its end record; ``count`` and ``offset`` are what the end record claims (the truth by default)."""
    entries = b"".join(struct.pack(zipfile.structCentralDir, zipfile.stringCentralDir, 20, 3, 20, 0, flag_bits, 0, 0,
                                   0x21, 0, 0, 0, len(name), 0, 0, 0, 0, 0, 0) + name for name in names)
    claimed = len(names) if count is None else count
    end = struct.pack(zipfile.structEndArchive, zipfile.stringEndArchive, 0, 0, claimed, claimed, len(entries),
                      offset, 0)
    path.write_bytes(entries + end)
    return path


# --- generated hostile texts -------------------------------------------------------------------------------------

def _hostile_texts() -> ModuleType:
    """bench/hostile_texts.py, the one set of generated hostile texts: the fuzz tests feed what the bench times."""
    return bench_module("hostile_texts")


_TEXTS = _hostile_texts()
MB, repeated, sql_list = _TEXTS.MB, _TEXTS.repeated, _TEXTS.sql_list
RATIONALES, SQL, FRONT_MATTER, QUERY_FILES = _TEXTS.RATIONALES, _TEXTS.SQL, _TEXTS.FRONT_MATTER, _TEXTS.QUERY_FILES
