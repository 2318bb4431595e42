"""Physical lines to logical lines: undo the transports that cut one log line into several.

Three transports break lines where the program did not:
  * CR-only line endings (an old Mac editor, a terminal capture): `\\r` alone ends a line, except
    where a progress bar (tqdm) redraws itself, which is one line of noise;
  * CRI log files (`/var/log/pods/…`): the kubelet cuts a line longer than 16 KiB into `P`
    (partial) records ended by an `F` record of the same stream;
  * terminal-UI boxes (rich panels, TUI panes): a line longer than the box wraps onto the next
    box row, cut at the box width or, word-wrapped, where the next word would not fit.

The joined line goes on one row of its group and the others are left blank, so every line keeps
its number in the file as given; which row is chosen keeps a traceback's shape: a frame's source
line sits right under its frame (the group's first row), anything else right above what follows it
(the last row: a headline above its traceback, a frame above its source line). CR-only files are
counted with `\\r` as the line break, as editors show them. A wrapped piece never starts a new
record: a line that opens with a logger or process prefix, a traceback header, a frame or an
exception name is not joined to the one before it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import polars as pl

from vllm_triage.ingest import prefixes

# Cheap test of a batch (Rust regex): only batches with something to undo go through Python.
_NEEDS_WORK = r"\r[^\r]|^\S+ (?:stdout|stderr) P |^\s*[│┃║]"
# What every line _NEEDS_WORK matches contains: a literal search, ~15× cheaper per line, that
# leaves the exact test to the few lines it passes (most batches have none).
_MAYBE_WORK = r"[\r│┃║]|std(?:out|err) P "
# A tqdm / vLLM progress bar: `50%|███ | 2/4 [00:03<00:03, 1.52s/it]`, `50% Completed | 2/4 [...]`.
_PROGRESS = re.compile(r"\d{1,3}%(?:\s*Completed)?\s*\||\|\s*\d+/\d+\s*\[|\d+/\d+ \[\d+:\d+|(?:it/s|s/it)\]")
_CRI = re.compile(r"^(?P<ts>\S+) (?P<stream>stdout|stderr) (?P<tag>[PF]) (?P<body>.*)$")
_BOX_ROW = re.compile(r"^(?P<lead>\s*)(?P<left>[│┃║]) (?P<inner>.*) (?P<right>[│┃║])\s*$")
_NEW_RECORD = re.compile(
    rf"^(?:\S+ "
    rf")?(?:{prefixes.LOGGER_HEAD})|^{prefixes.PROCESS_HEAD}|^{prefixes.RANK_HEAD}|^{prefixes.UVICORN_HEAD}"
    r"|^Traceback \(most recent call last\)|^File \"|^During handling of|^The above exception|^Process \w+:$"
    r"|^[\w.]*(?:Error|Exception|Warning|Exit|Interrupt)\b|^\S+\.py:\d+: \w*Warning"
)


def logical_lines(batches: Iterable[pl.Series]) -> Iterator[pl.Series]:
    """The batches of physical lines as logical lines (see the module docstring).

    A group that may go on past the end of a batch (an open `P` record, a box row) is held back
    and completed with the next batch, so a join never depends on where a chunk was cut.
    """
    joiner = Joiner()
    for raw in batches:
        joined = joiner.feed(raw)
        if joined is not None:
            yield joined
    rest = joiner.finish()
    if rest is not None:
        yield rest


class Joiner:
    """logical_lines one batch at a time: `feed` a batch, get what is complete (or None while a
    group is held back), `finish` at the end. `holding` says whether lines are held back, which a
    caller that reads some batches another way must know (they belong before its next batch)."""

    def __init__(self) -> None:
        self._carry: list[str] = []

    @property
    def holding(self) -> bool:
        return bool(self._carry)

    def feed(self, raw: pl.Series) -> pl.Series | None:
        if not self._carry and not _needs_work(raw):
            return raw
        lines = self._carry + split_carriage_returns(raw.to_list())
        cut = _open_tail(lines)
        self._carry = lines[cut:]
        return pl.Series("raw", join_wrapped(lines[:cut]), dtype=pl.String) if cut else None

    def finish(self) -> pl.Series | None:
        rest, self._carry = self._carry, []
        return pl.Series("raw", join_wrapped(rest), dtype=pl.String) if rest else None


# What a block of UTF-8 bytes holds when some line of it may need joining (a superset of
# _MAYBE_WORK, searched in the bytes before they are split into lines: no match, no work).
MAYBE_WORK_BYTES = (b"\r", "│".encode(), "┃".encode(), "║".encode(), b"stdout P ", b"stderr P ")


def may_need_work(data: bytes) -> bool:
    """False when no line of `data` can need logical_lines (each test is a C-speed byte search)."""
    return any(marker in data for marker in MAYBE_WORK_BYTES)


def _needs_work(raw: pl.Series) -> bool:
    maybe = raw.str.contains(_MAYBE_WORK)
    return bool(maybe.any()) and bool(raw.filter(maybe).str.contains(_NEEDS_WORK).any())


def split_carriage_returns(lines: list[str]) -> list[str]:
    """Lines with `\\r` breaks split into rows; a progress bar's redraws stay one row."""
    if not any("\r" in line.rstrip("\r") for line in lines):
        return lines
    out: list[str] = []
    for line in lines:
        body = line.rstrip("\r")
        if "\r" not in body:
            out.append(line)
            continue
        pieces = body.split("\r")
        row, last = pieces[0], pieces[0]
        for piece in pieces[1:]:
            if _redraw(last, piece):
                row += "\r" + piece
                last = piece if piece.strip() else last
                continue
            out.append(row)
            row, last = piece, piece
        out.append(row)
    return out


def _redraw(before: str, after: str) -> bool:
    """`after` overwrites `before` on the same terminal line: both are bars (or blank), one a bar."""
    bar_before, bar_after = bool(_PROGRESS.search(before)), bool(_PROGRESS.search(after))
    return (
        (bar_before or not before.strip()) and (bar_after or not after.strip()) and (bar_before or bar_after)
    )


def join_wrapped(lines: list[str]) -> list[str]:
    """CRI partial records and box-wrapped rows joined onto one row of their group (see `_place`)."""
    return _join_box(_join_cri(lines))


def _join_cri(lines: list[str]) -> list[str]:
    if not any(" P " in line for line in lines):
        return lines
    out = list(lines)
    groups: list[list[int]] = []
    open_group: dict[str, list[int]] = {}  # stream → rows of its records since its first `P`
    for i, line in enumerate(lines):
        record = _CRI.match(line)
        if not record:
            continue
        stream = record.group("stream")
        group = open_group.get(stream)
        if group is None and record.group("tag") == "P":
            group = open_group[stream] = []
            groups.append(group)
        if group is not None:
            group.append(i)
        if record.group("tag") == "F":
            open_group.pop(stream, None)
    for group in groups:
        first = _CRI.match(lines[group[0]])
        assert first is not None
        body = "".join(_CRI.match(lines[i]).group("body") for i in group)  # type: ignore[union-attr]
        joined = f"{first.group('ts')} {first.group('stream')} F {body}"
        _place(out, group, joined)
    return out


def _join_box(lines: list[str]) -> list[str]:
    if not any(line.lstrip()[:1] in ("│", "┃", "║") for line in lines):
        return lines
    out = list(lines)
    for run in _box_runs(lines):
        # A pane that cuts at its width fills rows to the border; only a box that never does
        # (rich's word-wrapping panels) is read as word-wrapped.
        hard = any(len(content) == width for _, content, width in run)
        k = 0
        while k < len(run):
            first, content, width = run[k]
            last, end = content, k + 1
            while end < len(run):
                piece = run[end][1]
                separator = _wrap_separator(last, piece, width, hard)
                if separator is None:
                    break
                content, last, end = content + separator + piece, piece, end + 1
            if end > k + 1:
                row = _BOX_ROW.match(lines[first])
                assert row is not None
                joined = f"{row.group('lead')}{row.group('left')} {content} {row.group('right')}"
                _place(out, [run[m][0] for m in range(k, end)], joined)
            k = end
    return out


def _box_runs(lines: list[str]) -> list[list[tuple[int, str, int]]]:
    """Consecutive box rows of one width: (row index, content without its padding, width)."""
    runs: list[list[tuple[int, str, int]]] = []
    current: list[tuple[int, str, int]] = []
    for i, line in enumerate(lines):
        row = _BOX_ROW.match(line)
        width = len(row.group("inner")) if row else -1
        if current and (width != current[-1][2] or current[-1][0] != i - 1):
            runs.append(current)
            current = []
        if row:
            current.append((i, row.group("inner").rstrip(), width))
    if current:
        runs.append(current)
    return runs


_FRAME = re.compile(r'^\s*File "[^"]*", line \d+')


def _place(out: list[str], rows: list[int], joined: str) -> None:
    """The joined line on one row of its group, the others blank. A traceback's source line (the
    indented line under a frame) goes on the first row, right under its frame; any other line on
    the last, right above what follows it (its traceback, its exception's next line)."""
    message = prefixes.strip_prefixes(joined)
    source_line = message[:1].isspace() and not _FRAME.match(message)
    anchor = rows[0] if source_line else rows[-1]
    for i in rows:
        out[i] = joined if i == anchor else ""


def _wrap_separator(last: str, piece: str, width: int, hard: bool) -> str | None:
    """How `piece` continues the box row `last` when the box wrapped the line there, else None."""
    if not last.strip() or not piece.strip() or _NEW_RECORD.match(piece.lstrip()):
        return None
    if len(last) >= width:
        return ""  # cut at the box width, mid-word
    if hard:
        # Cut right after a space: the padding hides it, so a row one short of the border is full.
        return " " if len(last) == width - 1 else None
    if piece[:1].isspace() or len(last) + 1 + len(piece.split(None, 1)[0]) <= width:
        return None  # the next word would have fitted: the line really ended here
    if len(last) < _WORD_WRAP_FILL * width:
        return None  # a wrapper leaves about a word's room; this row ended early (a long word follows)
    return " "  # word-wrapped: the space at the break was dropped


_WORD_WRAP_FILL = 0.8  # a word-wrapped row is at least this full
_MAX_HELD_BOX_ROWS = 4096  # a line wrapped over more box rows than this is cut there


def _open_tail(lines: list[str]) -> int:
    """Index from which the last lines may continue into the next batch (len(lines) if none)."""
    cut = len(lines)
    complete: set[str] = set()
    for i in range(len(lines) - 1, max(len(lines) - 4096, -1), -1):
        record = _CRI.match(lines[i])
        if not record:
            continue
        stream = record.group("stream")
        if record.group("tag") == "F":
            complete.add(stream)  # this stream's records before its last F are complete
        elif stream not in complete:
            cut = i
    # The last box row may continue in the next batch: hold back the whole line it belongs to.
    box_start = len(lines)
    if lines and _BOX_ROW.match(lines[-1]):
        box_start -= 1
        while box_start > max(len(lines) - _MAX_HELD_BOX_ROWS, 0) and _continues(
            lines[box_start - 1], lines[box_start]
        ):
            box_start -= 1
    return min(cut, box_start)


def _continues(before: str, after: str) -> bool:
    """`after` may be a wrapped piece of the box row `before` (word-wrapped or cut: the wider test)."""
    a, b = _BOX_ROW.match(before), _BOX_ROW.match(after)
    if not a or not b or len(a.group("inner")) != len(b.group("inner")):
        return False
    width = len(a.group("inner"))
    return (
        _wrap_separator(a.group("inner").rstrip(), b.group("inner").rstrip(), width, hard=False) is not None
    )
