"""Finding and reading SKILL.md files under a folder: the one rule set of ingest and the router.

Both walk a tree that someone else wrote, so the same hostile entries reach both, and a skill
must not be routed that ingest quarantines (or vanish from one and not the other). The rules:

* every file named ``SKILL.md`` (any case) is a candidate; ``.git`` folders are not searched;
* folder symlinks are never followed (loops, trees outside the source) and each is listed
  (``folder_symlink``), as is every subfolder that cannot be listed (``unreadable_folder``);
* a ``SKILL.md`` symlink is read only if it resolves inside the root (``symlink_outside_source``);
  a dangling or looping one is ``broken_symlink``;
* anything but a regular file (a FIFO, socket or device named ``SKILL.md``) is ``not_regular_file``
  and is never opened (opening a FIFO blocks until a writer comes);
* size cap (``too_large``), NUL bytes (``binary``), UTF-8 (``not_utf8``), then the front matter
  (``frontmatter``'s reasons); any other error is ``unreadable`` with its message.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path

from skill_assets.lib.core.frontmatter import (
    DEFAULT_LIMITS,
    FrontMatterLimits,
    ParsedSkill,
    SkillParseError,
    parse_skill_markdown,
)

SKILL_FILE_NAME = "skill.md"
_entry_name = attrgetter("name")
SKIPPED_FOLDERS = frozenset({".git"})
#: reasons about a folder, not a file: listed, but not counted among the files seen
FOLDER_REASONS = ("unreadable_folder", "folder_symlink")


@dataclass(frozen=True)
class FolderReject:
    """A folder the walk could not or would not enter; ``code`` is in ``FOLDER_REASONS``."""

    path: Path
    code: str
    message: str


def walk_skill_files(root: Path, on_folder: Callable[[str, list[str]], None] | None = None
                     ) -> Iterator[Path | FolderReject]:
    """Candidate skill files under ``root`` in sorted order, and a FolderReject for each folder skipped.

    ``on_folder(folder, names)`` is told the path and entry names of each folder listed, before its
    files are yielded (so a caller can look for e.g. license files without a stat per guess).
    Raises OSError only when ``root`` itself cannot be listed (the caller's whole source is unreadable).
    """
    for entry in walk_skill_paths(root, on_folder):
        yield entry if isinstance(entry, FolderReject) else Path(entry)


def walk_skill_paths(root: Path, on_folder: Callable[[str, list[str]], None] | None = None
                     ) -> Iterator[str | FolderReject]:
    """``walk_skill_files`` with the files as path strings (no pathlib object per folder or file: at
    100K skill folders those were most of the walk's cost)."""
    start = str(root)
    pending = [start]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=_entry_name)
        except OSError as exc:
            if folder == start:
                raise
            yield FolderReject(Path(folder), "unreadable_folder", f"folder cannot be listed: {exc.strerror or exc}")
            continue
        if on_folder is not None:
            on_folder(folder, [e.name for e in entries])
        subfolders = []
        for entry in entries:
            if entry.is_symlink():
                if os.path.isdir(entry.path):
                    yield FolderReject(Path(entry.path), "folder_symlink",
                                       f"symlinked folder not followed (-> {os.path.realpath(entry.path)})")
                elif entry.name.lower() == SKILL_FILE_NAME:
                    yield entry.path
            elif entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIPPED_FOLDERS:
                    subfolders.append(entry.path)
            elif entry.name.lower() == SKILL_FILE_NAME:
                yield entry.path
        pending.extend(reversed(subfolders))


def read_skill_bytes(path: Path, root: Path, max_bytes: int, cut: bool = False) -> bytes:
    """The bytes of one candidate file under the symlink, file-type and size rules; SkillParseError if not.

    ``cut``: a file over the cap is not refused but read to ``max_bytes + 1`` bytes, the one byte past the cap
    telling the caller the file went on (the MCP server shows the head of a long file and says it was cut)."""
    st = os.lstat(path)  # a plain file's lstat is its stat: one call where a symlink needs two
    if stat.S_ISLNK(st.st_mode):
        target = os.path.realpath(path)
        if not Path(target).is_relative_to(os.path.realpath(root)):
            raise SkillParseError("symlink_outside_source", f"symlink points outside the source: {target}")
        try:
            st = os.stat(path)
        except OSError as exc:
            if path.is_symlink():
                raise SkillParseError("broken_symlink", f"dangling or looping symlink: {exc.strerror}") from exc
            raise
    if not stat.S_ISREG(st.st_mode):
        raise SkillParseError("not_regular_file", f"not a regular file ({_file_kind(st.st_mode)}); not opened")
    if st.st_size > max_bytes and not cut:
        raise SkillParseError("too_large", f"{st.st_size} bytes exceeds the cap of {max_bytes}")
    # O_NONBLOCK: should the path have become a FIFO since the stat, open must not wait for a writer
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        opened = os.fstat(fd)
        if (opened.st_ino, opened.st_dev) != (st.st_ino, st.st_dev):
            raise SkillParseError("unreadable", "file was replaced while being read")
        data = _read_up_to(fd, max_bytes + 1, opened.st_size)
    finally:
        os.close(fd)
    if len(data) > max_bytes and not cut:
        raise SkillParseError("too_large", f"more than {max_bytes} bytes (the cap)")
    return data


def _read_up_to(fd: int, limit: int, size_hint: int) -> bytes:
    """At most ``limit`` bytes from ``fd``, to end of file, as a buffered ``read(limit)`` would return them;
    the first read asks for the stat'ed size + 1 (no ``limit``-sized buffer per file, no file object)."""
    parts, got = [], 0
    while got < limit and (chunk := os.read(fd, min(limit - got, size_hint + 1 if not parts else limit - got))):
        parts.append(chunk)
        got += len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def decode_skill_bytes(data: bytes) -> str:
    if b"\x00" in data:
        raise SkillParseError("binary", "file contains NUL bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillParseError("not_utf8", f"not valid UTF-8 at byte {exc.start}") from exc


def read_skill(path: Path, root: Path, max_bytes: int, limits: FrontMatterLimits = DEFAULT_LIMITS,
               require_description: bool = True) -> tuple[bytes, ParsedSkill]:
    """Read and parse one candidate; every failure is a SkillParseError with a reason code.

    OSErrors become ``unreadable``; anything else a parser might raise on hostile input becomes
    ``parse_error`` naming the exception, so one file never aborts a whole ingest or pool load.
    """
    try:
        data = read_skill_bytes(path, root, max_bytes)
        return data, parse_skill_markdown(decode_skill_bytes(data), limits, require_description)
    except SkillParseError:
        raise
    except OSError as exc:
        raise SkillParseError("unreadable", f"{type(exc).__name__}: {exc.strerror or exc}") from exc
    except Exception as exc:  # noqa: BLE001 - hostile input must become a reject, whatever the parser does
        raise SkillParseError("parse_error", f"{type(exc).__name__}: {str(exc)[:200]}") from exc


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "a special file"
