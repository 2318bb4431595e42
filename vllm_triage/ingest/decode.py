"""Bytes to text, the way real logs need it: BOMs, UTF-16 from PowerShell, broken UTF-8, NULs.

Decoding is incremental so a multi-GB log is never held in memory at once: `iter_text_chunks`
yields pieces that always end on a line boundary.
"""

from __future__ import annotations

import codecs
import io
import re
from collections.abc import Iterator
from typing import BinaryIO

import polars as pl

from vllm_triage.core.errors import InputError
from vllm_triage.ingest.limits import LIMITS

CHUNK_BYTES = 16 * 1024 * 1024
SNIFF_BYTES = 64 * 1024

_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# Control characters that never appear in a text log (tab, LF, CR, ESC and form feed do).
_TEXT_CONTROLS = {9, 10, 12, 13, 27}
_NUL_RUN = re.compile(rb"\x00{4,}")


def detect_encoding(head: bytes) -> str:
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return encoding
    sample = head[:4096]
    # UTF-16 without a BOM: every other byte is NUL for ASCII text.
    if len(sample) >= 8:
        odd_nuls = sample[1::2].count(0)
        even_nuls = sample[0::2].count(0)
        half = len(sample) // 2
        if odd_nuls > 0.9 * half and even_nuls < 0.1 * half:
            return "utf-16-le"
        if even_nuls > 0.9 * half and odd_nuls < 0.1 * half:
            return "utf-16-be"
    return "utf-8"


def is_binary(head: bytes, encoding: str) -> bool:
    """True for data that is not text: many NULs or control bytes in the first block.

    A few NULs are tolerated (a truncated file reused by another process leaves a NUL run),
    as long as the head is overwhelmingly printable.
    """
    if encoding.startswith("utf-16"):
        return False
    # Runs of NULs are padding left by an in-place truncation or a crash, not data: judge the
    # bytes around them (a binary format has other control bytes besides its NUL runs).
    sample = _NUL_RUN.sub(b"", head[:8192])
    if not sample:
        return False
    bad = sum(1 for b in sample if b < 32 and b not in _TEXT_CONTROLS)
    return bad > 0.05 * len(sample)


def check_text(head: bytes, name: str) -> str:
    """Return the encoding of a text input, or raise InputError for empty/binary data."""
    if not head.strip(b" \t\r\n\x00"):
        raise InputError("empty-input", f"{name} is empty", "give a file that holds the log or artefact")
    encoding = detect_encoding(head)
    if is_binary(head, encoding):
        raise InputError(
            "binary-input",
            f"{name} is binary data, not a text log",
            "give the text log or a .gz/.tar.gz/.zip of it",
        )
    return encoding


def iter_text_chunks(stream: BinaryIO, encoding: str, chunk_bytes: int = CHUNK_BYTES) -> Iterator[str]:
    """Decode a binary stream piece by piece; every yielded piece ends with a complete line.

    A line with no newline for many chunks is gathered as a list of pieces and joined once, when
    its end arrives: re-copying it for every chunk was quadratic (a 2 GiB line never finished)."""
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    pending: list[str] = []  # the start of a line that has not ended yet
    first = True
    while True:
        block = stream.read(chunk_bytes)
        if first and encoding == "utf-16":
            # The BOM was found after NUL padding (a copytruncate'd file): the codec wants it
            # first, and raises (whatever `errors`) on a stream without one.
            block = block.lstrip(b"\x00")
            if block and not block.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
                decoder = codecs.getincrementaldecoder("utf-16-le")(errors="replace")
        first = False
        final = not block
        text = decoder.decode(block, final=final)
        if final:
            pending.append(text)
            rest = "".join(pending)
            if rest:
                yield _clean(rest)
            return
        cut = text.rfind("\n")
        if cut < 0:
            pending.append(text)
            continue
        pending.append(text[: cut + 1])
        yield _clean("".join(pending))
        pending = [text[cut + 1 :]]


def iter_line_batches(
    stream: BinaryIO, encoding: str, chunk_bytes: int = CHUNK_BYTES, max_line: int | None = None
) -> Iterator[pl.Series]:
    """Series of raw lines, chunk by chunk (see iter_line_batches_cut; cut lines are not reported)."""
    for lines, _ in iter_line_batches_cut(stream, encoding, chunk_bytes, max_line):
        yield lines


def iter_line_batches_cut(
    stream: BinaryIO, encoding: str, chunk_bytes: int = CHUNK_BYTES, max_line: int | None = None
) -> Iterator[tuple[pl.Series, list[int]]]:
    """Series of raw lines, chunk by chunk, each with the offsets (into that Series) of the lines
    that were longer than `max_line` bytes and were cut to it (--max-line; a line that long is
    never a log line, and it is what makes a regex or a copy expensive).

    UTF-8 (the common case) is split and decoded in Rust by polars' CSV reader with a separator
    that does not occur in logs; other encodings go through Python's incremental decoder. A line
    that spans chunks is carried at most `max_line` bytes long, so each chunk is copied once."""
    limit = max_line if max_line is not None else LIMITS.max_line
    if encoding not in ("utf-8", "utf-8-sig"):
        for text in iter_text_chunks(stream, encoding, chunk_bytes):
            yield _capped(lines_of_text(text), limit)
        return
    for data, first_cut in iter_utf8_blocks(stream, chunk_bytes, limit):
        yield utf8_lines(data, first_cut, limit)


def utf8_lines(data: bytes, first_cut: bool, limit: int) -> tuple[pl.Series, list[int]]:
    """The lines of one block of iter_utf8_blocks, cut to `limit`, with the offsets of the cut ones."""
    lines, cuts = _capped(_lines_of_bytes(data), limit)
    return lines, sorted({*cuts, 0} if first_cut else cuts)


def iter_utf8_blocks(stream: BinaryIO, chunk_bytes: int, limit: int) -> Iterator[tuple[bytes, bool]]:
    """UTF-8 bytes block by block, each block whole lines (the last one may lack its newline), and
    whether its first line was cut to `limit` bytes (a line that spanned blocks is carried at
    most `limit` bytes long, so each block is copied once). The BOM is dropped."""
    carry = b""  # the start of a line that has not ended yet, at most `limit` bytes of it
    carry_cut = False  # the carried line was longer than the limit: drop bytes up to its end
    first = True
    while True:
        block = stream.read(chunk_bytes)
        if first and block.startswith(codecs.BOM_UTF8):
            block = block[len(codecs.BOM_UTF8) :]
        first = False
        if not block:
            if carry:
                yield carry, carry_cut
            return
        end = block.find(b"\n")
        if end < 0:
            if not carry_cut:  # once cut, the rest of the line is dropped unread
                carry_cut = len(carry) + len(block) > limit
                carry += block[: limit - len(carry)]
            continue
        if carry_cut or len(carry) + end > limit:
            # The carried line ends in this block: keep its first `limit` bytes, drop the rest.
            head = (carry + block[: min(end, limit)])[:limit]
            block_cut = True
        else:
            head = carry + block[:end]
            block_cut = False
        cut = block.rfind(b"\n")
        # One copy of the block: join reads the memoryview in place (a slice would copy it first).
        data = b"".join((head, memoryview(block)[end : cut + 1]))
        carry, carry_cut = block[cut + 1 : cut + 1 + limit], len(block) - cut - 1 > limit
        yield data, block_cut


def iter_line_chunks(
    stream: BinaryIO, chunk_bytes: int = CHUNK_BYTES, max_line: int | None = None
) -> Iterator[bytes]:
    """Raw byte chunks that each end at a line end (the last one may not), for byte-level scans.
    A line still open at the end of a block is carried at most `max_line` bytes long (the rest of
    it is dropped, its newline kept), so a line with no end costs one pass, not one copy per block."""
    limit = max_line if max_line is not None else LIMITS.max_line
    carry, dropping = b"", False
    while block := stream.read(chunk_bytes):
        end = block.find(b"\n")
        if end < 0:
            if not dropping:
                dropping = len(carry) + len(block) > limit
                carry += block[: limit - len(carry)]
            continue
        cut = block.rfind(b"\n")
        first = (
            block[: min(end, max(limit - len(carry), 0))]
            if dropping or len(carry) + end > limit
            else block[:end]
        )
        yield b"".join((carry, first, memoryview(block)[end : cut + 1]))
        carry = block[cut + 1 : cut + 1 + limit]
        dropping = len(block) - cut - 1 > limit
    if carry:
        yield carry


def _capped(lines: pl.Series, limit: int) -> tuple[pl.Series, list[int]]:
    """Lines longer than `limit` bytes cut to it. The check is vectorised; the cut itself is done
    in Python for the few lines that need it, in bytes like the cut of a line carried across
    chunks (a multi-byte character cut in half becomes U+FFFD either way)."""
    too_long = lines.str.len_bytes() > limit
    if not too_long.any():
        return lines, []
    offsets = too_long.arg_true()
    cut = [text.encode()[:limit].decode("utf-8", "replace") for text in lines.gather(offsets).to_list()]
    return lines.scatter(offsets, cut), offsets.to_list()


def lines_of_utf8(data: bytes) -> pl.Series:
    """Split UTF-8 bytes into a Series of lines (in Rust; invalid bytes become U+FFFD)."""
    return _lines_of_bytes(data)


def _lines_of_bytes(data: bytes) -> pl.Series:
    if b"\x00" in data:
        data = data.replace(b"\x00", b"")
    if b"\x1f" in data:
        # The CSV splitter's separator: a line holding one would read as two columns. No log
        # line carries the unit separator; it is dropped like a NUL.
        data = data.replace(b"\x1f", b"")
    frame = pl.read_csv(
        io.BytesIO(data),
        has_header=False,
        separator="\x1f",
        quote_char=None,
        new_columns=["raw"],
        schema={"raw": pl.String},
        encoding="utf8-lossy",
        truncate_ragged_lines=True,
    )
    return frame.get_column("raw").fill_null("")


def lines_of_text(text: str) -> pl.Series:
    """Split decoded text into a Series of lines (in Rust), without the trailing empty piece."""
    if text.endswith("\n"):
        text = text[:-1]
    return pl.Series("raw", [_clean(text)]).str.split("\n").explode()


def decode_all(data: bytes, encoding: str) -> str:
    return _clean(data.decode(encoding, errors="replace"))


def _clean(text: str) -> str:
    # NULs carry no meaning in a log and break regex engines and terminals alike.
    return text.replace("\x00", "") if "\x00" in text else text
