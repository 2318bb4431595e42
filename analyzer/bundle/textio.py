"""Reading a bundle file as text blocks for redaction and leak scanning, without holding a
multi-GB log in memory, and without ever cutting a construct the rules need whole."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from analyzer.ingest.decode import CHUNK_BYTES, iter_text_chunks
from analyzer.ingest.sources import GZIP_MAGIC

# An unterminated private key this close to the end of a block is carried into the next block.
_KEY_TAIL_CHARS = 64 * 1024
# A single line longer than this is processed on its own rather than carried forever.
_MAX_CARRY_CHARS = 64 * 1024 * 1024


def _safe_cut(text: str) -> int:
    """Where to end this block: before its last line (the first line of a two-line name/value pair
    may be the block's last) and before an unterminated private key block."""
    body = text[:-1] if text.endswith("\n") else text
    cut = body.rfind("\n") + 1
    begin = text.rfind("-----BEGIN", max(0, len(text) - _KEY_TAIL_CHARS))
    if begin >= 0 and "-----END" not in text[begin:]:
        cut = min(cut, text.rfind("\n", 0, begin) + 1)
    if cut == 0 and len(text) > _MAX_CARRY_CHARS:
        return len(text)
    return cut


def iter_blocks(stream: BinaryIO, encoding: str, chunk_bytes: int = CHUNK_BYTES) -> Iterator[tuple[str, int]]:
    """(text, first line number) blocks that together are the whole decoded stream, in order."""
    carry = ""
    line = 1
    for chunk in iter_text_chunks(stream, encoding, chunk_bytes):
        text = carry + chunk
        cut = _safe_cut(text)
        block, carry = text[:cut], text[cut:]
        if block:
            yield block, line
            line += block.count("\n")
    if carry:
        yield carry, line


def open_maybe_gzip(path: Path) -> BinaryIO:
    """A file's content, decompressed when it is gzip data (a redacted `.log.gz` stays gzip)."""
    with open(path, "rb") as probe:
        compressed = probe.read(2) == GZIP_MAGIC
    # gzip.open owns its file, so closing the result closes everything.
    return gzip.open(path, "rb") if compressed else open(path, "rb")  # type: ignore[return-value]  # noqa: SIM115
