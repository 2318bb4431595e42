"""Turn what the user named (files, folders, archives, `-`) into readable Sources.

Nothing is extracted to disk and nothing is written next to the inputs: archive members are read
through the archive's own file objects (ingest/archives.py). Only regular files are read (a FIFO,
a device or a socket is refused when named, skipped and named when found in a folder), and every
read is bounded (ingest/readers.py, ingest/limits.py) so a hostile or corrupt bundle fails with
one clear error instead of exhausting the machine or hanging.
"""

from __future__ import annotations

import gzip
import os
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from vllm_triage.core.errors import InputError
from vllm_triage.ingest import archives
from vllm_triage.ingest.limits import LIMITS, human
from vllm_triage.ingest.readers import (
    GZIP_MAGIC,
    Budget,
    Opener,
    file_kind,
    maybe_gunzip,
    open_regular,
    spool_stdin,
)
from vllm_triage.ingest.skips import Skipped, Sources

MAX_FOLDER_FILES = 5_000
# Files in a bundle folder that are never artefacts.
_SKIP_NAMES = {".DS_Store", "Thumbs.db"}
_SKIP_DIRS = {".git", "__pycache__", ".venv", "node_modules"}

# Shorter NUL runs can be data (UTF-16-BE text starts with a NUL byte); this many is padding.
_NUL_PADDING = b"\x00" * 16
_PADDING_BLOCK = 1024 * 1024
ZIP_MAGIC = b"PK\x03\x04"
# What a damaged compressed stream raises while it is read (BadGzipFile is also an OSError).
_CORRUPT = (EOFError, zlib.error, gzip.BadGzipFile, zipfile.BadZipFile, tarfile.TarError)
_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".txz")


@dataclass
class Source:
    """One input file, readable any number of times, with its role once sniffed."""

    name: str  # what reports call it: a path, or "archive.tgz!member/path"
    opener: Opener = field(repr=False)
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


def _file_opener(path: str) -> Opener:
    """Each open checks again that the path is a regular file, and gunzips a `.gz` as it reads;
    every byte counts against --max-input (a file can grow, a .gz inflates)."""
    budget = Budget(path, LIMITS.max_input)
    return lambda: maybe_gunzip(open_regular(path), budget, path)


def collect(paths: list[str], stdin: BinaryIO | None = None) -> Sources:
    """All sources named by `paths`, in order, and what was skipped on the way (`.skipped`).
    Raises InputError for anything unusable."""
    if not paths:
        raise InputError(
            "no-input", "no input given", "name a log file, a bundle folder or archive, or - for stdin"
        )
    sources = Sources()
    for given in paths:
        sources.extend(_collect_one(given, stdin, sources.skipped))
    return sources


def _collect_one(given: str, stdin: BinaryIO | None, skipped: list[Skipped]) -> list[Source]:
    if given == "-":
        opener, size = spool_stdin(stdin)
        return _from_stream("<stdin>", opener, size, skipped, sniff_tar=True)
    try:
        info = os.stat(given)  # follows a symlink named on the command line: the user chose it
    except FileNotFoundError:
        raise InputError("missing-path", f"{given} does not exist") from None
    except OSError as exc:
        raise InputError("unreadable-path", f"cannot read {given}: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(info.st_mode):
        return _from_folder(Path(given), skipped)
    kind = file_kind(info.st_mode)
    if kind is not None:
        raise InputError(
            "not-a-regular-file",
            f"{given} is {kind}, not a regular file",
            "give a file, a folder or an archive; to stream data, pipe it to `-`",
        )
    if info.st_size > LIMITS.max_input:
        raise InputError(
            "input-too-large",
            f"{given} is {human(info.st_size)}, more than {human(LIMITS.max_input)}",
            "raise --max-input if this is really one run's data",
        )
    with open_regular(given) as handle:
        magic = handle.read(4)
    opener = lambda: open_regular(given)  # noqa: E731 - the archive readers take an opener
    if magic.startswith(ZIP_MAGIC) or given.endswith(".zip"):
        return _sources(given, archives.zip_members(given, opener, skipped))
    if given.lower().endswith(_TAR_SUFFIXES) or (
        magic.startswith(GZIP_MAGIC) and archives.looks_like_tar(opener)  # a .gz may hold a tar
    ):
        return _sources(given, archives.tar_members(given, opener, skipped))
    return [Source(name=given, opener=_file_opener(given), size=info.st_size)]


def _sources(bundle: str, members: list[archives.Member]) -> list[Source]:
    return [Source(name=f"{bundle}!{m}", opener=o, size=size, bundle=bundle) for m, o, size in members]


def _from_stream(
    name: str, opener: Opener, size: int, skipped: list[Skipped], sniff_tar: bool
) -> list[Source]:
    """stdin: a log, a .gz log, a zip or a tar (plain or compressed), told apart by content."""
    with opener() as stream:
        magic = stream.read(4)
    if magic.startswith(ZIP_MAGIC):
        return _sources(name, archives.zip_members(name, opener, skipped))
    if sniff_tar and archives.looks_like_tar(opener):
        # A valid first header followed by missing data is a truncated archive (`tar cf - … |
        # head`), not a log: tar_members reports it as such.
        return _sources(name, archives.tar_members(name, opener, skipped))
    budget = Budget(name, LIMITS.max_input)
    return [Source(name=name, opener=lambda: maybe_gunzip(opener(), budget, name), size=size)]


def _from_folder(root: Path, skipped: list[Skipped]) -> list[Source]:
    found: list[Source] = []
    for path, info in _walk(root, skipped):
        if len(found) >= MAX_FOLDER_FILES:
            raise InputError("bundle-too-large", f"{root} holds more than {MAX_FOLDER_FILES} files")
        found.append(
            Source(name=str(path), opener=_file_opener(str(path)), size=info.st_size, bundle=str(root))
        )
    if not found:
        if skipped:
            raise InputError(
                "empty-bundle",
                f"{root} holds no readable files",
                "; ".join(s.describe() for s in skipped[:3]),
            )
        raise InputError("empty-bundle", f"{root} holds no files")
    return found


def _walk(root: Path, skipped: list[Skipped]) -> list[tuple[Path, os.stat_result]]:
    """Regular, readable files under root, in path order. Symlinks are not followed (a bundle
    must not reach outside itself); FIFOs, sockets, devices, unreadable files and folders are
    skipped and named. Every entry counts against --max-members, folders too."""
    files: list[tuple[Path, os.stat_result]] = []
    pending = [root]
    entries = 0
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as listing:
                items = list(listing)
        except OSError as exc:
            if folder == root:
                raise InputError(
                    "unreadable-path", f"cannot read folder {root}: {exc.strerror or exc}"
                ) from exc
            skipped.append(Skipped(str(folder), f"folder cannot be read ({exc.strerror or exc})"))
            continue
        for entry in items:
            entries += 1
            if entries > LIMITS.max_members:
                raise InputError(
                    "bundle-too-large",
                    f"{root} has more than {LIMITS.max_members} entries",
                    "raise --max-members if this is really one bundle",
                )
            path = Path(entry.path)
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError as exc:
                skipped.append(Skipped(str(path), f"cannot be read ({exc.strerror or exc})"))
                continue
            if stat.S_ISDIR(info.st_mode):
                if entry.name not in _SKIP_DIRS:
                    pending.append(path)
                continue
            if entry.name in _SKIP_NAMES:
                continue
            if stat.S_ISLNK(info.st_mode):
                target = "a dangling symbolic link" if not path.exists() else "a symbolic link (not followed)"
                skipped.append(Skipped(str(path), target))
                continue
            kind = file_kind(info.st_mode)
            if kind is not None:
                skipped.append(Skipped(str(path), f"{kind}, not a regular file"))
                continue
            reason = _unreadable(path)
            if reason:
                skipped.append(Skipped(str(path), reason))
                continue
            files.append((path, info))
    files.sort(key=lambda item: item[0])
    return files


def _unreadable(path: Path) -> str | None:
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return None
