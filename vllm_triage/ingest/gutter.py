"""A gutter: what a paste or a viewer put before every line of a whole log, learnt from its head.

The prefix grammar (ingest/prefixes.py) knows the transports by their shape, one line at a time.
Some are only visible across lines, because the same text stands before every line whatever the
line holds:
  * indentation: a log pasted inside a Markdown list item or `<details>` block, an e-mail reply,
    a YAML block scalar — every line, tracebacks included, moved right by the same spaces or tab;
  * line numbers: `grep -n` / `grep -C` (`1561:` a match, `1562-` context), `cat -n`, `nl`
    (`  1561\t`), an editor's copy — an increasing number before every line;
  * a constant tag: log tails that name the source before each line (`stern`'s `pod container `,
    `pm2 logs`' `0|vllm  | `, a shipper's `worker-3: `) — a few distinct word prefixes repeated.

Without taking them off, a vLLM line no longer starts with its process or logger prefix and a
traceback's exception line no longer starts at the margin, so the log reads as unstructured text
(measured on the dev corpus: a 4-space indent changed the verdict of 17 of 49 logs).

A gutter is learnt only where the evidence is plain: on the head of the log, most lines must
become vLLM records once it is off, while few are records as given. It is then taken off every
line that carries it, exactly (a line without it is left alone), so a frame keeps its indentation
relative to the traceback.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from vllm_triage.ingest.prefixes import (
    BOX_START,
    CODE_SPAN,
    split_line,
    strip_ansi,
    strip_box,
    strip_transport,
)

_CODE_SPAN = re.compile(CODE_SPAN)
# Lines of the head read to learn a gutter (the head is SNIFF_BYTES of the file).
LEARN_LINES = 2000
# Of the non-blank lines read: at least this share must carry the gutter ...
MIN_COVER = 0.8
# ... and at least this many (and this share of them) must be vLLM records or traceback frames
# once it is off,
MIN_RECORDS = 3
MIN_RECORD_SHARE = 0.3
# ... while at most this share are records as given (a normal log needs no gutter).
MAX_RECORDS_AS_GIVEN = 0.1
# A constant tag is a few distinct prefixes (one per pod or process), each seen more than once.
MAX_TAGS = 32
MAX_TAG_WORDS = 4

# `grep -n`: `N:` (a matching line) or `N-` (context); `cat -n` / `nl`: padded number and a tab;
# an editor's or a web viewer's line-number column copied with the text: the number and one space
# (`59 KeyError: …`, `57   File "…"` — what follows keeps its own indentation). The numbers must
# still rise down the paste and uncover a record (see _numbers). A Markdown blockquote in front
# (`> 59 KeyError: …`, an issue quoting a numbered paste) goes with it: the grammar would drop it.
_NUMBER = re.compile(r"^\s*(?:>[ \t]*)*(\d{1,9})(?:[:-]|\t| )")  # one way to split: linear
_NUMBER_POLARS = r"^\s*(?:>[ \t]*)*\d{1,9}(?:[:-]|\t| )"
# The first line of what Python prints for an exception, and its traceback's header.
_RECORD_TEXT = re.compile(
    r"^(?:Traceback \(most recent call last\)|(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)(?::|$))"
)
# How a record's first word looks: a process or rank prefix, a level, a glog / c10d / ISO logger's
# time, a traceback, an exception's name.
_RECORD_START = re.compile(
    r"^(?:[(\[]|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\b|[IWEF]\d{4} |\d{4}-\d\d-\d\d|Traceback \("
    r"|(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)(?::|$))"
)
_BOX_START = re.compile(BOX_START)
# A traceback's frame line, as Python indents it.
_FRAME = re.compile(r'^  File "')
# The first `k` words of a line and the one space after them (a frame's own indentation stays);
# words after the first may be padded (`0|vllm     | `).
_FIRST_WORD = re.compile(r"\S+ ")
_NEXT_WORD = re.compile(r"\s*\S+ ")


@dataclass(frozen=True)
class Gutter:
    """What to take off: one of the `prefixes` a line starts with, or its line number."""

    kind: str  # "indent", "numbers" or "tag"
    prefixes: tuple[str, ...] = ()

    def strip_line(self, line: str) -> str:
        if self.kind == "numbers":
            number = _NUMBER.match(line)
            return line[number.end() :] if number else line
        for prefix in self.prefixes:
            if line.startswith(prefix):
                return line[len(prefix) :]
        return line

    def strip(self, raw: pl.Series) -> pl.Series:
        """`strip_line` on every line of a batch, in Rust."""
        if self.kind == "numbers":
            return raw.str.replace(_NUMBER_POLARS, "")
        out = raw
        # Longest first: one pod's name may begin another's.
        for prefix in sorted(self.prefixes, key=len, reverse=True):
            out = (
                pl.DataFrame({"raw": out})
                .select(
                    pl.when(pl.col("raw").str.starts_with(prefix))
                    .then(pl.col("raw").str.slice(len(prefix)))
                    .otherwise(pl.col("raw"))
                )
                .to_series()
                .alias(raw.name)
            )
        return out

    def describe(self) -> str:
        if self.kind == "numbers":
            return "a line number before every line (grep -n / cat -n)"
        if self.kind == "indent":
            return f"every line indented by {len(self.prefixes[0])} whitespace characters"
        return f"a tag before every line ({', '.join(repr(p) for p in self.prefixes[:3])})"


def is_record(line: str) -> bool:
    """A line that opens a vLLM log record: a process, rank or logger prefix read by the grammar,
    or the header or exception line of a Python traceback — at the line's start (once a known
    transport is off): the grammar lets one word stand before vLLM's level (VLLM_LOGGING_PREFIX),
    which would make a tag cut one word short, or one too long, look right."""
    head = strip_transport(strip_ansi(line), relay=False)[0]
    # A terminal-UI pane's row: the grammar reads inside it.
    if not _RECORD_START.match(strip_box(head)):
        return False
    parts = split_line(line)
    if parts.level or parts.process or parts.pid is not None or parts.rank is not None or parts.logger:
        return True
    return bool(_RECORD_TEXT.match(parts.message))


def learn(lines: Sequence[str]) -> Gutter | None:
    """The gutter of a log whose head is `lines`, or None when it has none (the usual case)."""
    # A line quoted as Markdown inline code is read inside its backticks (as logframe does), so
    # its own prefix is never taken for a paste's tag.
    text = [_CODE_SPAN.sub(r"\1", line.rstrip("\r\n")) for line in lines[:LEARN_LINES]]
    text = [line for line in text if line.strip()]
    if not text:
        return None
    # A rising count before the lines is evidence enough on its own, even where the per-line
    # grammar already reads `N:` before a vLLM prefix (it cannot before a bare exception line).
    numbers = _numbers(text)
    if numbers is not None:
        return numbers
    if sum(1 for line in text if is_record(line)) > MAX_RECORDS_AS_GIVEN * len(text):
        return None
    if sum(1 for line in text if _BOX_START.match(line)) > len(text) // 2:
        return None  # a terminal-UI pane: its borders are the grammar's and the joiner's to read
    return _indent(text) or _tag(text)


def _enough(text: list[str], gutter: Gutter) -> bool:
    """The gutter is on most lines and, once off, makes records of enough of them."""
    carried = [gutter.strip_line(line) for line in text if gutter.strip_line(line) != line]
    if len(carried) < MIN_COVER * len(text):
        return False
    records = sum(1 for line in carried if is_record(line))
    # A pasted traceback is mostly frames: they count as structure, but only a record proves it.
    structured = records + sum(1 for line in carried if _FRAME.match(line))
    return records >= 1 and structured >= MIN_RECORDS and structured >= MIN_RECORD_SHARE * len(carried)


def _numbers(text: list[str]) -> Gutter | None:
    numbers = [int(m.group(1)) for m in map(_NUMBER.match, text) if m]
    if len(numbers) < 2 or len(numbers) < MIN_COVER * len(text):
        return None
    # Line numbers grow down the paste (a timestamp's year or an hour would repeat).
    rising = sum(1 for a, b in zip(numbers, numbers[1:], strict=False) if b > a)
    if rising < 0.9 * (len(numbers) - 1):
        return None
    gutter = Gutter("numbers")
    return gutter if any(is_record(gutter.strip_line(line)) for line in text) else None


def _indent(text: list[str]) -> Gutter | None:
    # Every line moved right by the same whitespace (textwrap.dedent's test): that is a paste's,
    # as soon as one line is a record once it is off (a run of frames alone is Python's own).
    common = _common_lead(text)
    if common:
        gutter = Gutter("indent", (common,))
        if any(is_record(line[len(common) :]) for line in text):
            return gutter
    # Most lines moved, a few not (a sentence above the paste): the indentation of the lines that
    # are records once it is off — a frame line is indented further by Python itself, so only
    # record lines tell how far the paste moved everything.
    leads = Counter(
        line[: len(line) - len(line.lstrip(" \t"))]
        for line in text
        if line[:1] in (" ", "\t") and is_record(line.lstrip(" \t"))
    )
    if not leads:
        return None
    lead, _ = leads.most_common(1)[0]
    gutter = Gutter("indent", (lead,))
    return gutter if _enough(text, gutter) else None


def _common_lead(text: list[str]) -> str:
    lead = text[0][: len(text[0]) - len(text[0].lstrip(" \t"))]
    for line in text[1:]:
        while lead and not line.startswith(lead):
            lead = lead[:-1]
        if not lead:
            break
    return lead


def _tag(text: list[str]) -> Gutter | None:
    # The number of words that makes the most records once off. On a tie the longer tag: vLLM's
    # logger prefix may itself carry one word (VLLM_LOGGING_PREFIX), so a tag one word short
    # still leaves records on lines with no process prefix, but only the whole tag does so on all.
    best: tuple[int, Gutter] | None = None
    for words in range(1, MAX_TAG_WORDS + 1):
        tags: Counter[str] = Counter()
        for line in text:
            head = _first_words(line, words)
            if head is not None and is_record(line[len(head) :]):
                tags[head] += 1
        kept = tuple(tag for tag, n in tags.most_common(MAX_TAGS) if n >= 2 or len(tags) == 1)
        records = sum(n for tag, n in tags.items() if tag in kept)
        if not kept or (best is not None and records < best[0]):
            continue
        gutter = Gutter("tag", kept)
        # One tag before every line is a tail's on its own (a short paste has few records).
        if _enough(text, gutter) or (len(kept) == 1 and all(line.startswith(kept[0]) for line in text)):
            best = (records, gutter)
    return best[1] if best else None


def _first_words(line: str, words: int) -> str | None:
    end = 0
    for index in range(words):
        word = (_NEXT_WORD if index else _FIRST_WORD).match(line, end)
        if word is None:
            return None
        end = word.end()
    return line[:end]
