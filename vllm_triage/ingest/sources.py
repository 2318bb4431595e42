"""Turn what the user named (files, folders, archives, `-`) into readable Sources.

Nothing is extracted to disk and nothing is written next to the inputs: archive members are read
through the archive's own file objects. Archives are bounded (member count, total size, nesting)
so a hostile or corrupt bundle fails with one clear error instead of exhausting the machine.
"""

from __future__ import annotations

import gzip
import io
import sys
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from vllm_triage.errors import InputError

MAX_MEMBERS = 10_000
MAX_TOTAL_BYTES = 8 * 1024**3  # uncompressed, across one archive
MAX_FOLDER_FILES = 5_000
# Files in a bundle folder that are never artefacts.
_SKIP_NAMES = {".DS_Store", "Thumbs.db"}
_SKIP_DIRS = {".git", "__pycache__", ".venv", "node_modules"}

GZIP_MAGIC = b"\x1f\x8b"
# Shorter NUL runs can be data (UTF-16-BE text starts with a NUL byte); this many is padding.
_NUL_PADDING = b"\x00" * 16
_PADDING_BLOCK = 1024 * 1024
ZIP_MAGIC = b"PK\x03\x04"
# What a damaged compressed stream raises while it is read (BadGzipFile is also an OSError).
_CORRUPT = (EOFError, zlib.error, gzip.BadGzipFile, zipfile.BadZipFile, tarfile.TarError)


@dataclass
class Source:
    """One input file, readable any number of times, with its role once sniffed."""

    name: str  # what reports call it: a path, or "archive.tgz!member/path"
    opener: Callable[[], BinaryIO] = field(repr=False)
    size: int | None = None
    role: str | None = None  # vllm_log, nvidia_smi, container_inspect, … (see roles.py)
    scope: str | None = None  # host | container, when a manifest or the name says so
    bundle: str | None = None  # the bundle (folder/archive) this file belongs to

    def open(self) -> BinaryIO:
        return self.opener()

    def head(self, n: int = 64 * 1024) -> bytes:
        """The first `n` bytes of content. A leading run of NULs is skipped: a log truncated in
        place (logrotate's copytruncate, `> file` while the writer keeps its offset) starts with
        as many NULs as were cut, and what follows them is the log that has to be sniffed."""
        with self._reading(), self.open() as stream:
            data = stream.read(n)
            if not data.startswith(_NUL_PADDING):
                return data
            while data:
                content = data.lstrip(b"\x00")
                if content:
                    return content + stream.read(n - len(content))
                data = stream.read(_PADDING_BLOCK)
            return b""

    def read_bytes(self) -> bytes:
        with self._reading(), self.open() as stream:
            return stream.read()

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """A truncated .gz (or a member of a broken archive) fails on read, not on open: say so
        in one line instead of letting EOFError/zlib.error escape as an internal error."""
        try:
            yield
        except _CORRUPT as exc:
            raise InputError(
                "corrupt-archive", f"{self.name}: compressed data is truncated or corrupt ({exc})"
            ) from exc
        except OSError as exc:
            raise InputError("unreadable-path", f"cannot read {self.name}: {exc.strerror or exc}") from exc


def _file_opener(path: Path) -> Callable[[], BinaryIO]:
    def opener() -> BinaryIO:
        raw = open(path, "rb")  # noqa: SIM115 - the caller closes it
        if raw.read(2) == GZIP_MAGIC:
            raw.seek(0)
            return gzip.GzipFile(fileobj=raw)  # type: ignore[return-value]
        raw.seek(0)
        return raw

    return opener


def _bytes_opener(data: bytes) -> Callable[[], BinaryIO]:
    return lambda: io.BytesIO(data)


def collect(paths: list[str], stdin: BinaryIO | None = None) -> list[Source]:
    """All sources named by `paths`, in order. Raises InputError for anything unusable."""
    if not paths:
        raise InputError(
            "no-input", "no input given", "name a log file, a bundle folder or archive, or - for stdin"
        )
    sources: list[Source] = []
    for given in paths:
        sources.extend(_collect_one(given, stdin))
    return sources


def _collect_one(given: str, stdin: BinaryIO | None) -> list[Source]:
    if given == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        data = stream.read()
        return _from_bytes("<stdin>", data)
    path = Path(given)
    if not path.exists():
        raise InputError("missing-path", f"{given} does not exist")
    if path.is_dir():
        return _from_folder(path)
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise InputError("unreadable-path", f"cannot read {given}: {exc.strerror or exc}") from exc
    if magic.startswith(ZIP_MAGIC) or given.endswith(".zip"):
        return _from_zip(given, path)
    if _is_tar(path, magic):
        return _from_tar(given, path)
    size = path.stat().st_size
    return [Source(name=given, opener=_file_opener(path), size=size)]


def _is_tar(path: Path, magic: bytes) -> bool:
    name = path.name.lower()
    if name.endswith((".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".txz")):
        return True
    if magic.startswith(GZIP_MAGIC):
        # A .gz may hold a single log or a tar stream: look inside.
        try:
            return tarfile.is_tarfile(str(path))
        except (OSError, EOFError, tarfile.TarError, gzip.BadGzipFile):
            return False
    return False


def _from_bytes(name: str, data: bytes) -> list[Source]:
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError("corrupt-archive", f"{name}: gzip data is corrupt ({exc})") from exc
    if data[:4] == ZIP_MAGIC:
        try:
            archive = zipfile.ZipFile(io.BytesIO(data))
            bad = archive.testzip()
        except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as exc:
            raise InputError("corrupt-archive", f"{name} is not a readable zip archive ({exc})") from exc
        if bad is not None:
            raise InputError("corrupt-archive", f"{name}: member {bad} is corrupt")
        return _zip_members(name, archive)
    try:
        tar = tarfile.open(fileobj=io.BytesIO(data))  # noqa: SIM115 - closed by the `with tar` below
    except (tarfile.TarError, OSError, EOFError):
        # No valid first tar header: the bytes are the log itself.
        return [Source(name=name, opener=_bytes_opener(data), size=len(data))]
    # A valid header followed by missing data is a truncated archive (a `tar cf - … | head`),
    # not a log: its bytes would be analysed as text with tar headers and a cut member in it.
    try:
        with tar:
            has_files = any(m.isfile() for m in tar.getmembers())
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise InputError("corrupt-archive", f"{name}: tar data is truncated or corrupt ({exc})") from exc
    if not has_files:
        raise InputError("empty-bundle", f"{name} holds no files")
    return _tar_members_in_memory(name, data)


def _from_folder(root: Path) -> list[Source]:
    found: list[Source] = []
    for path in sorted(root.rglob("*")):
        if any(part in _SKIP_DIRS for part in path.relative_to(root).parts):
            continue
        if not path.is_file() or path.is_symlink() or path.name in _SKIP_NAMES:
            continue
        if len(found) >= MAX_FOLDER_FILES:
            raise InputError("bundle-too-large", f"{root} holds more than {MAX_FOLDER_FILES} files")
        found.append(
            Source(name=str(path), opener=_file_opener(path), size=path.stat().st_size, bundle=str(root))
        )
    if not found:
        raise InputError("empty-bundle", f"{root} holds no files")
    return found


def _from_tar(given: str, path: Path) -> list[Source]:
    try:
        with tarfile.open(str(path)) as tar:
            members = _checked_tar_members(given, tar)
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError("corrupt-archive", f"{given} is not a readable archive ({exc})") from exc

    cache = _TarCache(given, path)

    def member_opener(member_name: str) -> Callable[[], BinaryIO]:
        return lambda: _maybe_gunzip(io.BytesIO(cache.read(member_name)))

    return [
        Source(name=f"{given}!{m.name}", opener=member_opener(m.name), size=m.size, bundle=given)
        for m in members
    ]


class _TarCache:
    """Members of a tar read in one pass: a compressed tar cannot seek, so opening each member
    separately would decompress the archive again for every member and every read. Small
    members (artefacts) stay in memory; a large one (a big log) is re-read when asked for."""

    KEEP_BYTES = 32 * 1024 * 1024

    def __init__(self, given: str, path: Path) -> None:
        self.given, self.path = given, path
        self.small: dict[str, bytes] | None = None

    def _load(self) -> dict[str, bytes]:
        small: dict[str, bytes] = {}
        with tarfile.open(str(self.path)) as tar:
            for member in tar:
                if member.isfile() and member.size <= self.KEEP_BYTES:
                    extracted = tar.extractfile(member)
                    small[member.name] = extracted.read() if extracted else b""
        return small

    def read(self, member_name: str) -> bytes:
        if self.small is None:
            self.small = self._load()
        if member_name in self.small:
            return self.small[member_name]
        with tarfile.open(str(self.path)) as tar:
            extracted = tar.extractfile(member_name)
            if extracted is None:  # pragma: no cover - filtered when listing
                raise InputError("corrupt-archive", f"{self.given}: cannot read {member_name}")
            return extracted.read()


def _tar_members_in_memory(name: str, data: bytes) -> list[Source]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = _checked_tar_members(name, tar)
        out = []
        for m in members:
            extracted = tar.extractfile(m)
            blob = extracted.read() if extracted else b""
            out.append(
                Source(name=f"{name}!{m.name}", opener=_bytes_opener(blob), size=len(blob), bundle=name)
            )
        return out


def _checked_tar_members(name: str, tar: tarfile.TarFile) -> list[tarfile.TarInfo]:
    members: list[tarfile.TarInfo] = []
    total = 0
    for member in tar:
        if len(members) >= MAX_MEMBERS:
            raise InputError("archive-too-large", f"{name} has more than {MAX_MEMBERS} members")
        if not member.isfile():
            continue  # links, devices and folders carry no artefact
        total += member.size
        if total > MAX_TOTAL_BYTES:
            raise InputError(
                "archive-too-large", f"{name} unpacks to more than {MAX_TOTAL_BYTES // 1024**3} GiB"
            )
        if Path(member.name).name in _SKIP_NAMES:
            continue
        members.append(member)
    if not members:
        raise InputError("empty-bundle", f"{name} holds no files")
    # Force a read of the last member so a truncated archive fails here, not mid-analysis.
    last = tar.extractfile(members[-1])
    if last is not None:
        last.read()
    return members


def _from_zip(given: str, path: Path) -> list[Source]:
    try:
        archive = zipfile.ZipFile(str(path))
        bad = archive.testzip()
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise InputError("corrupt-archive", f"{given} is not a readable zip archive ({exc})") from exc
    if bad is not None:
        raise InputError("corrupt-archive", f"{given}: member {bad} is corrupt")
    return _zip_members(given, archive)


def _zip_members(name: str, archive: zipfile.ZipFile) -> list[Source]:
    infos = [i for i in archive.infolist() if not i.is_dir() and Path(i.filename).name not in _SKIP_NAMES]
    if len(infos) > MAX_MEMBERS:
        raise InputError("archive-too-large", f"{name} has more than {MAX_MEMBERS} members")
    if sum(i.file_size for i in infos) > MAX_TOTAL_BYTES:
        raise InputError("archive-too-large", f"{name} unpacks to more than {MAX_TOTAL_BYTES // 1024**3} GiB")
    if not infos:
        raise InputError("empty-bundle", f"{name} holds no files")

    def member_opener(member: str) -> Callable[[], BinaryIO]:
        return lambda: _maybe_gunzip(archive.open(member))  # type: ignore[arg-type]

    return [
        Source(name=f"{name}!{i.filename}", opener=member_opener(i.filename), size=i.file_size, bundle=name)
        for i in infos
    ]


def _maybe_gunzip(stream: BinaryIO) -> BinaryIO:
    data = stream.read()
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError("corrupt-archive", f"a gzip member is corrupt ({exc})") from exc
    return io.BytesIO(data)
