"""The one way bytes come in: regular files only, every read counted against a limit.

A path is opened non-blocking and checked with fstat before a byte is read, so a FIFO, a device
or a socket (given directly, through a symlink, or swapped in after the folder walk) is refused
instead of blocking or streaming forever. Every stream handed out is a `Bounded` reader that
counts what it inflates against a `Budget` shared by one input (one file, stdin, or every member
of one archive), so a compression bomb stops with `archive-too-large` while it inflates.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from typing import BinaryIO, cast

from vllm_triage.core.errors import InputError
from vllm_triage.ingest.limits import LIMITS, RATIO_SLACK, human

GZIP_MAGIC = b"\x1f\x8b"
READ_BLOCK = 16 * 1024 * 1024
# A paste this small stays in memory; a larger stdin is spooled to an unlinked temporary file so
# that it can be read again (sniffing, scan, fingerprint) without holding gigabytes in RAM.
SPOOL_IN_MEMORY = 64 * 1024 * 1024

Opener = Callable[[], BinaryIO]


def file_kind(mode: int) -> str | None:
    """What a non-regular file is, in words (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def open_regular(path: str) -> BinaryIO:
    """Open a regular file for reading, or raise InputError. O_NONBLOCK makes opening a FIFO
    return at once (instead of waiting for a writer); fstat on the open descriptor then judges
    what was really opened, so a file replaced between the walk and the open is still caught."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError("unreadable-path", f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        kind = file_kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise InputError(
                "not-a-regular-file",
                f"{path} is {kind}, not a regular file",
                "give a file, a folder or an archive; to stream data, pipe it to `-`",
            )
        # Reads of a regular file never block; clear the flag so nothing downstream is surprised.
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class Budget:
    """Bytes inflated from one input. Each stream counts under its own key, as a high-water
    mark, so reading a member again (sniff, then scan) is not counted twice."""

    def __init__(self, name: str, limit: int, problem_id: str = "input-too-large") -> None:
        self.name, self.limit, self.problem_id = name, limit, problem_id
        self.total = 0
        self._high: dict[str, int] = {}

    def reached(self, key: str, position: int) -> None:
        seen = self._high.get(key, 0)
        if position <= seen:
            return
        self._high[key] = position
        self.total += position - seen
        if self.total > self.limit:
            what = "unpacks to" if self.problem_id == "archive-too-large" else "holds"
            raise InputError(
                self.problem_id,
                f"{self.name} {what} more than {human(self.limit)}",
                "raise --max-input if this is really one run's data",
            )


class _ReadOnly(io.RawIOBase):
    """What the three raw streams below share: readable, and readinto by their own read (io's
    buffered readers and TextIOWrapper call readinto; each subclass only says how to read)."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class Bounded(_ReadOnly):
    """A read-only stream that counts every byte it returns against a Budget."""

    def __init__(self, inner: BinaryIO, budget: Budget, key: str, close_too: tuple = ()) -> None:
        super().__init__()
        self._inner, self._budget, self._key = inner, budget, key
        self._close_too = close_too  # e.g. the TarFile a member stream belongs to
        self._pos = 0

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            return self.readall()
        data = self._inner.read(size)
        self._pos += len(data)
        self._budget.reached(self._key, self._pos)
        return data

    def readall(self) -> bytes:
        # In blocks, each counted: a bomb read whole stops at the limit, not at MemoryError.
        parts = []
        while block := self.read(READ_BLOCK):
            parts.append(block)
        return b"".join(parts)

    def close(self) -> None:
        if not self.closed:
            try:
                self._inner.close()
                for other in self._close_too:
                    other.close()
            finally:
                super().close()


class _Prefixed(_ReadOnly):
    """Bytes already read (a magic number) put back in front of the rest of a stream."""

    def __init__(self, head: bytes, inner: BinaryIO) -> None:
        super().__init__()
        self._head, self._inner = head, inner
        self.consumed = len(head)  # bytes handed out so far (the compressed side of a gunzip)

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            data, self._head = self._head + self._inner.read(), b""
        elif self._head:
            data, self._head = self._head[:size], self._head[size:]
            if len(data) < size:
                data += self._inner.read(size - len(data))
        else:
            data = self._inner.read(size)
        self.consumed += len(data)
        return data

    def close(self) -> None:
        if not self.closed:
            self._inner.close()
            super().close()


def maybe_gunzip(stream: BinaryIO, budget: Budget, key: str) -> BinaryIO:
    """The stream, inflated as it is read when it is gzip data (a rotated `vllm.log.gz` inside a
    bundle), and counted against the budget either way."""
    magic = stream.read(2)
    if magic != GZIP_MAGIC and _rewound(stream, len(magic)):
        # the plain case reads the file object directly
        return cast(BinaryIO, Bounded(stream, budget, key))
    rest = _Prefixed(magic, stream)
    # The io.RawIOBase wrappers are read as binary streams (typing.BinaryIO is a protocol they
    # do not declare): cast where they leave this module.
    if magic == GZIP_MAGIC:
        inflated = gzip.GzipFile(fileobj=rest)
        return cast(BinaryIO, _Inflating(cast(BinaryIO, inflated), budget, key + "!gunzip", rest))
    return cast(BinaryIO, Bounded(cast(BinaryIO, rest), budget, key))


def _rewound(stream: BinaryIO, n: int) -> bool:
    try:
        if stream.seekable():
            stream.seek(-n, io.SEEK_CUR)
            return True
    except (OSError, ValueError):
        pass
    return False


class _Inflating(Bounded):
    """A gunzip stream that also watches its ratio: past RATIO_SLACK inflated bytes, more than
    --max-ratio times the compressed bytes consumed is a bomb, stopped long before --max-input.
    NULs do not count once the ratio is crossed: a rotated log truncated in place (copytruncate)
    starts with a long run of them and compresses as well as a bomb does."""

    def __init__(self, inner: BinaryIO, budget: Budget, key: str, compressed: _Prefixed) -> None:
        super().__init__(inner, budget, key, close_too=(compressed,))
        self._compressed = compressed
        self._nuls = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        if self._pos > RATIO_SLACK:
            ratio_limit = LIMITS.max_ratio * max(self._compressed.consumed, 1)
            if self._pos - self._nuls > ratio_limit:
                self._nuls += data.count(0)
                if self._pos - self._nuls > ratio_limit:
                    raise InputError(
                        "archive-too-large",
                        f"{self._budget.name}: "
                        f"{self._key.split(chr(0))[0].removesuffix('!gunzip')} inflates more than "
                        f"{LIMITS.max_ratio} times its compressed size (a compression bomb?)",
                        "raise --max-ratio if this is really a log",
                    )
        return data


class _PositionalReader(_ReadOnly):
    """An independent, seekable view of a file descriptor (os.pread keeps no shared offset), so
    several readers of one spooled stdin never disturb each other."""

    def __init__(self, fd: int, size: int) -> None:
        super().__init__()
        self._fd, self._size, self._pos = fd, size, 0

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._size}[whence]
        self._pos = max(base + offset, 0)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            size = self._size - self._pos
        data = os.pread(self._fd, min(size, max(self._size - self._pos, 0)), self._pos)
        self._pos += len(data)
        return data


# Spooled stdin files stay open (unlinked) for the life of the process: Sources reopen them.
_SPOOLS: list[BinaryIO] = []


def _stdin_too_large(limit: int) -> InputError:
    return InputError(
        "input-too-large",
        f"<stdin> holds more than {human(limit)}",
        "raise --max-input, or give the file by name",
    )


def _skip_nul_padding(source: BinaryIO, limit: int) -> tuple[int, bytes]:
    """Read past a leading run of NULs; returns the bytes read and the first block of content.
    Whole blocks are compared with a block of zeros into one reused buffer (memcmp speed, no
    allocation): `triage - < /dev/zero` reaches the limit in seconds, not minutes."""
    buffer = bytearray(READ_BLOCK)
    zeros = bytes(READ_BLOCK)
    total = 0
    while True:
        n = source.readinto(buffer)  # type: ignore[attr-defined]
        if not n:
            return total, b""
        total += n
        if total > limit:
            raise _stdin_too_large(limit)
        if n == READ_BLOCK and buffer == zeros:  # bytearray == bytes is a memcmp
            continue
        content = bytes(memoryview(buffer)[:n]).lstrip(b"\x00")
        if content:
            return total, content


def spool_stdin(stream: BinaryIO | None) -> tuple[Opener, int]:
    """Read stdin once, in blocks, up to --max-input; returns an opener for independent readers
    and the size. A leading run of NULs (a log truncated in place, or /dev/zero) is dropped as it
    is read, like Source.head skips it: it holds no line, so line numbers do not change."""
    source = stream if stream is not None else sys.stdin.buffer
    limit = LIMITS.max_input
    memory = io.BytesIO()
    spill: BinaryIO | None = None
    total, block = _skip_nul_padding(source, limit)  # bytes read so far, padding included
    while block:
        if spill is None and memory.tell() + len(block) > SPOOL_IN_MEMORY:
            spill = tempfile.TemporaryFile(prefix="vllm-triage-stdin-")  # noqa: SIM115 - kept open
            spill.write(memory.getbuffer())
            memory = io.BytesIO()
        (spill or memory).write(block)
        block = source.read(READ_BLOCK)
        total += len(block)
        if total > limit:
            raise _stdin_too_large(limit)
    if spill is None:
        data = memory.getvalue()
        return (lambda: io.BytesIO(data)), len(data)
    spill.flush()
    _SPOOLS.append(spill)
    fd, size = spill.fileno(), spill.tell()
    return (lambda: _PositionalReader(fd, size)), size  # type: ignore[return-value]
