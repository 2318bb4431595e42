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
METRICS_MAX_BYTES = 16 * 1024 * 1024

_STATS = re.compile(rb"Avg prompt throughput: ")
# Capital P: "External prefix cache hit rate" is a connector's cache (LMCache …), not vLLM's own.
_HIT_RATE = re.compile(rb"Prefix cache hit rate: (?:GPU: )?([\d.]+)%")
_RUNNING = re.compile(rb"Running: (\d+) reqs")
_ACCESS = re.compile(rb'"POST /v1/(?:chat/)?completions HTTP/[\d.]+" (\d{3})')
_RECEIVED = re.compile(rb"Received request (?:chatcmpl|cmpl)-")
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
        signals.stats_lines += len(_STATS.findall(chunk))
        for match in _RUNNING.finditer(chunk):
            running = int(match.group(1))
            signals.max_running = max(signals.max_running or 0, running)
        for match in _ACCESS.finditer(chunk):
            if match.group(1).startswith(b"2"):
                signals.requests_ok += 1
            else:
                signals.requests_failed += 1
        signals.requests_received += len(_RECEIVED.findall(chunk))
        # Line numbers counted from the previous match on, not from the chunk start (quadratic).
        line, counted_to = first_line, 0
        for match in _HIT_RATE.finditer(chunk):
            value = float(match.group(1))
            line += chunk.count(b"\n", counted_to, match.start())
            counted_to = match.start()
            signals.hit_rate_lines += 1
            signals.hit_rate_max = max(signals.hit_rate_max or 0.0, value)
            where = {"file": source.name, "line": line, "value": value}
            signals.last_hit_rate = where
            if value > 0 and signals.first_hit is None:
                signals.first_hit = where


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
