"""Reading a bundle file as text blocks for redaction and leak scanning, without holding a
multi-GB log in memory, and without ever cutting a construct the rules need whole."""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from vllm_triage.ingest.decode import CHUNK_BYTES, iter_text_chunks
from vllm_triage.ingest.sources import GZIP_MAGIC

# An unterminated private key this close to the end of a block is carried into the next block.
_KEY_TAIL_CHARS = 64 * 1024
# The first line of the only two-line construct the rules read (`- name: HF_TOKEN` then `value: …`,
# in YAML or kubectl's JSON): a block never ends on it.
_PAIR_START = re.compile(r"""[ \t]*(?:-[ \t]+)?["']?name["']?[ \t]*:""")
# A single line longer than this is processed on its own rather than carried forever.
_MAX_CARRY_CHARS = 64 * 1024 * 1024


def _safe_cut(text: str) -> int:
    """Where to end this block: at a line end, never right after the first line of a two-line
    name/value pair, and never inside a private key block."""
    cut = text.rfind("\n") + 1
    if cut > 0:
        # One step back is enough: the line before a `name:` line cannot be the start of its pair.
        previous = text.rfind("\n", 0, cut - 1) + 1
        if _PAIR_START.match(text, previous, cut):
            cut = previous
    # The key must be whole in the block as cut, END line included.
    begin = text.rfind("-----BEGIN", max(0, cut - _KEY_TAIL_CHARS), cut)
    if begin >= 0 and "-----END" not in text[begin:cut]:
        cut = text.rfind("\n", 0, begin) + 1
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
