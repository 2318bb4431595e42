"""Scan a log source chunk by chunk and keep only the rows the analysis needs.

For each chunk: split into lines (Rust), run the prefilter (one regex pass), parse and classify
only the lines it selects, and keep a window of full context around every trigger (an error,
a traceback, an exception line) so that blocks can be cut out later. Rules that need no more
lines (a milestone already seen, a rule whose hit budget is spent) leave the prefilter, so the
busy serving lines of a long log are not parsed again and again. Memory is bounded by the chunk
size plus the retained rows, which are capped per rule and per file.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import BinaryIO, TypeVar

import polars as pl

from vllm_triage.core.errors import InputError, RuleError, clip
from vllm_triage.engine import blocks as hits
from vllm_triage.engine.blocks import Fallback, HitLines
from vllm_triage.engine.matcher import CompiledRules, MarkerLiteral, classify, unanchor
from vllm_triage.ingest import gutter
from vllm_triage.ingest.decode import (
    CHUNK_BYTES,
    SNIFF_BYTES,
    check_text,
    decode_all,
    iter_line_batches_cut,
    iter_utf8_blocks,
    utf8_lines,
)
from vllm_triage.ingest.limits import LIMITS
from vllm_triage.ingest.logical import Joiner
from vllm_triage.ingest.sources import Source
from vllm_triage.logframe import parse_lines

BACK_CONTEXT = 400  # a logged traceback can be long; its headline sits before the frames
END_CONTEXT = 200  # the last lines of the log, always kept (see scan)
FORWARD_CONTEXT = 80  # the exception line and torch's CUDA boilerplate follow the trigger
MAX_TRIGGERS = 400  # windows are cut around at most this many triggers per file
MAX_HITS_PER_RULE = 200  # e.g. thousands of 500 lines in a cascade: keep the first ones
MAX_STRUCTURAL_ROWS = 5000  # exception/traceback lines no rule knows, per file
MAX_CUT_LINES_LISTED = 20  # over-long lines named in the result (all are counted)


@dataclass(frozen=True)
class LineCuts:
    """The lines of one file cut to --max-line: how many, and the first of them."""

    file: str
    cut_lines: list[int]
    cut_count: int


@dataclass
class ScanResult:
    file: str
    frame: pl.DataFrame  # retained rows, LogFrame columns + marker/cls/exc/tb, sorted by line
    total_lines: int
    hit_counts: Counter = field(default_factory=Counter)  # rule id -> matches (exact below the cap)
    json_lines: bool = False
    # Lines longer than --max-line, cut to it before matching: how many, and the first ones.
    cut_lines: list[int] = field(default_factory=list)
    cut_count: int = 0


def _is_json_lines(head_text: str) -> bool:
    lines = [ln for ln in head_text.splitlines()[:20] if ln.strip()]
    if not lines:
        return False
    # The keys logframe.parse_lines unwraps: docker's "log", structured loggers' "message"/"msg".
    jsonish = sum(
        1
        for ln in lines
        if ln.lstrip().startswith("{") and ('"log"' in ln or '"message"' in ln or '"msg"' in ln)
    )
    return jsonish >= max(1, len(lines) // 2)


@dataclass
class _State:
    compiled: CompiledRules
    file: str
    json_lines: bool
    hit_counts: Counter = field(default_factory=Counter)
    done: set[str] = field(default_factory=set)  # rule ids that left the prefilter
    triggers_left: int = MAX_TRIGGERS
    structural_kept: int = 0
    ready_seen: bool = False
    forward_due: int = 0  # lines at the start of the next chunk owed to a window
    tail: pl.Series = field(default_factory=lambda: pl.Series("raw", [], dtype=pl.String))
    retained: list[pl.DataFrame] = field(default_factory=list)
    cut_lines: list[int] = field(default_factory=list)
    cut_count: int = 0
    gutter: gutter.Gutter | None = None  # what a paste put before every line (ingest/gutter.py)


def scan(
    source: Source, compiled: CompiledRules, chunk_bytes: int = CHUNK_BYTES, blocks: bool = True
) -> ScanResult:
    """`blocks=False` keeps every chunk on the per-line path (the equality tests compare the two)."""
    head = source.head(SNIFF_BYTES)
    encoding = check_text(head, source.name)
    head_text = decode_all(head, encoding)
    state = _State(compiled, source.name, _is_json_lines(head_text))
    if not state.json_lines:
        state.gutter = gutter.learn(head_text.splitlines())
    next_line = 1
    try:
        stream = source.open()
    except OSError as exc:
        raise InputError("unreadable-path", f"cannot read {source.name}: {exc}") from exc
    with stream:
        try:
            for raw in _prefetch(_chunks(stream, encoding, chunk_bytes, state, blocks)):
                _scan_chunk(raw, next_line, state)
                next_line += raw.len()
                # The back context of a trigger may reach over several small chunks.
                recent = raw.tail(BACK_CONTEXT)
                state.tail = (
                    recent
                    if raw.len() >= BACK_CONTEXT
                    else pl.concat([state.tail, recent], rechunk=False).tail(BACK_CONTEXT)
                )
        except pl.exceptions.ComputeError as exc:
            if "regex" not in str(exc):
                raise
            # Never the combined pattern in the message (it is megabytes with a big rule set).
            reason = next((ln for ln in str(exc).splitlines() if ln.startswith("error:")), "invalid pattern")
            raise RuleError(
                f"a rule pattern failed in polars' regex engine ({clip(reason)}); "
                "run `vllm-triage rules check --rules DIR`"
            ) from None
        except (EOFError, OSError, zlib.error) as exc:
            # A truncated .gz or archive member: say so instead of analysing half a file silently.
            raise InputError(
                "corrupt-archive", f"{source.name}: compressed data is truncated or corrupt ({exc})"
            ) from exc
    if state.tail.len():
        # The end of the log is where a hang or a silent death shows: its last lines are kept
        # whole, so "the last milestone line printed" does not depend on where errors were.
        end = state.tail.tail(END_CONTEXT)
        first = next_line - end.len()
        state.retained.append(_parse(end, pl.Series("line", range(first, next_line), dtype=pl.Int64), state))
    if state.retained:
        frame = pl.concat(state.retained, how="vertical").unique(subset="line", keep="first").sort("line")
    else:
        frame = classify(parse_lines(pl.Series("raw", [], dtype=pl.String), source.name, 1), compiled)
    return ScanResult(
        source.name,
        frame,
        next_line - 1,
        state.hit_counts,
        state.json_lines,
        state.cut_lines,
        state.cut_count,
    )


def _chunks(
    stream: BinaryIO, encoding: str, chunk_bytes: int, state: _State, blocks: bool
) -> Iterator[pl.Series | HitLines]:
    """The chunks to scan: logical lines (ingest/logical.py) as a Series, or a HitLines (engine/
    blocks.py) for a UTF-8 chunk whose lines need no joining, its gate-hit blocks already found
    (this runs in the reader thread: the gate is of the rules not done when the chunk was read,
    a superset of the current one, which only over-selects)."""
    joiner = Joiner()
    physical = 1  # --max-line cuts are named by physical line (logical_lines may split CR lines)
    limit = LIMITS.max_line
    pairs: Iterator[HitLines | tuple[pl.Series, list[int]]]
    if (
        encoding not in ("utf-8", "utf-8-sig")
        or state.json_lines
        or state.gutter is not None  # a paste: lines are re-cut before any search
        or not blocks
        or not hits.available()
    ):
        pairs = iter_line_batches_cut(stream, encoding, chunk_bytes)
    else:
        pairs = _utf8_chunks(stream, chunk_bytes, limit, joiner, state)
    for item in pairs:
        if isinstance(item, HitLines):
            physical += item.len()
            yield item
            continue
        raw, cuts = item
        if cuts:
            state.cut_count += len(cuts)
            room = MAX_CUT_LINES_LISTED - len(state.cut_lines)
            state.cut_lines.extend(physical + offset for offset in cuts[: max(room, 0)])
        physical += raw.len()
        joined = joiner.feed(raw)
        if joined is not None:
            yield joined if state.gutter is None else state.gutter.strip(joined)
    rest = joiner.finish()
    if rest is not None:
        yield rest if state.gutter is None else state.gutter.strip(rest)


# A gate of fewer rules is compiled as soon as rules finish, up to EAGER_COMPILES times, then at
# most every RECOMPILE_CHUNKS chunks (a compile costs ~50 ms; a stale gate only over-selects).
EAGER_COMPILES = 6
RECOMPILE_CHUNKS = 8


def _utf8_chunks(
    stream: BinaryIO, chunk_bytes: int, limit: int, joiner: Joiner, state: _State
) -> Iterator[HitLines | tuple[pl.Series, list[int]]]:
    database: object | None = None
    scratch: object | None = None
    markers: tuple[MarkerLiteral, ...] = ()
    gate_done: frozenset[str] = frozenset()
    age = compiles = 0
    for data, first_cut in iter_utf8_blocks(stream, chunk_bytes, limit):
        if (
            not first_cut
            and not joiner.holding
            and (database is not None or len(data) >= hits.BLOCK_MIN_BYTES)
        ):
            done = frozenset(state.done)
            if database is None or (
                done != gate_done and (compiles < EAGER_COMPILES or age >= RECOMPILE_CHUNKS)
            ):
                gate = state.compiled.block_gate(done)
                database, gate_done, age = (hits.database_of(gate) if gate else None), done, 0
                markers = gate.markers if gate else ()
                scratch = hits.scratch_for(database) if database is not None else None
                compiles += 1
            age += 1
            if database is not None:
                try:
                    yield HitLines.of(data, database, scratch, limit, markers)
                    continue
                except Fallback:
                    pass
        yield utf8_lines(data, first_cut, limit)


def _parse(raw: pl.Series, lines: pl.Series, state: _State) -> pl.DataFrame:
    n = raw.len()
    if n < PARALLEL_MIN_ROWS:
        return classify(parse_lines(raw, state.file, lines, state.json_lines), state.compiled)
    # Rows parse independently (tests/triage/test_triage_scan_equivalence.py): two halves on both
    # cores (polars releases the GIL), e.g. the thousands of client-error lines of a busy chunk.
    half = n // 2
    parts = _POOL.map(
        lambda part: classify(
            parse_lines(raw.slice(*part), state.file, lines.slice(*part), state.json_lines), state.compiled
        ),
        ((0, half), (half, n - half)),
    )
    return pl.concat(list(parts), how="vertical")


def _scan_chunk(raw: pl.Series | HitLines, first_line: int, state: _State) -> None:
    n = raw.len()
    if state.json_lines:
        # JSON-escaped text (\" and \u001b) defeats the prefilter; JSON logs are parsed in full.
        selected = pl.Series("idx", range(n), dtype=pl.UInt32)
    else:
        done = frozenset(state.done)
        # Literal first: one multi-literal pass over every line (of the blocks that hit, for a
        # HitLines), the full patterns only on the lines it passes (a few percent of a serving log).
        if isinstance(raw, HitLines):
            gated = _contains(raw.hit_lines, state.compiled.gate(done))
            maybe, picked = raw.hit_offsets.filter(gated), raw.hit_lines.filter(gated)
            # Milestones are looked for only in lines that hold a gate literal (see HitLines).
            with_literal = raw.literal_hit.filter(gated)
            marker_lines, marker_offsets = picked.filter(with_literal), maybe.filter(with_literal)
        else:
            maybe = _contains(raw, state.compiled.gate(done)).arg_true()
            picked = raw.gather(maybe)
            marker_lines, marker_offsets = picked, maybe
        keep = picked.str.contains(state.compiled.prefilter_without(done))
        spent = state.compiled.spent(done)
        if spent is not None and keep.any():
            # Only a spent rule matches: its row would be dropped over the budget (see spent).
            over = picked.str.contains(spent[0]) & ~picked.str.contains(spent[1] or "$^")
            keep = keep & ~over
        selected = maybe.filter(keep)
        if state.compiled.noise_filter and selected.len():
            is_noise = picked.filter(keep).str.contains(state.compiled.noise_filter)
            selected = selected.filter(~is_noise)
        firsts = _first_marker_lines(marker_lines, marker_offsets, state, done)
        if isinstance(raw, HitLines):
            firsts = pl.concat([firsts, _exact_marker_lines(raw, state, done)])
        selected = pl.concat([selected, firsts]).unique().sort()
    if selected.is_empty() and state.forward_due == 0:
        return  # the common case deep in a serving log: nothing to parse in this chunk
    candidates = _parse(raw.gather(selected), selected.cast(pl.Int64) + first_line, state)
    interesting = candidates.filter(
        pl.col("marker").is_not_null() | pl.col("cls").is_not_null() | pl.col("exc") | pl.col("tb")
    )
    interesting = _cap_hits(interesting, state)
    state.retained.append(interesting)

    # Windows of full context around triggers: errors, consequences, tracebacks, exception lines.
    noise_ids = [r.id for r in state.compiled.classifiers if r.kind == "noise"]
    is_trigger = (pl.col("cls").is_not_null() & ~pl.col("cls").is_in(noise_ids)) | (
        (pl.col("exc") | pl.col("tb")) & (pl.col("cls").is_null() | ~pl.col("cls").is_in(noise_ids))
    )
    trigger_lines = (
        interesting.filter(is_trigger).get_column("line").head(max(state.triggers_left, 0)).to_list()
    )
    state.triggers_left -= len(trigger_lines)
    wanted: set[int] = set(range(min(state.forward_due, n)))  # offsets into this chunk
    back_wanted: set[int] = set()  # offsets before this chunk (into the tail of earlier chunks)
    state.forward_due = max(state.forward_due - n, 0)  # a window longer than this chunk goes on
    for line in trigger_lines:
        offset = line - first_line
        start, stop = offset - BACK_CONTEXT, offset + FORWARD_CONTEXT
        wanted.update(range(max(start, 0), min(stop, n)))
        if start < 0:
            back_wanted.update(range(max(start, -state.tail.len()), 0))
        if stop > n:
            state.forward_due = max(state.forward_due, stop - n)
    if wanted:
        idx = pl.Series("idx", sorted(wanted), dtype=pl.UInt32)
        state.retained.append(_parse(raw.gather(idx), idx.cast(pl.Int64) + first_line, state))
    if back_wanted and state.tail.len():
        offsets = sorted(back_wanted)
        idx = pl.Series("idx", [state.tail.len() + o for o in offsets], dtype=pl.UInt32)
        lines = pl.Series("line", [first_line + o for o in offsets], dtype=pl.Int64)
        state.retained.append(_parse(state.tail.gather(idx), lines, state))


_T = TypeVar("_T")
_POOL = ThreadPoolExecutor(max_workers=2)
_READER = ThreadPoolExecutor(max_workers=1)


def _prefetch(batches: Iterable[_T]) -> Iterator[_T]:
    """Read and split the next chunk (in Rust, GIL released) while this one is matched."""
    iterator = iter(batches)
    pending = _READER.submit(next, iterator, None)
    while True:
        batch = pending.result()
        if batch is None:
            return
        pending = _READER.submit(next, iterator, None)
        yield batch


PARALLEL_MIN_LINES = 50_000
PARALLEL_MIN_ROWS = 2_000  # rows to parse and classify: below this one thread is as fast


def _contains(raw: pl.Series, pattern: str) -> pl.Series:
    """str.contains over both cores: polars releases the GIL, so two halves run in parallel."""
    n = raw.len()
    if n < PARALLEL_MIN_LINES:
        return raw.str.contains(pattern)
    half = n // 2
    first, second = _POOL.map(lambda part: part.str.contains(pattern), (raw.slice(0, half), raw.slice(half)))
    both: pl.Series = pl.concat([first, second])
    return both


def _first_marker_lines(
    picked: pl.Series, offsets: pl.Series, state: _State, done: frozenset[str]
) -> pl.Series:
    """Offsets of the first line of each milestone not seen yet, among the lines the literal gate
    passed (`picked`, at `offsets` in the chunk): a serving log repeats its stats and access lines
    millions of times, one is enough."""
    wanted = state.compiled.markers_wanted(done)
    if not wanted or picked.is_empty():
        return pl.Series("idx", [], dtype=pl.UInt32)
    hits = picked.str.contains(state.compiled.marker_union(done)).arg_true()
    if hits.is_empty():
        return pl.Series("idx", [], dtype=pl.UInt32)
    candidates = picked.gather(hits)
    firsts = []
    for rule in wanted:
        matches = candidates.str.contains(unanchor(rule.pattern)).arg_true()
        firsts.extend(offsets.gather(hits.gather(matches.head(5))).to_list())
    return pl.Series("idx", firsts, dtype=pl.UInt32)


def _exact_marker_lines(raw: HitLines, state: _State, done: frozenset[str]) -> pl.Series:
    """Offsets that make a chunk's milestones what the per-line path finds (its first 5 lines
    matching each milestone wanted, the first of them that classifies as it being the one kept).

    The gate reports only the first line holding each milestone literal (BlockGate.markers). The
    earliest of those, F, is no later than any line the milestone matches (each holds one of its
    literals); when F classifies as the milestone it is the one the per-line path keeps. Else
    the milestone's first lines are searched for in the whole chunk, as the per-line path does."""
    wanted = [r for r in state.compiled.markers_wanted(done) if r.id in raw.marker_firsts]
    if not wanted:
        return pl.Series("idx", [], dtype=pl.UInt32)
    first_of = {r.id: min(raw.marker_firsts[r.id]) for r in wanted}
    probe = pl.Series("idx", sorted(set(first_of.values())), dtype=pl.UInt32)
    classified = _parse(raw.gather(probe), probe.cast(pl.Int64), state)
    marker_at = dict(classified.select("line", "marker").iter_rows())
    extra: list[int] = []
    for rule in wanted:
        first = first_of[rule.id]
        if marker_at.get(first) == rule.id:
            extra.append(first)
            continue
        matches = raw.all_lines().str.contains(unanchor(rule.pattern)).arg_true()
        extra.extend(matches.head(5).to_list())
    return pl.Series("idx", extra, dtype=pl.UInt32)


def _cap_hits(frame: pl.DataFrame, state: _State) -> pl.DataFrame:
    """Keep at most MAX_HITS_PER_RULE rows per classified rule and the first row of each marker.

    Rules that reach their budget, and markers once seen, leave the prefilter for the rest of
    the file (counts below the cap stay exact).
    """
    if frame.is_empty():
        return frame
    rules = state.compiled.ruleset.by_id()
    ready_ids = [r.id for r in state.compiled.markers if r.ready]
    stop_ids = [r.id for r in state.compiled.markers if r.shutdown]
    if not state.ready_seen:
        ready_rows = frame.filter(pl.col("marker").is_in(ready_ids))
        if not ready_rows.is_empty():
            # Milestones after the server is up (a restart) change nothing; dropping them here, not
            # only from later chunks, keeps the result independent of where chunks are cut.
            ready_line = ready_rows.get_column("line").min()
            frame = frame.filter(
                pl.col("marker").is_null()
                | pl.col("marker").is_in(stop_ids)
                | (pl.col("line") <= ready_line)
                | pl.col("cls").is_not_null()
                | pl.col("exc")
                | pl.col("tb")
            )
            state.ready_seen = True
    budgets: dict[str, int] = {}
    for column in ("cls", "marker"):
        for rule_id, count in frame.group_by(column).len().iter_rows():
            if rule_id is None:
                continue
            rule = rules[rule_id]
            limit = 1 if rule.kind == "marker" and not rule.shutdown else MAX_HITS_PER_RULE
            budgets[rule_id] = max(limit - state.hit_counts[rule_id], 0)
            state.hit_counts[rule_id] += count
            if state.hit_counts[rule_id] >= limit:
                state.done.add(rule_id)
            if rule.ready:
                # Once the server is up, later start-up milestones (a restart) change nothing.
                state.done.update(r.id for r in state.compiled.markers if not r.shutdown)
    noise_ids = [r.id for r in state.compiled.classifiers if r.kind == "noise"]

    def within_budget(column: str) -> pl.Expr:
        rank = pl.int_range(pl.len()).over(column)
        budget = pl.col(column).replace_strict(budgets, default=0, return_dtype=pl.Int64)
        return pl.col(column).is_not_null() & (rank < budget)

    # A classified exception line goes by its rule's budget (a day of serving can log one
    # per-request ValueError tens of thousands of times); unclassified ones are structural.
    structural = (pl.col("exc") | pl.col("tb")) & pl.col("cls").is_null()
    # Generic exception lines are capped too (a log that repeats one exception forever).
    structural = structural & (pl.int_range(pl.len()) + state.structural_kept < MAX_STRUCTURAL_ROWS)
    keep = (within_budget("cls") & ~pl.col("cls").is_in(noise_ids)) | within_budget("marker") | structural
    kept = frame.filter(keep)
    state.structural_kept += kept.filter(pl.col("cls").is_null() & (pl.col("exc") | pl.col("tb"))).height
    return kept
