"""The signal counts of a chunk (compare/signals._scan_chunk, literal counts and findall) equal
those of the per-match loop they replaced, on serving-log chunks with every kind of signal line,
mixed orders and hostile near-misses."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from vllm_triage.compare.signals import Signals, _scan_chunk

_HIT_RATE = re.compile(rb"Prefix cache hit rate: (?:GPU: )?([\d.]+)%")
_RUNNING = re.compile(rb"Running: (\d+) reqs")
_ACCESS = re.compile(rb'"POST /v1/(?:chat/)?completions HTTP/[\d.]+" (\d{3})')


def _reference(chunk: bytes, first_line: int, file: str) -> dict[str, Any]:
    """The loop the fast scan replaced: one Python step per match."""
    out: dict[str, Any] = {"stats": len(re.findall(rb"Avg prompt throughput: ", chunk))}
    out["running"] = max((int(m.group(1)) for m in _RUNNING.finditer(chunk)), default=None)
    codes = [m.group(1) for m in _ACCESS.finditer(chunk)]
    out["ok"] = sum(1 for c in codes if c.startswith(b"2"))
    out["failed"] = len(codes) - out["ok"]
    out["received"] = len(re.findall(rb"Received request (?:chatcmpl|cmpl)-", chunk))
    first = last = None
    lines = rate_max = 0
    for match in _HIT_RATE.finditer(chunk):
        value = float(match.group(1))
        where = {"file": file, "line": first_line + chunk.count(b"\n", 0, match.start()), "value": value}
        lines += 1
        rate_max = max(rate_max, value)
        last = where
        if value > 0 and first is None:
            first = where
    out.update(lines=lines, rate_max=rate_max if lines else None, first=first, last=last)
    return out


def _fast(chunk: bytes, first_line: int, file: str) -> dict[str, Any]:
    s = Signals()
    _scan_chunk(chunk, first_line, file, s)
    return {
        "stats": s.stats_lines,
        "running": s.max_running,
        "ok": s.requests_ok,
        "failed": s.requests_failed,
        "received": s.requests_received,
        "lines": s.hit_rate_lines,
        "rate_max": s.hit_rate_max,
        "first": s.first_hit,
        "last": s.last_hit_rate,
    }


LINES = [
    b"INFO 11-02 10:00:05 metrics.py:351] Avg prompt throughput: 812.4 tokens/s, Running: 3 reqs, "
    b"Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 2.1%\n",
    b"INFO 11-02 10:00:05 metrics.py:367] Prefix cache hit rate: GPU: 0.00%, CPU: 0.00%\n",
    b"INFO 11-02 10:00:10 metrics.py:367] Prefix cache hit rate: GPU: 37.50%, CPU: 0.00%\n",
    b"(APIServer pid=1) INFO 08-27 16:40:01 [loggers.py:123] Engine 000: Avg prompt throughput: 4.2 "
    b"tokens/s, Running: 12 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.2%, Prefix cache hit rate: 12.5%\n",
    b'INFO:     10.0.0.7:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n',
    b'INFO:     10.0.0.7:51236 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error\n',
    b'INFO:     10.0.0.7:51238 - "POST /v1/completions HTTP/2" 404 Not Found\n',
    b"INFO 08-27 16:40:02 [logger.py:41] Received request chatcmpl-9f2c: prompt: 'hi'\n",
    b"INFO 08-27 16:40:02 [logger.py:41] Received request cmpl-77aa-0: prompt: 'x'\n",
    # Near misses: the literal without the rest of the pattern.
    b"Prefix cache hit rate: N/A\n",
    b"External prefix cache hit rate: 50.0%\n",
    b"Running: many reqs\n",
    b'"POST /v1/completions HTTP/1.1" 20\n',
    b"Received request chat-1\n",
    b"Prefix cache hit rate: Prefix cache hit rate: 3.0%\n",
    b"a line with no signal at all\n",
]


def test_every_line_kind_alone_and_in_order() -> None:
    for line in LINES:
        assert _fast(line, 7, "f.log") == _reference(line, 7, "f.log"), line
    chunk = b"".join(LINES)
    assert _fast(chunk, 1, "f.log") == _reference(chunk, 1, "f.log")


def test_random_chunks_match_the_per_match_loop() -> None:
    rng = random.Random(13)
    for _ in range(300):
        chunk = b"".join(rng.choice(LINES) for _ in range(rng.randint(0, 60)))
        if rng.random() < 0.3:  # cut anywhere: a chunk may end mid-line
            chunk = chunk[: rng.randint(0, len(chunk))]
        first_line = rng.randint(1, 10_000)
        assert _fast(chunk, first_line, "x.log") == _reference(chunk, first_line, "x.log"), chunk


def test_first_hit_after_zeros_and_last_hit() -> None:
    chunk = LINES[1] * 5 + LINES[2] + LINES[1] + LINES[9]
    fast = _fast(chunk, 100, "v.log")
    assert fast["first"] == {"file": "v.log", "line": 105, "value": 37.5}
    assert fast["last"] == {"file": "v.log", "line": 106, "value": 0.0}
    assert fast["lines"] == 7


def test_windows_of_a_chunk_add_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks scanned in many small windows (ending at line ends) give the whole chunk's answer."""
    import vllm_triage.compare.signals as signals_module

    rng = random.Random(21)
    for window in (1, 50, 200, 1000):
        monkeypatch.setattr(signals_module, "WINDOW_BYTES", window)
        for _ in range(60):
            chunk = b"".join(rng.choice(LINES) for _ in range(rng.randint(0, 40)))
            if rng.random() < 0.3:
                chunk = chunk[: rng.randint(0, len(chunk))]
            assert _fast(chunk, 3, "w.log") == _reference(chunk, 3, "w.log"), (window, chunk)
