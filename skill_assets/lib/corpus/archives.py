"""Extract the skill files of an archive (.tar, .tar.gz, .tgz, .zip) under limits, member by member.

An archive is someone else's bytes: a 400 KB zip can hold 400 MB of zeros, a tar can name one
member twice or make a file and a folder of one name. So only what ingest reads is extracted
(``SKILL.md`` and ``LICENSE*`` / ``COPYING*`` members; everything else is never written), under
three limits, and every member that is not extracted is a reject row of its own — the good
members of the same archive still ingest:

* ``unsafe_archive_path`` (absolute or ``..``), ``archive_link`` (link or special member);
* ``archive_member_too_large`` — a member over ``max_member_bytes`` (counted while copying, not
  taken from the header);
* ``archive_total_too_large`` / ``archive_ratio_too_high`` — the bytes written pass
  ``max_total_bytes``, or the bytes decompressed pass ``max_ratio`` × the archive's size (once
  past ``ratio_floor_bytes``): extraction stops there, and the row says later members were not read;
* ``duplicate_archive_member`` — a name already extracted (the first copy is kept);
* ``archive_name_clash`` — a member whose path needs a folder where a file is, or the reverse;
* ``archive_header_too_large`` — a tar header (GNU long name or link, pax, sparse map) over
  ``max_header_bytes``, or global pax headers over it in all: refused from its size field before
  it is read (tarfile reads such a header in one piece: a 2 GB long name was 2 GB of memory),
  and extraction stops there, since the member it describes cannot be named.

A zip is refused whole (``ArchiveError``) when the end record of its central directory passes
``max_zip_directory_bytes`` or ``max_zip_entries``, or its counts and sizes disagree: zipfile reads
the whole directory and keeps an object per entry, so the end record is checked before it does.

Tar archives are read as a stream that we decompress ourselves and count as it is read, so the
ratio limit holds inside a member too: skipping a member, reading a long-name or pax header
and copying a member all read through the count, and a bomb stops at the limit, not after
its member (tarfile skips a member by decompressing all of it).

Memory stays bounded whatever the archive: members are copied in chunks, tar headers and the zip
directory are capped, and the tar stream keeps no index of the members it has passed (tarfile keeps
every header it read).
"""
from __future__ import annotations

import bz2
import gzip
import lzma
import re
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

CHUNK = 1 << 16
SKILL_MEMBER = "skill.md"
LICENSE_PREFIXES = ("LICENSE", "LICENCE", "COPYING")


class ArchiveError(RuntimeError):
    """The archive cannot be opened at all."""


@dataclass(frozen=True)
class ArchiveLimits:
    """Defaults stop a bomb yet pass any real skill archive (7,235 real skills: 90 MB of SKILL.md files)."""

    max_member_bytes: int = 4_000_000
    max_total_bytes: int = 2_000_000_000
    max_ratio: float = 100.0
    ratio_floor_bytes: int = 64_000_000
    max_header_bytes: int = 65_536
    #: zipfile holds the central directory and ~240 bytes per entry: 8 MB of 46-byte entries is ~50 MB
    max_zip_directory_bytes: int = 8_000_000
    max_zip_entries: int = 100_000


DEFAULT_LIMITS = ArchiveLimits()


@dataclass(frozen=True)
class _Member:
    """One archive entry, whatever the archive format."""

    name: str
    is_dir: bool
    is_regular_file: bool
    size: int
    open: Callable[[], IO[bytes] | None]


class _Stop(Exception):
    """A limit that ends the whole extraction; ``code`` and ``message`` become the member's reject."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def is_wanted(name: str) -> bool:
    """SKILL.md (any case) or a license file: the only members ingest reads."""
    base = PurePosixPath(name.replace("\\", "/")).name
    return base.lower() == SKILL_MEMBER or base.upper().startswith(LICENSE_PREFIXES)


def safe_member_path(name: str) -> PurePosixPath | None:
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or ".." in p.parts or re.match(r"^[a-zA-Z]:", name) or not p.parts:
        return None
    return p


#: what a tar stream can be compressed with, by its first bytes (plain tar otherwise)
_DECOMPRESSORS: tuple[tuple[bytes, Callable[[IO[bytes]], IO[bytes]]], ...] = (
    (b"\x1f\x8b", lambda f: gzip.GzipFile(fileobj=f)), (b"BZh", bz2.BZ2File), (b"\xfd7zXZ\x00", lzma.LZMAFile))
#: what reading a damaged stream raises (lzma's error is no OSError)
_STREAM_ERRORS = (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError)
#: what zipfile raises on a damaged or unsupported zip besides BadZipFile: a version or compression it does not
#: know, a name flagged UTF-8 that is not (and opening an encrypted member raises a bare RuntimeError)
_ZIP_ERRORS = (zipfile.BadZipFile, NotImplementedError, UnicodeDecodeError)


class _CountedStream:
    """A decompressed stream that reports every byte read to ``check`` (which raises past a limit).

    While one member's headers are read, ``header_end`` is where they must end: reading past it
    stops the extraction (a chain of headers, or a sparse map, that no single size field shows).
    """

    def __init__(self, stream: IO[bytes], check: Callable[[int], None]) -> None:
        self.stream, self.check, self.offset = stream, check, 0
        self.header_end: int | None = None
        self.header_cap = 0

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(CHUNK if size is None or size < 0 else size)
        self.offset += len(data)
        self.check(self.offset)
        if self.header_end is not None and self.offset > self.header_end:
            raise _Stop("archive_header_too_large",
                        f"the headers of one member (long names, pax headers, sparse map) pass the header cap "
                        f"of {self.header_cap} bytes; extraction stopped, later members not read")
        return data


#: tar header types whose data tarfile reads whole into memory, by what they are
_HEADER_TYPES = {tarfile.GNUTYPE_LONGNAME: "GNU long name", tarfile.GNUTYPE_LONGLINK: "GNU long link",
                 tarfile.XHDTYPE: "pax", tarfile.SOLARIS_XHDTYPE: "pax", tarfile.XGLTYPE: "global pax"}


def _capped_tarinfo(stream: _CountedStream, cap: int) -> type[tarfile.TarInfo]:
    """A TarInfo that refuses a long-name or pax header over ``cap`` bytes from its size field, unread.

    ``frombuf`` sees each header block before tarfile reads the header's data, and global pax headers
    (kept for the rest of the archive) count together; ``fromtarfile`` bounds what one member's
    whole header chain reads (long names, pax headers, sparse extension blocks) to ``cap`` plus
    one read of the tar stream.
    """
    global_bytes = 0

    class CappedTarInfo(tarfile.TarInfo):
        @classmethod
        def frombuf(cls, buf, encoding, errors):  # type: ignore[override]
            nonlocal global_bytes
            info = super().frombuf(buf, encoding, errors)
            what = _HEADER_TYPES.get(info.type)
            if what is None:
                return info
            size = info.size
            if info.type == tarfile.XGLTYPE:
                global_bytes += info.size
                size, what = global_bytes, "global pax (all of them together)"
            if size > cap:
                raise _Stop("archive_header_too_large",
                            f"a {what} header of {size} bytes passes the header cap of {cap}; not read, "
                            "extraction stopped, later members not read")
            return info

        @classmethod
        def fromtarfile(cls, tar):  # type: ignore[override]
            if stream.header_end is not None:  # the next header of a chain: the first one holds the budget
                return super().fromtarfile(tar)
            stream.header_end, stream.header_cap = stream.offset + cap + 2 * tarfile.RECORDSIZE, cap
            try:
                return super().fromtarfile(tar)
            finally:
                stream.header_end = None

    return CappedTarInfo


def _zip_entries(archive: Path, limits: ArchiveLimits) -> int:
    """The entry count of a zip's end record once its counts and sizes pass the checks; ArchiveError otherwise.

    ``zipfile.ZipFile`` reads the whole central directory into memory and keeps an object per entry
    whatever the end record's count says: a 54 MB directory of a million empty names took 235 MB
    before any member was read. The end record is read by zipfile's own reader of it
    (``_EndRecData``, 64 KB at most), so what is checked is what zipfile will follow.
    """
    with open(archive, "rb") as fp:
        end = zipfile._EndRecData(fp)
    if not end:
        raise ArchiveError(f"archive {archive} cannot be opened: no zip end record")
    entries, size, offset = end[zipfile._ECD_ENTRIES_TOTAL], end[zipfile._ECD_SIZE], end[zipfile._ECD_OFFSET]
    directory_end = end[zipfile._ECD_LOCATION]
    if end[zipfile._ECD_SIGNATURE] == zipfile.stringEndArchive64:
        directory_end -= zipfile.sizeEndCentDir64 + zipfile.sizeEndCentDir64Locator
    if size > limits.max_zip_directory_bytes:
        why = f"its central directory of {size} bytes passes the cap of {limits.max_zip_directory_bytes}"
    elif entries > limits.max_zip_entries:
        why = f"its {entries} entries pass the cap of {limits.max_zip_entries}"
    elif entries * zipfile.sizeCentralDir > size:
        why = f"its end record counts {entries} entries, more than a {size}-byte central directory can hold"
    elif offset + size > directory_end:
        why = f"its central directory ({size} bytes at offset {offset}) runs past its end record at {directory_end}"
    else:
        return entries
    raise ArchiveError(f"zip archive {archive} refused unread: {why}")


class _Reader:
    """Members of a zip (central directory) or a tar (read as a counted stream: nothing is decompressed twice)."""

    def __init__(self, archive: Path, stack: ExitStack, check: Callable[[int], None], limits: ArchiveLimits) -> None:
        self.zip: zipfile.ZipFile | None = None
        self.tar: tarfile.TarFile | None = None
        self.stream: _CountedStream | None = None
        try:
            if zipfile.is_zipfile(archive):
                entries = _zip_entries(archive, limits)
                self.zip = stack.enter_context(zipfile.ZipFile(archive))
                if len(self.zip.filelist) != entries:
                    raise ArchiveError(f"zip archive {archive} refused: its end record counts {entries} entries, "
                                       f"its central directory holds {len(self.zip.filelist)}")
            else:
                raw = stack.enter_context(open(archive, "rb"))
                head = raw.read(6)
                raw.seek(0)
                opener = next((o for magic, o in _DECOMPRESSORS if head.startswith(magic)), None)
                self.stream = _CountedStream(stack.enter_context(opener(raw)) if opener else raw, check)
                capped = _capped_tarinfo(self.stream, limits.max_header_bytes)
                self.tar = stack.enter_context(tarfile.open(fileobj=self.stream, mode="r|", tarinfo=capped))
        except (*_ZIP_ERRORS, *_STREAM_ERRORS) as exc:
            raise ArchiveError(f"archive {archive} cannot be opened: {exc}") from exc

    @property
    def stream_offset(self) -> int:
        """Bytes of the decompressed tar stream read so far (zip members are decompressed only when copied)."""
        return self.stream.offset if self.stream is not None else 0

    def members(self) -> Iterator[_Member]:
        if self.zip is not None:
            zf = self.zip
            for info in zf.infolist():
                is_link = (info.external_attr >> 16) & 0o170000 == 0o120000
                yield _Member(info.filename, info.is_dir(), not is_link, info.file_size,
                              lambda info=info: zf.open(info))
            return
        tf = self.tar
        assert tf is not None
        try:
            while (member := tf.next()) is not None:
                tf.members.clear()  # tarfile keeps every header it read: a stream of tiny members grew without end
                yield _Member(member.name, member.isdir(), member.isfile(), member.size,
                              lambda m=member: tf.extractfile(m))
        except _STREAM_ERRORS as exc:
            raise _Stop("unreadable", f"archive is damaged after this member ({type(exc).__name__}: {exc}); "
                                      "later members not read") from exc


class _MemberTooLarge(Exception):
    """One member over its cap: that member is skipped, the others still extract."""


class _Extraction:
    """Bytes decompressed and written so far, checked against the limits."""

    def __init__(self, archive: Path, dest: Path, limits: ArchiveLimits) -> None:
        self.dest, self.limits = dest, limits
        self.archive_bytes = max(1, archive.stat().st_size)
        self.written = 0
        self.decompressed = 0

    def check_ratio(self, decompressed: int) -> None:
        allowed = max(self.limits.ratio_floor_bytes, self.limits.max_ratio * self.archive_bytes)
        if decompressed > allowed:
            raise _Stop("archive_ratio_too_high",
                        f"{decompressed} bytes decompressed from a {self.archive_bytes}-byte archive "
                        f"(ratio limit {self.limits.max_ratio:g}); extraction stopped, later members not read")

    def copy(self, src: IO[bytes], target: Path) -> None:
        """Copy one member, counting bytes as they come; on any limit the partial file is removed."""
        size = 0
        out = open(target, "xb")  # never overwrites: an existing path is a clash, reported by the caller
        try:
            with out:
                while chunk := src.read(CHUNK):
                    size += len(chunk)
                    self.decompressed += len(chunk)
                    if size > self.limits.max_member_bytes:
                        raise _MemberTooLarge(f"more than {self.limits.max_member_bytes} bytes; not extracted")
                    self.written += len(chunk)
                    if self.written > self.limits.max_total_bytes:
                        raise _Stop("archive_total_too_large",
                                    f"extracted bytes passed {self.limits.max_total_bytes}; extraction stopped, "
                                    "later members not read")
                    self.check_ratio(self.decompressed)
                    out.write(chunk)
        except BaseException:
            target.unlink(missing_ok=True)
            raise


def _clash(dest: Path, rel: PurePosixPath) -> str | None:
    """Why ``rel`` cannot be written under ``dest`` (a file where a folder must be, or the reverse)."""
    parent = dest
    for part in rel.parts[:-1]:
        parent = parent / part
        if parent.exists() and not parent.is_dir():
            return f"'{parent.relative_to(dest).as_posix()}' is a file in this archive, and this member needs it as a folder"
    if (dest / rel).is_dir():
        return "a folder of this name is in this archive"
    return None


def extract_skill_members(archive: Path, dest: Path, source_name: str,
                          limits: ArchiveLimits = DEFAULT_LIMITS) -> list[dict]:
    """Extract the SKILL.md and license members of ``archive`` into ``dest``; a reject row per member not extracted.

    Raises ArchiveError when the archive cannot be opened at all.
    """
    rejects: list[dict] = []
    run = _Extraction(archive, dest, limits)
    extracted: set[PurePosixPath] = set()
    current = archive.name

    def reject(name: str, code: str, message: str) -> None:
        rejects.append({"source": source_name, "path": name, "reason": code, "message": message})

    with ExitStack() as stack:
        try:
            # reads the first header: a bomb can start there
            reader = _Reader(archive, stack, run.check_ratio, limits)
            for member in reader.members():
                current = member.name
                run.decompressed = max(run.decompressed, reader.stream_offset)
                run.check_ratio(run.decompressed)
                if member.is_dir or not is_wanted(member.name):
                    continue
                rel = safe_member_path(member.name)
                if rel is None:
                    reject(member.name, "unsafe_archive_path", "absolute or '..' path in archive; not extracted")
                elif not member.is_regular_file:
                    reject(member.name, "archive_link", "link or special member in archive; not extracted")
                elif rel in extracted:
                    reject(member.name, "duplicate_archive_member",
                           "this name occurs earlier in the archive; the first copy is kept, this one not extracted")
                elif member.size > limits.max_member_bytes:
                    reject(member.name, "archive_member_too_large",
                           f"{member.size} bytes exceeds the member cap of {limits.max_member_bytes}; not extracted")
                elif (why := _clash(dest, rel)) is not None:
                    reject(member.name, "archive_name_clash", f"{why}; not extracted")
                elif _extract_one(run, member, rel, reject):
                    extracted.add(rel)
        except _Stop as stop:
            reject(current, stop.code, stop.message)
    return rejects


def _extract_one(run: _Extraction, member: _Member, rel: PurePosixPath,
                 reject: Callable[[str, str, str], None]) -> bool:
    """Copy one member to its place; False (and a reject row) when it could not be written."""
    target = run.dest / rel
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        src = member.open()
        if src is None:
            reject(member.name, "archive_link", "member has no data; not extracted")
            return False
        with src:
            run.copy(src, target)
        return True
    except _MemberTooLarge as exc:
        reject(member.name, "archive_member_too_large", str(exc))
    except (NotADirectoryError, IsADirectoryError, FileExistsError) as exc:
        reject(member.name, "archive_name_clash", f"{exc.strerror}; not extracted")
    except (*_ZIP_ERRORS, RuntimeError, *_STREAM_ERRORS) as exc:
        reject(member.name, "unreadable", f"{type(exc).__name__}: {exc}; not extracted")
    return False
