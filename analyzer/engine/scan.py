"""Scan a log source chunk by chunk and keep only the rows the analysis needs.

For each chunk: split into lines (Rust), run the prefilter (one regex pass), parse and classify
only the lines it selects, and keep a window of full context around every trigger (an error,
a traceback, an exception line) so that blocks can be cut out later. Memory is bounded by the
chunk size plus the retained rows, which are capped per rule and per file.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import polars as pl

from analyzer.engine.matcher import CompiledRules, classify
from analyzer.errors import InputError
from analyzer.ingest.decode import CHUNK_BYTES, SNIFF_BYTES, check_text, decode_all, iter_text_chunks
from analyzer.ingest.sources import Source
from analyzer.logframe import lines_of, parse_lines

BACK_CONTEXT = 400  # a logged traceback can be long; its headline sits before the frames
FORWARD_CONTEXT = 80  # the exception line and torch's CUDA boilerplate follow the trigger
MAX_TRIGGERS = 400  # windows are cut around at most this many triggers per file
MAX_HITS_PER_RULE = 200  # e.g. thousands of 500 lines in a cascade: keep the first ones


@dataclass
class ScanResult:
    file: str
    frame: pl.DataFrame  # retained rows, LogFrame columns + marker/cls/exc/tb, sorted by line
    total_lines: int
    hit_counts: Counter = field(default_factory=Counter)  # rule id -> matches in the whole file
    json_lines: bool = False


def _is_json_lines(head_text: str) -> bool:
    lines = [ln for ln in head_text.splitlines()[:20] if ln.strip()]
    if not lines:
        return False
    jsonish = sum(1 for ln in lines if ln.lstrip().startswith("{") and ('"log"' in ln or '"message"' in ln))
    return jsonish >= max(1, len(lines) // 2)


def scan(source: Source, compiled: CompiledRules, chunk_bytes: int = CHUNK_BYTES) -> ScanResult:
    head = source.head(SNIFF_BYTES)
    encoding = check_text(head, source.name)
    json_lines = _is_json_lines(decode_all(head, encoding))
    retained: list[pl.DataFrame] = []
    hit_counts: Counter = Counter()
    triggers_left = MAX_TRIGGERS
    next_line = 1
    tail = pl.Series("raw", [], dtype=pl.String)  # last lines of the previous chunk, for back context
    forward_due = 0  # lines at the start of this chunk still owed to a window of the previous chunk
    try:
        stream = source.open()
    except OSError as exc:
        raise InputError("unreadable-path", f"cannot read {source.name}: {exc}") from exc
    with stream:
        try:
            for chunk in iter_text_chunks(stream, encoding, chunk_bytes):
                raw = lines_of(chunk)
                kept, used, forward_due = _scan_chunk(
                    raw, tail, next_line, source.name, compiled, json_lines, triggers_left, forward_due, hit_counts
                )
                triggers_left -= used
                retained.extend(kept)
                next_line += raw.len()
                tail = raw.tail(BACK_CONTEXT)
        except (EOFError, OSError) as exc:
            # A truncated .gz or archive member: say so instead of analysing half a file silently.
            raise InputError("corrupt-archive", f"{source.name}: compressed data is truncated or corrupt ({exc})") from exc
    frame = pl.concat(retained, how="vertical") if retained else _empty(compiled)
    frame = frame.unique(subset="line", keep="first").sort("line")
    return ScanResult(source.name, frame, next_line - 1, hit_counts, json_lines)


def _empty(compiled: CompiledRules) -> pl.DataFrame:
    return classify(parse_lines(pl.Series("raw", [], dtype=pl.String), "", 1), compiled)


def _scan_chunk(
    raw: pl.Series,
    tail: pl.Series,
    first_line: int,
    file: str,
    compiled: CompiledRules,
    json_lines: bool,
    triggers_left: int,
    forward_due: int,
    hit_counts: Counter,
) -> tuple[list[pl.DataFrame], int, int]:
    kept: list[pl.DataFrame] = []
    selected = raw.str.contains(compiled.prefilter).arg_true()
    if json_lines:
        # JSON-escaped text (\" and \u001b) defeats the prefilter; JSON logs are parsed in full.
        selected = pl.Series("idx", range(raw.len()), dtype=pl.UInt32)
    candidates = classify(parse_lines(raw.gather(selected), file, selected.cast(pl.Int64) + first_line, json_lines), compiled)
    interesting = candidates.filter(
        pl.col("marker").is_not_null() | pl.col("cls").is_not_null() | pl.col("exc") | pl.col("tb")
    )
    interesting = _cap_hits(interesting, hit_counts)
    kept.append(interesting)

    # Windows of full context around triggers (errors, consequences, tracebacks, exception lines).
    trigger_lines = (
        interesting.filter(pl.col("cls").is_not_null() | pl.col("exc") | pl.col("tb"))
        .get_column("line")
        .head(max(triggers_left, 0))
    )
    used = trigger_lines.len()
    n = raw.len()
    wanted: set[int] = set(range(min(forward_due, n)))  # offsets into this chunk
    back_wanted: set[int] = set()  # offsets into the tail (negative positions)
    next_forward_due = 0
    for line in trigger_lines.to_list():
        offset = line - first_line
        start, stop = offset - BACK_CONTEXT, offset + FORWARD_CONTEXT
        wanted.update(range(max(start, 0), min(stop, n)))
        if start < 0:
            back_wanted.update(range(max(start, -tail.len()), 0))
        if stop > n:
            next_forward_due = max(next_forward_due, stop - n)
    if wanted:
        idx = pl.Series("idx", sorted(wanted), dtype=pl.UInt32)
        kept.append(classify(parse_lines(raw.gather(idx), file, idx.cast(pl.Int64) + first_line, json_lines), compiled))
    if back_wanted and tail.len():
        offsets = sorted(back_wanted)
        idx = pl.Series("idx", [tail.len() + o for o in offsets], dtype=pl.UInt32)
        lines = pl.Series("line", [first_line + o for o in offsets], dtype=pl.Int64)
        kept.append(classify(parse_lines(tail.gather(idx), file, lines, json_lines), compiled))
    return kept, used, next_forward_due


def _cap_hits(frame: pl.DataFrame, hit_counts: Counter) -> pl.DataFrame:
    """Keep at most MAX_HITS_PER_RULE rows per rule id over the whole file (counts stay exact)."""
    if frame.is_empty():
        return frame
    key = pl.coalesce(pl.col("cls"), pl.col("marker"))
    frame = frame.with_columns(_key=key)
    counts = frame.group_by("_key").len()
    keep_mask = pl.lit(True)
    budgets = {}
    for row in counts.iter_rows():
        rule_id, count = row
        if rule_id is None:
            continue
        budgets[rule_id] = max(MAX_HITS_PER_RULE - hit_counts[rule_id], 0)
        hit_counts[rule_id] += count
    if budgets:
        rank = pl.int_range(pl.len()).over("_key")
        budget = pl.col("_key").replace_strict(budgets, default=None, return_dtype=pl.Int64)
        keep_mask = pl.col("_key").is_null() | (rank < budget) | pl.col("exc") | pl.col("tb")
    return frame.filter(keep_mask).drop("_key")
