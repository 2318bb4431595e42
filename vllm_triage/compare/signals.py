"""Runtime signals a series needs and a triage does not: the periodic stats lines (prefix cache
hit rate, requests running), the requests the server answered, and Prometheus cache metrics when
a bundle carries a /metrics dump.

Why here and not in parsers/: these are read only to judge a series (did prefix caching produce
hits once enabled, was concurrency actually reached). The log is streamed in chunks with bytes
regexes (linear, literal-prefixed patterns), so a multi-GB log costs one pass and flat memory.

Sample stats lines (vllm-anatomy §3.2):
    Engine 000: Avg prompt throughput: 4.2 tokens/s, …, GPU KV cache usage: 1.2%, Prefix cache hit rate: 37.5%
    Avg prompt throughput: … Pending: 0 reqs, GPU KV cache usage: 0.4%, CPU KV cache usage: 0.0%.
    Prefix cache hit rate: GPU: 12.50%, CPU: 0.00%
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from vllm_triage.core.errors import InputError
from vllm_triage.core.roles import Role
from vllm_triage.ingest.decode import SNIFF_BYTES, check_text, decode_all, iter_line_chunks
from vllm_triage.ingest.sources import Source

CHUNK_BYTES = 16 * 1024 * 1024
WINDOW_BYTES = 1024 * 1024  # the span each pattern's pass reads while it is in the CPU cache
METRICS_MAX_BYTES = 16 * 1024 * 1024

_STATS_LITERAL = b"Avg prompt throughput: "
# Capital P: "External prefix cache hit rate" is a connector's cache (LMCache …), not vLLM's own.
_HIT_RATE = re.compile(rb"Prefix cache hit rate: (?:GPU: )?([\d.]+)%")
_RUNNING = re.compile(rb"Running: (\d+) reqs")
_ACCESS = re.compile(rb'"POST /v1/(?:chat/)?completions HTTP/[\d.]+" (\d{3})')
# `Received request (?:chatcmpl|cmpl)-` as its two literals (neither can overlap the other).
_RECEIVED_LITERALS = (b"Received request chatcmpl-", b"Received request cmpl-")
# What each pattern must contain: a chunk without it skips the pattern's pass.
_RUNNING_LITERAL = b"Running: "
_ACCESS_LITERAL = b"completions HTTP/"
_HIT_RATE_LITERAL = b"Prefix cache hit rate: "
_METRIC = re.compile(
    r"(?m)^vllm:(?:gpu_)?prefix_cache_(hits|queries|hit_rate)(?:_total)?(?:\{[^}\n]*\})?\s+([0-9.eE+-]+)\s*$"
)


@dataclass
class Signals:
    stats_lines: int = 0
    hit_rate_lines: int = 0
    hit_rate_max: float | None = None
    first_hit: dict[str, Any] | None = None  # {"file", "line", "value"} of the first rate above zero
    last_hit_rate: dict[str, Any] | None = None
    max_running: int | None = None
    requests_ok: int = 0
    requests_failed: int = 0
    requests_received: int = 0
    metrics: dict[str, Any] | None = None  # {"hits", "queries", "hit_rate", "source"}
    files: list[str] = field(default_factory=list)

    @property
    def requests(self) -> int:
        """Requests the server saw: answered ones from the access log, else the request log."""
        return max(self.requests_ok + self.requests_failed, self.requests_received)

    @property
    def cache_hits(self) -> bool | None:
        """True when a hit was seen, False when the signal was there and showed none, None when
        nothing in the bundle could tell."""
        if (self.hit_rate_max or 0) > 0:
            return True
        if self.metrics is not None:
            hits = self.metrics.get("hits")
            rate = self.metrics.get("hit_rate")
            if (hits or 0) > 0 or (rate or 0) > 0:
                return True
            if hits is not None or rate is not None:
                return False
        if self.hit_rate_lines:
            return False
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "stats_lines": self.stats_lines,
            "prefix_cache": {
                "hit_rate_lines": self.hit_rate_lines,
                "hit_rate_max": self.hit_rate_max,
                "first_hit": self.first_hit,
                "last": self.last_hit_rate,
                "metrics": self.metrics,
                "hits_seen": self.cache_hits,
            },
            "max_running": self.max_running,
            "requests": {
                "ok": self.requests_ok,
                "failed": self.requests_failed,
                "received": self.requests_received,
            },
        }


def read_signals(sources: list[Source]) -> Signals:
    signals = Signals()
    for source in sources:
        if source.role == Role.VLLM_LOG:
            _scan_log(source, signals)
        elif source.role in (None, Role.UNKNOWN, Role.ENVIRONMENT):
            _scan_metrics(source, signals)
    return signals


def _text_chunks(source: Source) -> Iterator[tuple[bytes, int]]:
    """(bytes chunk ending at a line end, 1-based line number of its first line)."""
    head = source.head(SNIFF_BYTES)
    try:
        encoding = check_text(head, source.name)
    except InputError:
        return
    if encoding.startswith("utf-16"):  # rare (PowerShell redirects): decode whole, re-encode
        yield decode_all(source.read_bytes(), encoding).encode("utf-8"), 1
        return
    line = 1
    with source.open() as stream:
        for chunk in iter_line_chunks(stream, CHUNK_BYTES):  # a line with no end is cut, not carried
            yield chunk, line
            line += chunk.count(b"\n")


def _scan_log(source: Source, signals: Signals) -> None:
    signals.files.append(source.name)
    for chunk, first_line in _text_chunks(source):
        _scan_chunk(chunk, first_line, source.name, signals)


def _scan_chunk(chunk: bytes, first_line: int, file: str, signals: Signals) -> None:
    """One chunk's signals. Why not one `finditer` loop per pattern: a serving log is mostly these
    lines (access and request lines are half of it), so a Python step per match made `check` and
    `report` pay a quarter of a triage again for them. Counts are `bytes.count` of the literals
    the patterns reduce to; the values come from `findall` (one C-level pass each, skipped when
    the literal is absent); a match's line is counted only for the two hits that are reported
    (the first above zero, the last). The results are those of the per-match loop, match for
    match. The passes run over windows of about WINDOW_BYTES (ending at a line end, no copy:
    pos/endpos), so the later passes read a window from the CPU cache, not from memory again."""
    last: tuple[int, int, float] | None = None  # (window start, window end, value) of the last hit
    start, size = 0, len(chunk)
    while start < size:
        end = size if size - start <= WINDOW_BYTES else (chunk.find(b"\n", start + WINDOW_BYTES) + 1 or size)
        values = _scan_window(chunk, start, end, signals)
        if values:
            if signals.first_hit is None:
                first = next((n for n, value in enumerate(values) if value > 0), None)
                if first is not None:
                    matches = _HIT_RATE.finditer(chunk, start, end)
                    match = next(m for n, m in enumerate(matches) if n == first)
                    signals.first_hit = _where(chunk, first_line, file, match.start(), values[first])
            last = (start, end, values[-1])
        start = end
    if last is None:
        return
    # A match starts with the literal and no literal starts inside one: the last literal that
    # begins a match is where finditer's last match starts.
    low, at, value = last
    while (at := chunk.rfind(_HIT_RATE_LITERAL, low, at)) >= 0:
        if _HIT_RATE.match(chunk, at, last[1]):
            signals.last_hit_rate = _where(chunk, first_line, file, at, value)
            return


def _scan_window(chunk: bytes, start: int, end: int, signals: Signals) -> list[float]:
    """The counts of chunk[start:end] added to `signals`; the window's hit rates, in order."""
    signals.stats_lines += chunk.count(_STATS_LITERAL, start, end)
    if chunk.find(_RUNNING_LITERAL, start, end) >= 0:
        running = _RUNNING.findall(chunk, start, end)
        if running:
            signals.max_running = max(signals.max_running or 0, max(map(int, running)))
    if chunk.find(_ACCESS_LITERAL, start, end) >= 0:
        codes = _ACCESS.findall(chunk, start, end)
        # Each code is three digits: every third byte of the joined codes is a first digit.
        ok = b"".join(codes)[::3].count(b"2")
        signals.requests_ok += ok
        signals.requests_failed += len(codes) - ok
    signals.requests_received += sum(chunk.count(literal, start, end) for literal in _RECEIVED_LITERALS)
    if chunk.find(_HIT_RATE_LITERAL, start, end) < 0:
        return []
    values = [float(v) for v in _HIT_RATE.findall(chunk, start, end)]
    if values:
        signals.hit_rate_lines += len(values)
        signals.hit_rate_max = max(signals.hit_rate_max or 0.0, max(values))
    return values


def _where(chunk: bytes, first_line: int, file: str, at: int, value: float) -> dict[str, Any]:
    return {"file": file, "line": first_line + chunk.count(b"\n", 0, at), "value": value}


def _scan_metrics(source: Source, signals: Signals) -> None:
    """A Prometheus text dump (`curl :8000/metrics`): sum the prefix-cache counters."""
    if source.size is not None and source.size > METRICS_MAX_BYTES:
        return
    head = source.head(SNIFF_BYTES)
    if b"vllm:" not in head or b"prefix_cache" not in head:
        return
    try:
        encoding = check_text(head, source.name)
    except InputError:
        return
    text = decode_all(source.head(METRICS_MAX_BYTES), encoding)
    totals: dict[str, float] = {}
    for match in _METRIC.finditer(text):
        kind, number = match.group(1), match.group(2)
        try:
            value = float(number)
        except ValueError:
            continue
        totals[kind] = (
            max(totals.get(kind, 0.0), value) if kind == "hit_rate" else totals.get(kind, 0.0) + value
        )
    if totals:
        signals.metrics = {
            "hits": totals.get("hits"),
            "queries": totals.get("queries"),
            "hit_rate": totals.get("hit_rate"),
            "source": {"file": source.name, "line": None},
        }
