"""Where in a block of a log a secret can be at all, found in one linear-time pass.

Redaction and the leak scan run about forty `regex` patterns and some Python per candidate; over
every line of a multi-GB log that is ~1 MB/s. But a line can only hold a match of a rule where it
holds one of the rule's hints (the contract of `hints` in rules/redact/*.toml, which detect.Scope
relies on already), a base64 run that decodes to text, the start of a line-wrapped token, or a
value already known to be secret. One union of those triggers runs in polars' Rust regex engine
over the whole block (linear time, no Python per line), and only *windows* around its hits — the
line before a hit through the 8 lines after it (the reach of a two-line name/value pair and of a
wrapped token), or, after `-----BEGIN`, the reach of a private-key block — are handed to the rules.
Everything else is copied as bytes.

The triggers are necessary conditions, never sufficient: a window that holds no secret costs a
little time, a line outside every window is a line no rule could have matched. A rule without
hints (a user rule, a mask such as ipv4) cannot be prefiltered: then the whole block is one window.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from vllm_triage.bundle.redact.rules import MaskRule, SecretRule

# A hit's window: the line before it (a wrap may have cut a prefix there) and this many after.
LINES_AFTER = 8
# Windows closer than this are merged into one: fewer calls into the rules, same text read.
MERGE_GAP = 64 * 1024
# A private key block: its pattern reads at most 20,000 characters past `-----BEGIN`; the
# unterminated form then runs on over lines of base64.
KEY_OPENER = b"-----BEGIN"
KEY_REACH = 21 * 1024
_KEY_BODY = re.compile(rb"(?:[ \t]*[A-Za-z0-9+/=]{16,}[ \t\r]*\n)*")
# Four base64 groups of which every byte decodes below 0x80 (redact_disguise keeps only payloads
# that are ASCII text): first character < 32, second with bit 3 clear, third with bit 1 clear.
# Hex ids and `chatcmpl-…` request ids practically never have four in a row.
# The rest of the run is taken too: one hit per run, not one per 16 characters of it.
_ASCII_BASE64 = (
    r"(?:[A-Za-f][A-HQ-Xg-nw-z0-3][ABEFIJMNQRUVYZcdghklopstwx014589][A-Za-z0-9+/_-]){4}[A-Za-z0-9+/_-]*"
)
# A line opening with a long run of token characters may continue a token wrapped at the line
# before (redact_disguise._OPENINGS); so may the text after a JSON `\n` escape.
_WRAP_OPENING = r"\n[A-Za-z0-9_.-]{16}|^[A-Za-z0-9_.-]{16}|\\n[A-Za-z0-9_.-]{16}"
# A block is searched in this many parts at once (one per core polars uses, at most).
PARTS = max(1, min(4, pl.thread_pool_size()))
# Up to this many known values are searched with bytes.find (no engine call for a handful).
FEW_LITERALS = 16
# Past this much carried text a block is processed as it stands (memory stays bounded).
MAX_CARRY = 8 * 1024 * 1024

Window = tuple[int, int]


def _escape(literal: str) -> str:
    # Rust's regex syntax accepts a backslash before any ASCII punctuation.
    return "".join("\\" + c if not c.isalnum() and c.isascii() and c != "_" else c for c in literal)


def _alternation(literals: Iterable[str]) -> str:
    return "|".join(_escape(h) for h in sorted(set(literals), key=lambda h: (-len(h), h)))


@dataclass
class Triggers:
    """What the union is built from (kept for `describe`, and for tests)."""

    words: tuple[str, ...] = ()  # hints that must end a word of a name (not before [a-z0-9])
    keywords: tuple[str, ...] = ()  # hints that may not be followed by a lower-case letter
    substrings: tuple[str, ...] = ()  # hints anywhere, any case
    base64: bool = True
    wraps: bool = True
    everything: bool = False  # a rule without hints: every line is a candidate


def triggers_of(
    secrets: Iterable[SecretRule], masks: Iterable[MaskRule] = (), keywords: Iterable[str] = ()
) -> Triggers:
    words: set[str] = set()
    substrings: set[str] = set()
    everything = False
    wraps = False
    for rule in secrets:
        if rule.prefixes:
            wraps = True
        if rule.hints:
            (words if rule.whole_words else substrings).update(rule.hints)
        elif not (rule.multiline and rule.pattern.startswith("(?P<value>-----BEGIN")):
            everything = True  # (a key block is found by KEY_OPENER, whatever its hints)
    for mask in masks:
        if mask.hints:
            substrings.update(mask.hints)
        else:
            everything = True
    return Triggers(
        tuple(sorted(words)), tuple(sorted(set(keywords))), tuple(sorted(substrings)), True, wraps, everything
    )


class Prefilter:
    def __init__(self, triggers: Triggers) -> None:
        self.triggers = triggers
        parts = []
        if triggers.substrings:
            parts.append("(?i:" + _alternation(triggers.substrings) + ")")
        if triggers.words:
            parts.append("(?i:" + _alternation(triggers.words) + ")(?:$|[^a-z0-9])")
        if triggers.keywords:
            parts.append("(?i:" + _alternation(triggers.keywords) + ")(?:$|[^a-z])")
        if triggers.base64:
            parts.append(_ASCII_BASE64)
        if triggers.wraps:
            parts.append(_WRAP_OPENING)
        self.union = "|".join(parts)
        # Built once: an expression per part a block is split into (see hits).
        self._searches = [pl.col(f"p{i}").str.extract_all(self.union).alias(f"p{i}r") for i in range(PARTS)]

    @property
    def everything(self) -> bool:
        return self.triggers.everything

    def hits(self, block: bytes, literals: list[str], triggers: bool = True) -> list[int]:
        """Byte offsets in block of every trigger (unless `triggers` is false) and of every
        literal (values known to be secret)."""
        offsets: list[int] = []
        if literals and len(literals) <= FEW_LITERALS:
            offsets = _literal_hits(block, literals)
            literals = []
            if not triggers:
                return offsets
        parts = _parts(block, PARTS)
        # The engine reads text that ends as a line does (`$` is then never context: a final line
        # without its newline gets one here, and a match reaching it is placed at the block's end).
        frame = pl.DataFrame(
            {
                f"p{i}": pl.Series([_line_ended(block, start, end)], dtype=pl.Binary).cast(pl.String)
                for i, (start, end) in enumerate(parts)
            }
        )
        exprs = []
        if self.union and triggers:
            exprs += self._searches[: len(parts)]
        if literals:
            exprs += [pl.col(name).str.find_many(literals).alias(name + "l") for name in frame.columns]
        if not exprs:
            return sorted(offsets)
        # One expression per part: polars runs them on its threads at once (both cores work).
        found = frame.select(exprs).row(0, named=True)
        for i, (start, _end) in enumerate(parts):
            # extract_all gives the matched texts in order, not their offsets: each is found from
            # the end of the previous one, which is where the engine found it (leftmost-first,
            # and every trigger but `^` is context-free; `^` only matches at the part's start).
            cursor = start
            for piece in found.get(f"p{i}r") or ():
                data = piece.encode("utf-8")
                at = block.find(data, cursor)
                if at < 0 and data.endswith(b"\n") and block.endswith(data[:-1]):
                    at = len(block) - len(data) + 1  # it reached the newline added above
                if at >= 0:
                    offsets.append(at)
                    cursor = at + max(len(data), 1)
            offsets.extend(start + at for at in found.get(f"p{i}l") or ())
        return sorted(offsets)

    def windows(
        self, block: bytes, literals: list[str], final: bool, base: int = 0, cache: HitCache | None = None
    ) -> tuple[list[Window], int, list[int]]:
        """(windows, cut, hits): the spans of block[:cut] the rules must read (line-aligned,
        merged, in order) and the trigger offsets found there; block[cut:] is carried into the
        next block, because a window there reaches past this block's end. `final`: no more data
        follows. The block must be valid UTF-8. `base`: where the block starts in the file, for
        `cache` (the first pass over a file records its trigger offsets there, the second reads
        them back instead of searching again)."""
        if not block:
            return [], 0, []
        if self.everything:
            spans = [*_key_windows(block), (_last_lines_start(block), len(block))]
            cut = len(block) if final else _cut(block, spans)
            return ([(0, cut)] if cut else []), cut, []
        if cache is not None and cache.replaying:
            found = cache.between(base, base + len(block))
            if literals:
                found = sorted(found + self.hits(block, literals, triggers=False))
        else:
            found = self.hits(block, literals)
            if cache is not None:
                cache.record(base, found)
        spans = spans_of(block, found)
        cut = len(block) if final else _cut(block, spans)
        return merge(spans, cut), cut, [at for at in found if at < cut]

    def windows_of(
        self, block: bytes, found: list[int], around: list[Window], literals: list[str]
    ) -> list[Window]:
        """The windows of a whole block whose trigger offsets are known already (`found`), plus
        `around`: spans whose every line, the line before and 8 after, must be read too."""
        if self.everything:
            return [(0, len(block))] if block else []
        if literals:
            found = sorted(found + self.hits(block, literals, triggers=False))
        spans = spans_of(block, found)
        for start, end in around:
            first = _window_of(block, start)[0]
            spans.append((first, _window_of(block, max(start, end - 1))[1]))
        return merge(spans, len(block))


def spans_of(block: bytes, found: list[int]) -> list[Window]:
    """Each hit's window (one per line holding hits) and each key block's, sorted."""
    spans = _key_windows(block)
    line_end = -1
    for at in found:
        if at < line_end:
            continue  # another hit on the line just windowed: the same window
        spans.append(_window_of(block, at))
        newline = block.find(b"\n", at)
        line_end = len(block) if newline < 0 else newline
    spans.sort()
    return spans


def merge(spans: list[Window], cut: int) -> list[Window]:
    """Sorted spans starting before `cut`, overlapping or close ones merged."""
    merged: list[Window] = []
    for start, end in spans:
        if start >= cut:
            break
        if merged and start <= merged[-1][1] + MERGE_GAP:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def combined(first: Triggers, second: Triggers) -> Triggers:
    """The triggers of both sets (one search serves the redaction and the leak scan)."""
    return Triggers(
        tuple(sorted(set(first.words) | set(second.words))),
        tuple(sorted(set(first.keywords) | set(second.keywords))),
        tuple(sorted(set(first.substrings) | set(second.substrings))),
        first.base64 or second.base64,
        first.wraps or second.wraps,
        first.everything or second.everything,
    )


class HitCache:
    """The trigger offsets of one file (in its capped UTF-8 stream), from the pass that learns
    the secrets, for the pass that writes: the same blocks are read again, the engine is not run
    again. Only literals (values learned meanwhile) are then searched. Bounded: past `limit`
    offsets the cache gives up and the second pass searches as the first did."""

    def __init__(self, limit: int = 2_000_000) -> None:
        self.limit = limit
        self.offsets: list[int] = []
        self.replaying = False
        self.valid = True

    def record(self, base: int, found: list[int]) -> None:
        if self.valid:
            self.offsets.extend(base + at for at in found)
            if len(self.offsets) > self.limit:
                self.valid, self.offsets = False, []

    def replay(self) -> HitCache | None:
        """This cache ready for the second pass (None when it gave up)."""
        if not self.valid:
            return None
        self.offsets = sorted(set(self.offsets))
        self.replaying = True
        return self

    def between(self, start: int, end: int) -> list[int]:
        low, high = bisect.bisect_left(self.offsets, start), bisect.bisect_left(self.offsets, end)
        return [at - start for at in self.offsets[low:high]]


def _literal_hits(block: bytes, literals: list[str]) -> list[int]:
    offsets = []
    for literal in literals:
        data = literal.encode("utf-8")
        at = block.find(data)
        while at >= 0:
            offsets.append(at)
            at = block.find(data, at + 1)
    return offsets


def _parts(block: bytes, count: int) -> list[Window]:
    """The block in about `count` pieces, each ending with a newline (so `$` never matches
    inside one: every piece handed to the engine ends as a line does)."""
    bounds = [0]
    for k in range(1, count):
        cut = block.find(b"\n", max(bounds[-1], len(block) * k // count))
        if cut < 0 or cut + 1 >= len(block):
            break
        bounds.append(cut + 1)
    bounds.append(len(block))
    return list(zip(bounds, bounds[1:], strict=False))


def _line_ended(block: bytes, start: int, end: int) -> bytes:
    piece = block[start:end]
    return piece if piece.endswith(b"\n") else piece + b"\n"


def _line_start(block: bytes, at: int) -> int:
    return block.rfind(b"\n", 0, at) + 1


def _window_of(block: bytes, at: int) -> Window:
    start = _line_start(block, at)
    if start > 0:
        start = _line_start(block, start - 1)
    end = at
    for _ in range(LINES_AFTER + 1):
        newline = block.find(b"\n", end)
        if newline < 0:
            return start, len(block)
        end = newline + 1
    return start, end


def _key_windows(block: bytes) -> list[Window]:
    """A window per line holding `-----BEGIN`: through the reach of the line's last opener and
    the lines of base64 after it (the unterminated form). One pass: a line of a million openers
    is one window, not a million."""
    spans = []
    at = block.find(KEY_OPENER)
    while at >= 0:
        start = _line_start(block, at)
        newline = block.find(b"\n", at)
        line_end = len(block) if newline < 0 else newline + 1
        last = block.rfind(KEY_OPENER, at, line_end)
        reach = block.find(b"\n", min(last + KEY_REACH, len(block)))
        end = len(block) if reach < 0 else reach + 1
        if newline >= 0:
            body = _KEY_BODY.match(block, line_end)
            body_end = body.end() if body is not None else line_end
            after = block.find(b"\n", body_end)  # and the line after them (the END line)
            end = max(end, len(block) if after < 0 else after + 1)
        spans.append((start, min(end, len(block))))
        at = block.find(KEY_OPENER, line_end)
    return spans


def _last_lines_start(block: bytes) -> int:
    at = len(block)
    for _ in range(LINES_AFTER + 2):
        at = block.rfind(b"\n", 0, max(at - 1, 0))
        if at < 0:
            return 0
    return at + 1


def _cut(block: bytes, spans: list[Window]) -> int:
    """Where this block ends: before the first window that reaches its end, and before any
    window that reaches past that cut (so no window is ever split), unless that would carry
    more than MAX_CARRY (then the block is read as it stands). One pass, latest start first."""
    cut = len(block)
    for start, end in sorted(spans, reverse=True):
        if start < cut and (end > cut or end >= len(block)):
            cut = start
            if len(block) - cut > MAX_CARRY:
                return len(block)
    return cut
