"""Cut an error block out of interleaved multi-process output, and read its traceback frames.

A block is the run of lines one process printed for one failure: the logged headline
(`logger.exception` prints the message, then the traceback, every line with the same
`LEVEL mm-dd hh:mm:ss [file:line]` prefix), the `Traceback` header, the frames, the exception
line and torch's CUDA boilerplate after it. Lines of other processes interleaved with it are
skipped, not treated as the end of the block.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from vllm_triage.analysis.model import Row

MAX_BACK = 400
MAX_FORWARD_CHAIN = 400
FRAME_LINE = re.compile(r'^\s*File "[^"]*", line \d+, in (?P<func>[\w<>.]+)')
_CHAIN = re.compile(r"^(?:During handling of the above exception|The above exception was the direct cause)")
_CARETS = re.compile(r"^\s*[\^~]+\s*$")


@dataclass
class Block:
    start: int
    end: int
    rows: list[Row]
    headline: Row | None  # the logged message just before the Traceback header, if any


def same_record(a: Row, b: Row) -> bool:
    """Two lines of one logger call share level, timestamp and source location."""
    return a.source is not None and a.source == b.source and a.level == b.level and a.vllm_ts == b.vllm_ts


def is_chain_separator(message: str) -> bool:
    """Python's line between the tracebacks of a chained exception: structure, never an error."""
    return bool(_CHAIN.match(message.strip()))


def is_traceback_part(row: Row) -> bool:
    message = row.message
    return (
        row.tb
        or row.exc
        or message == ""
        or message[:1] in (" ", "\t")
        or bool(_CARETS.match(message))
        or bool(_CHAIN.match(message))
        or bool(FRAME_LINE.match(message))  # a frame whose indentation was stripped
    )


def in_traceback(index: StreamIndex, row: Row) -> bool:
    """`is_traceback_part`, plus a frame's source line printed without its indentation (Ray and
    some log shippers strip leading blanks from every line): Python prints the source line right
    under its `File "…", line N, in f` line, so the line under a frame line is its code."""
    if is_traceback_part(row):
        return True
    above = next(iter(index.neighbours(row, -1, 1)), None)
    return above is not None and bool(FRAME_LINE.match(above.message))


class StreamIndex:
    """Rows by line number, and each stream's rows in order, for walking a block."""

    def __init__(self, rows: list[Row]) -> None:
        self.rows = rows
        self.position = {row.line: i for i, row in enumerate(rows)}

    def neighbours(self, row: Row, step: int, limit: int) -> Iterator[Row]:
        """Rows of the same stream before (step=-1) or after (step=+1) `row`, stopping at a gap."""
        i = self.position[row.line]
        last_line = row.line
        taken = 0
        while taken < limit:
            i += step
            if i < 0 or i >= len(self.rows):
                return
            candidate = self.rows[i]
            if abs(candidate.line - last_line) > 1 and not self._contiguous(last_line, candidate.line):
                return  # rows in between were not kept: the context window ended
            last_line = candidate.line
            if candidate.stream != row.stream:
                continue  # another process interleaved here
            taken += 1
            yield candidate

    def _contiguous(self, a: int, b: int) -> bool:
        lo, hi = min(a, b), max(a, b)
        return all(line in self.position for line in range(lo + 1, hi))


def block_around(index: StreamIndex, row: Row) -> Block:
    start_row, headline = row, None
    previous: Row | None = None
    for candidate in index.neighbours(row, -1, MAX_BACK):
        if same_record(candidate, row) or in_traceback(index, candidate):
            start_row = candidate
            previous = candidate
            continue
        # The logged message right before a Traceback header is the block's headline.
        if (
            previous is not None
            and previous.tb
            and candidate.level in ("ERROR", "CRITICAL", "WARNING")
            and opens_traceback(candidate, previous)
        ):
            start_row = headline = candidate
        break
    end_row = _block_end(index, row)
    first, last = index.position[start_row.line], index.position[end_row.line]
    rows = [r for r in index.rows[first : last + 1] if r.stream == row.stream]
    return Block(start_row.line, end_row.line, rows, headline)


def _block_end(index: StreamIndex, row: Row) -> Row:
    """Walk forward through the rest of the record, torch's boilerplate and chained tracebacks
    ("During handling of the above exception…"), stopping at anything else."""
    end_row = row
    after_chain = False
    # Python's logging prints a record's exc_info under its message with no prefix (only vLLM's
    # own formatter prefixes every line): `… kserve ERROR [__main__.py:…] Failed to start model
    # server: …` then a bare `Traceback …`. That traceback is the record's, so the block goes on.
    exc_info = False
    following = list(index.neighbours(row, +1, MAX_FORWARD_CHAIN))
    for i, candidate in enumerate(following):
        if _CHAIN.match(candidate.message):
            after_chain, end_row = True, candidate
            continue
        if candidate.tb:
            if after_chain or same_record(candidate, row):
                after_chain, end_row = False, candidate
                continue
            if end_row is row and _opens_exc_info(row, candidate):
                exc_info, end_row = True, candidate
                continue
            break
        if candidate.message == "":
            nxt = following[i + 1] if i + 1 < len(following) else None
            if same_record(candidate, row) or (
                nxt is not None and (_CHAIN.match(nxt.message) or nxt.tb and after_chain)
            ):
                continue
            break
        unprefixed = (row.source is None or exc_info) and candidate.source is None
        if same_record(candidate, row) or (unprefixed and (is_traceback_part(candidate) or end_row is row)):
            end_row = candidate
            continue
        if unprefixed and end_row.exc and not candidate.exc and not candidate.tb:
            end_row = candidate  # a continuation of the exception message (torch's CUDA boilerplate)
            continue
        break
    return end_row


def _opens_exc_info(row: Row, header: Row) -> bool:
    """`header`, a bare Traceback line right under the failing-level record `row`, is its exc_info."""
    return row.source is not None and header.source is None and row.level in ("ERROR", "CRITICAL")


def headline_of(index: StreamIndex, row: Row) -> Row | None:
    """The logged message that opened the traceback `row` belongs to (walking back in-stream)."""
    previous = row
    for candidate in index.neighbours(row, -1, MAX_BACK):
        if in_traceback(index, candidate):
            previous = candidate
            continue
        if previous.tb and opens_traceback(candidate, previous):
            return candidate
        return None
    return None


def opens_traceback(candidate: Row, header: Row) -> bool:
    """Whether `candidate`, the line before a `Traceback` header, is the message that printed it.

    `logger.exception` / `logger.error(exc_info=True)` print the message and the traceback as one
    record (one prefix on every line); Python itself prints a bare traceback with no prefix (a
    CLI failing before logging is set up, a script's uncaught exception). A prefixed INFO/DEBUG
    record before a bare traceback is the last thing logged before the crash, not its headline;
    so is a prefixed WARNING: a warning is logged and the code goes on (`Failed to import from
    vllm._C with ImportError(…)` is caught and the import continues), and the crash it may lead to
    is a separate, uncaught exception.
    """
    if candidate.source is None or header.source is not None:
        return True
    return candidate.level in ("ERROR", "CRITICAL")


def frames_above(index: StreamIndex, row: Row) -> list[str]:
    """Function names of the traceback that `row` ends (walking back in-stream), outermost first."""
    found = []
    for candidate in index.neighbours(row, -1, MAX_BACK):
        if not in_traceback(index, candidate):
            break
        match = FRAME_LINE.match(candidate.message)
        if match:
            found.append(match.group("func"))
    return found[::-1]


def next_in_stream(index: StreamIndex, row: Row) -> Row | None:
    for candidate in index.neighbours(row, +1, 1):
        return candidate
    return None


FOLLOWING_TRACEBACK_LINES = 12


def frames_of_following_traceback(index: StreamIndex, block: Block) -> list[str]:
    """The frames of the traceback the same process prints right after a one-line error.

    vLLM often logs the cause on its own line and then the traceback of the exception that
    unwound start-up (`linear.py: Failed to create … weights: CUDA out of memory`, then
    `core.py: EngineCore failed to start.` + traceback): that traceback is the call path of the
    same failure, so its frames place it.
    """
    last = block.rows[-1] if block.rows else None
    if last is None or last.line not in index.position:
        return []
    found: list[str] = []
    seen_header = False
    for candidate in index.neighbours(last, +1, FOLLOWING_TRACEBACK_LINES + MAX_BACK):
        if not seen_header:
            if candidate.tb:
                seen_header = True
            elif candidate.line - last.line > FOLLOWING_TRACEBACK_LINES:
                return []
            continue
        if candidate.exc:
            break
        if FRAME_LINE.match(candidate.message):
            found.append(candidate.message)  # the whole line: callpath matches function and file
        elif not is_traceback_part(candidate):
            break
    return found
