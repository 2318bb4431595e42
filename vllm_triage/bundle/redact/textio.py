"""Reading a bundle file for redaction and leak scanning: UTF-8 blocks of whole lines, each line
at most --max-line bytes, and the windows of each block the rules must read (prefilter.py). A
multi-GB file, or a line with no end, costs one block and one line of memory; a construct the
rules need whole (a key block, a name/value pair, a wrapped token) is never cut by a block end."""

from __future__ import annotations

import codecs
import gzip
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from vllm_triage.bundle.redact.prefilter import HitCache, Prefilter, Window
from vllm_triage.ingest.decode import CHUNK_BYTES
from vllm_triage.ingest.limits import human
from vllm_triage.ingest.readers import GZIP_MAGIC


def open_maybe_gzip(path: Path) -> BinaryIO:
    """A file's content, decompressed when it is gzip data (a redacted `.log.gz` stays gzip)."""
    with open(path, "rb") as probe:
        compressed = probe.read(2) == GZIP_MAGIC
    # gzip.open owns its file, so closing the result closes everything.
    return gzip.open(path, "rb") if compressed else open(path, "rb")  # type: ignore[return-value]  # noqa: SIM115


# ---------------------------------------------------------------------- streaming by windows

_CONTINUATION = range(0x80, 0xC0)


@dataclass
class LineCuts:
    """Lines longer than --max-line met while reading one file: each was cut to the limit (the
    rest of it is not read into memory, not redacted and not written)."""

    limit: int
    count: int = 0
    first: list[int] = field(default_factory=list)  # line numbers of the first few

    def add(self, line: int) -> None:
        self.count += 1
        if len(self.first) < 10:
            self.first.append(line)

    def note(self) -> str:
        if not self.count:
            return ""
        where = ", ".join(str(n) for n in self.first) + (" …" if self.count > len(self.first) else "")
        return f"{self.count} line(s) longer than --max-line {human(self.limit)} cut to it (line {where})"


def _utf8_cut(line: bytes, limit: int) -> bytes:
    """The first `limit` bytes of a line, not ending inside a UTF-8 character."""
    cut = limit
    for _ in range(3):
        if cut > 0 and cut < len(line) and line[cut] in _CONTINUATION:
            cut -= 1
    return line[:cut]


def utf8_chunks(stream: BinaryIO, encoding: str, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The stream's content as UTF-8 bytes, chunk by chunk: UTF-8 passes through (a BOM dropped),
    other encodings are decoded incrementally (never a whole line at once) and re-encoded."""
    utf8 = encoding in ("utf-8", "utf-8-sig")
    decoder = None if utf8 else codecs.getincrementaldecoder(encoding)(errors="replace")
    first = True
    while True:
        block = stream.read(chunk_bytes)
        if first:
            first = False
            if utf8 and block.startswith(codecs.BOM_UTF8):
                block = block[len(codecs.BOM_UTF8) :]
            elif encoding == "utf-16":
                # A BOM after NUL padding (a copytruncate'd file): the codec wants it first.
                block = block.lstrip(b"\x00")
                if block and not block.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
                    decoder = codecs.getincrementaldecoder("utf-16-le")(errors="replace")
        if decoder is None:
            if not block:
                return
            yield block
            continue
        text = decoder.decode(block, final=not block)
        if text:
            yield text.encode("utf-8", "replace")
        if not block:
            return


def capped_blocks(chunks: Iterable[bytes], cuts: LineCuts) -> Iterator[tuple[bytes, int]]:
    """(block, first line number): blocks of whole lines (the last may lack its newline), every
    line at most `cuts.limit` bytes (a longer one is cut there and counted in `cuts`), NULs
    dropped (padding, never text), invalid UTF-8 replaced. Memory: one chunk and one line."""
    limit = cuts.limit
    pending = b""  # the start of a line not ended yet, at most `limit` bytes of it
    dropping = False  # that line was longer than the limit: the rest of it is skipped
    line = 1
    for chunk in chunks:
        if b"\x00" in chunk:
            chunk = chunk.replace(b"\x00", b"")
        last = chunk.rfind(b"\n")
        if last < 0:
            if not dropping:
                room = limit - len(pending)
                if len(chunk) > room:
                    pending += chunk[:room]
                    dropping = True
                    cuts.add(line)
                else:
                    pending += chunk
            continue
        first = chunk.find(b"\n")
        # One copy of the chunk: join reads the memoryview in place.
        if dropping or len(pending) + first > limit:
            if not dropping:
                cuts.add(line)
            head = _utf8_cut(pending + chunk[:first], limit)
            block = b"".join((head, memoryview(chunk)[first : last + 1]))
            checked = len(head)
        elif pending:
            block, checked = b"".join((pending, memoryview(chunk)[: last + 1])), len(pending) + first
        else:
            block, checked = (chunk if last == len(chunk) - 1 else chunk[: last + 1]), first
        block = _valid_utf8(_cap_inner(block, checked, limit, line, cuts))
        yield block, line
        line += block.count(b"\n")
        rest = chunk[last + 1 :]
        dropping = len(rest) > limit
        if dropping:
            cuts.add(line)
            rest = _utf8_cut(rest, limit)
        pending = rest
    if pending:
        yield _valid_utf8(pending), line


def _cap_inner(data: bytes, checked: int, limit: int, line: int, cuts: LineCuts) -> bytes:
    """The lines of data (whose first `checked` bytes, up to a newline, are known short) cut to
    `limit` bytes. A line that long holds a whole aligned segment of limit/2 bytes with no
    newline, so a few probes per block find every such line without reading the others in Python."""
    step = max(1, (limit + 1) // 2)
    pieces: list[bytes] = []
    position = 0
    probe = checked
    while probe < len(data):
        if data.find(b"\n", probe, probe + step) >= 0:
            probe += step
            continue
        start = data.rfind(b"\n", 0, probe) + 1
        end = data.find(b"\n", probe)
        if end - start > limit:
            cuts.add(line + data.count(b"\n", 0, start))
            pieces.append(data[position:start])
            pieces.append(_utf8_cut(data[start:end], limit))
            position = end
        probe = end + 1
    if not pieces:
        return data
    pieces.append(data[position:])
    return b"".join(pieces)


def _valid_utf8(block: bytes) -> bytes:
    if block.isascii():
        return block
    try:
        block.decode("utf-8")
    except UnicodeDecodeError:
        return block.decode("utf-8", "replace").encode("utf-8")
    return block


def windowed(
    blocks: Iterable[tuple[bytes, int]],
    prefilter: Prefilter,
    literals: Callable[[], list[str]],
    cache: HitCache | None = None,
) -> Iterator[tuple[bytes, list[Window], int, list[int]]]:
    """(block, windows, first line, trigger offsets) of a file: the block's bytes and the spans
    of it the rules must read (prefilter.py). A window that reaches past a block's end is carried
    whole into the next block; `literals()`: the values known to be secret, asked for each block."""
    carry = b""
    offset = 0  # where `carry` (or the next block) starts in the file's capped UTF-8 stream
    pending: tuple[bytes, int] | None = None
    iterator = iter(blocks)
    while True:
        item = next(iterator, None)
        if pending is None:
            if item is None:
                break
            pending = item
            continue
        block, line = pending
        if carry:
            # The carried lines come before this block's first line.
            block, line = carry + block, line - carry.count(b"\n")
        final = item is None
        windows, cut, found = prefilter.windows(block, literals(), final, offset, cache)
        if cut:
            yield block[:cut], windows, line, found
        carry = block[cut:]
        offset += cut
        pending = item
        if final:
            break
    if carry:  # never: the final block is never cut
        windows, _cut, found = prefilter.windows(carry, literals(), True, offset, cache)
        yield carry, windows, line, found
