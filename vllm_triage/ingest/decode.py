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

from vllm_triage.errors import InputError

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
    """Decode a binary stream piece by piece; every yielded piece ends with a complete line."""
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    carry = ""
    while True:
        block = stream.read(chunk_bytes)
        final = not block
        text = carry + decoder.decode(block, final=final)
        if final:
            if text:
                yield _clean(text)
            return
        cut = text.rfind("\n")
        if cut < 0:
            carry = text
            continue
        carry = text[cut + 1 :]
        yield _clean(text[: cut + 1])


def iter_line_batches(stream: BinaryIO, encoding: str, chunk_bytes: int = CHUNK_BYTES) -> Iterator[pl.Series]:
    """Series of raw lines, chunk by chunk. UTF-8 (the common case) is split and decoded in Rust by
    polars' CSV reader with a separator that does not occur in logs; other encodings go through
    Python's incremental decoder."""
    if encoding not in ("utf-8", "utf-8-sig"):
        for text in iter_text_chunks(stream, encoding, chunk_bytes):
            yield lines_of_text(text)
        return
    carry = b""
    first = True
    while True:
        block = stream.read(chunk_bytes)
        if not block:
            if carry:
                yield _lines_of_bytes(carry)
            return
        data = carry + block
        if first and data.startswith(codecs.BOM_UTF8):
            data = data[len(codecs.BOM_UTF8) :]
        first = False
        cut = data.rfind(b"\n")
        if cut < 0:
            carry = data
            continue
        carry = data[cut + 1 :]
        yield _lines_of_bytes(data[: cut + 1])


def _lines_of_bytes(data: bytes) -> pl.Series:
    if b"\x00" in data:
        data = data.replace(b"\x00", b"")
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
