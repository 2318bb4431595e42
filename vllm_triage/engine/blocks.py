"""A chunk of UTF-8 lines searched as bytes: only the lines the gate hits are split out.

Most of a serving log is lines no rule looks at. Splitting every 16 MB chunk into ~100,000 lines
and searching each for the gate's ~300 literals cost ~2 CPU-s/GB (the Rust regex crate's SIMD
search stops at 64 literals; past them it runs an Aho-Corasick automaton at ~1 GB/s). Here one
Hyperscan pass (a SIMD multi-literal engine built for thousands of patterns, GIL released) finds
the gate's literals in the raw bytes, and only the lines they fall in are cut out and decoded,
with their numbers from counting newlines (C speed). The per-line scan then runs on those
lines; a chunk that needs other lines (a context window) is split whole, once.

A chunk goes this way only when the per-line path would see exactly these lines: no NUL or unit
separator (the line splitter drops them), no line over --max-line, nothing for ingest/logical.py
to join (no CR, no CRI partial record, no box-drawing border): the same database finds those and
stops the pass, and the chunk takes the per-line path. So do JSON-lines logs, other encodings,
inputs below BLOCK_MIN_BYTES (a paste: not worth compiling a database) and rule sets with a
pattern that has no literal.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from typing import Any

import polars as pl

from vllm_triage.core import cache
from vllm_triage.engine.matcher import BlockGate, MarkerLiteral
from vllm_triage.ingest.decode import lines_of_utf8

BLOCK_MIN_BYTES = 4 * 1024 * 1024
MIN_BYTES_PER_HIT = 1024  # more hits than one per this many bytes: the per-line path is cheaper
# The structural exception pattern `[A-Za-z](?:Error|…)(?::|\(|\s*$)` on bytes, a superset of it:
# no letter class before the name (hundreds of prefixes), and Unicode whitespace before the line
# end taken as any non-ASCII byte. Multi-line: `$` is the end of any line.
STRUCTURAL_BYTES = (
    rb"(?:Error|Exception|Interrupt|Exit|Fault|Failure)"
    rb"(?::|\(|_[A-Z]|[\t\x0b\x0c\r ]*$|[\t\x0b\x0c\r ]*[\x80-\xff])"
)
# What sends a chunk to the per-line path (see the module docstring): bytes the splitter drops
# and what ingest/logical.py joins (`_MAYBE_WORK` there).
# Hyperscan syntax (a pattern is a C string: a NUL is written as its escape).
_FALLBACK = (rb"\x00", rb"\x1f", rb"\r", "│".encode(), "┃".encode(), "║".encode(), b"stdout P ", b"stderr P ")


class Fallback(Exception):
    """This chunk must take the per-line path."""


@functools.cache
def available() -> bool:
    """Hyperscan is installed (a declared dependency; without it every chunk is split into lines).
    It is imported only when a big log needs it: a paste does not pay for loading it."""
    return importlib.util.find_spec("hyperscan") is not None


def _engine() -> Any:
    import hyperscan

    return hyperscan


LITERAL_ID, STRUCTURAL_ID = 1, 2
MARKER_BASE = 16  # a milestone literal's id is MARKER_BASE + its index in the gate's markers
_DATABASES: dict[BlockGate, object] = {}  # compiling costs ~50 ms: once per gate per process


def database_of(gate: BlockGate):  # type: ignore[no-untyped-def]
    if gate not in _DATABASES:
        if len(_DATABASES) >= 32:
            _DATABASES.clear()
        markers = tuple((m.text, m.caseless) for m in gate.markers)
        _DATABASES[gate] = compile_gate(gate.literals, gate.caseless, gate.structural, markers)
    return _DATABASES[gate]


def scratch_for(database: Any) -> Any:
    return _engine().Scratch(database)


Markers = tuple[tuple[str, bool], ...]  # (literal, caseless) of the milestones wanted


def compile_gate(  # type: ignore[no-untyped-def]
    literals: tuple[str, ...], caseless: tuple[str, ...], structural: bool, markers: Markers = ()
):
    """The gate's Hyperscan database, from the disk cache when an earlier run built it: compiling
    costs ~60 ms per database (two per run: a fifth of a small paste's time), loading 0.02 ms."""
    hyperscan = _engine()
    version = str(getattr(hyperscan, "__version__", "")).encode()
    spec = repr((literals, caseless, structural, markers, _FALLBACK, STRUCTURAL_BYTES, MARKER_BASE)).encode()
    key = cache.key_of("hyperscan-gate", version, spec)
    serialized = cache.cached(
        key, lambda: hyperscan.dumpb(_compile_gate(literals, caseless, structural, markers))
    )
    try:
        return hyperscan.loadb(serialized, hyperscan.HS_MODE_BLOCK)
    except Exception:  # built on another CPU (a shared home) or by another Hyperscan: build it here
        return _compile_gate(literals, caseless, structural, markers)


def _compile_gate(  # type: ignore[no-untyped-def]
    literals: tuple[str, ...], caseless: tuple[str, ...], structural: bool, markers: Markers = ()
):
    """A Hyperscan database of the gate: its literals (case-sensitive and not, pattern id 1), the
    structural exception pattern (id 2), the fallback bytes (id 0: a match stops the scan), and
    each milestone literal under an id of its own reported once per chunk (HS_FLAG_SINGLEMATCH:
    the first line that holds it is all the milestone needs)."""
    hyperscan = _engine()
    expressions = list(_FALLBACK)
    flags = [0] * len(expressions)
    expressions += [re.escape(s.encode()) for s in literals]
    flags += [0] * len(literals)
    expressions += [re.escape(s.encode()) for s in caseless]
    flags += [hyperscan.HS_FLAG_CASELESS] * len(caseless)
    if structural:
        expressions.append(STRUCTURAL_BYTES)
        flags.append(hyperscan.HS_FLAG_MULTILINE)
    ids = [0] * len(_FALLBACK) + [LITERAL_ID] * (len(literals) + len(caseless))
    ids += [STRUCTURAL_ID] * int(structural)
    for index, (text, folded) in enumerate(markers):
        expressions.append(re.escape(text.encode()))
        flags.append(hyperscan.HS_FLAG_SINGLEMATCH | (hyperscan.HS_FLAG_CASELESS if folded else 0))
        ids.append(MARKER_BASE + index)
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(expressions=expressions, ids=ids, elements=len(expressions), flags=flags)
    return database


class HitLines:
    """The lines of one chunk: those the gate hit (decoded, with their offsets), the rest on demand."""

    def __init__(
        self, data: bytes, count: int, offsets: pl.Series, lines: pl.Series, literal: pl.Series | None = None
    ) -> None:
        self.data = data
        self.count = count
        self.hit_offsets = offsets  # UInt32, sorted: line offsets (into the chunk) of the hit lines
        self.hit_lines = lines
        # Per hit line: a gate literal is in it. A line only the structural exception pattern hit
        # holds no literal of any rule or milestone the gate stands for: no such pattern matches it.
        self.literal_hit = literal if literal is not None else pl.Series("lit", [True] * lines.len())
        # Milestone id -> offsets of the first line holding each of its literals (see BlockGate).
        self.marker_firsts: dict[str, list[int]] = {}
        self._all: pl.Series | None = None

    @classmethod
    def of(  # type: ignore[no-untyped-def]
        cls, data: bytes, database, scratch, limit: int, markers: tuple[MarkerLiteral, ...]
    ) -> HitLines:
        """Raise Fallback when the chunk must take the per-line path. `scratch` is the scan's own
        (one per concurrent scan: the database is shared, Hyperscan's working memory is not);
        `markers` the gate's milestone literals, in the database's id order."""
        if not _short_lines(data, limit):
            raise Fallback
        ends: list[int] = []
        marker_ends: dict[int, list[int]] = {}  # match end -> indexes into `markers`

        def on_match(pattern: int, _start: int, end: int, _flags: int, _context: object) -> bool:
            if pattern == 0:
                return True  # stop: a byte the per-line path treats differently
            if pattern >= MARKER_BASE:
                marker_ends.setdefault(end, []).append(pattern - MARKER_BASE)
            # A literal's hit is marked by its sign (-end): one sorted list says both.
            ends.append(end if pattern == STRUCTURAL_ID else -end)
            return False

        try:
            database.scan(data, match_event_handler=on_match, scratch=scratch)
        except _engine().ScanTerminated:
            raise Fallback from None
        if len(ends) > len(data) // MIN_BYTES_PER_HIT:
            raise Fallback  # most lines hit (a stale gate, a log of errors): splitting is cheaper
        ends.sort(key=abs)
        starts: list[int] = []
        stops: list[int] = []
        offsets: list[int] = []
        literal: list[bool] = []
        rfind, find, newlines_in = data.rfind, data.find, data.count
        number, counted, stop, size = 0, 0, -1, len(data)
        firsts: dict[int, int] = {}  # marker literal index -> offset of its line
        for signed in ends:
            end = abs(signed)
            last = end - 1  # the match's last byte: a line's own newline belongs to it
            if last <= stop:
                if signed < 0:
                    literal[-1] = True
                if end in marker_ends:
                    firsts.update(dict.fromkeys(marker_ends[end], offsets[-1]))
                continue  # another hit in the line already taken
            start = rfind(b"\n", 0, last) + 1
            stop = find(b"\n", last)
            if stop < 0:
                stop = size
            number += newlines_in(b"\n", counted, start)
            counted = start
            starts.append(start)
            stops.append(stop)
            offsets.append(number)
            literal.append(signed < 0)
            if end in marker_ends:
                firsts.update(dict.fromkeys(marker_ends[end], number))
        newlines = number + data.count(b"\n", counted)
        count = newlines + (0 if data.endswith(b"\n") else 1)
        pieces = [data[a:b] for a, b in zip(starts, stops, strict=True)]
        lines = lines_of_utf8(b"\n".join(pieces) + b"\n") if pieces else pl.Series("raw", [], dtype=pl.String)
        found = cls(
            data,
            count,
            pl.Series("idx", offsets, dtype=pl.UInt32),
            lines,
            pl.Series("lit", literal, dtype=pl.Boolean),
        )
        for index, offset in firsts.items():
            for rule_id in markers[index].rules:
                found.marker_firsts.setdefault(rule_id, []).append(offset)
        return found

    def len(self) -> int:
        return self.count

    def all_lines(self) -> pl.Series:
        if self._all is None:
            self._all = lines_of_utf8(self.data)
        return self._all

    def gather(self, offsets: pl.Series) -> pl.Series:
        if offsets.is_empty():
            return pl.Series("raw", [], dtype=pl.String)
        offsets = offsets.cast(pl.UInt32)
        if not self.hit_offsets.is_empty():
            position = self.hit_offsets.search_sorted(offsets).clip(upper_bound=self.hit_offsets.len() - 1)
            if self.hit_offsets.gather(position).equals(offsets, check_names=False, check_dtypes=False):
                return self.hit_lines.gather(position)
        return self.all_lines().gather(offsets)

    def tail(self, n: int) -> pl.Series:
        if self._all is not None:
            return self._all.tail(n)
        pos = len(self.data) - (1 if self.data.endswith(b"\n") else 0)
        start = 0
        for _ in range(n):
            found = self.data.rfind(b"\n", 0, pos)
            if found < 0:
                start = 0
                break
            pos, start = found, found + 1
        return lines_of_utf8(self.data[start:]).tail(n)


def _short_lines(data: bytes, limit: int) -> bool:
    """No line of `data` longer than `limit` bytes: a newline in every window of limit/2 bytes up to
    the last one (so no two are more than `limit` apart), then the last line's own length."""
    last = data.rfind(b"\n")
    if len(data) - last - 1 > limit:
        return False
    step = max(limit // 2, 1)
    return all(data.find(b"\n", start, start + step) >= 0 for start in range(0, last + 1, step))
