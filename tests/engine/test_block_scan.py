"""The byte-level scan (engine/blocks.py) must give exactly what the per-line scan gives.

Every input is scanned twice, `blocks=False` (every chunk split into lines) and `blocks=True`,
with the block path forced on small inputs and small chunks (so chunk ends fall inside tracebacks
and context windows), and the whole ScanResult must be equal: retained rows, line count, hit
counts, cut lines. The inputs are the project's fixture logs and generated serving logs, with
the shapes that must send a chunk back to the per-line path (CR line ends, CRI partial records,
box rows, NULs, invalid UTF-8, lines over --max-line) put at random places.
"""

from __future__ import annotations

import io
import random
from collections import Counter
from pathlib import Path

import pytest

from vllm_triage.analysis.triage import analyse_log
from vllm_triage.engine import blocks
from vllm_triage.engine.matcher import CompiledRules, compile_rules
from vllm_triage.engine.rules import load
from vllm_triage.engine.scan import ScanResult, scan
from vllm_triage.ingest.limits import LIMITS
from vllm_triage.ingest.sources import Source

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


@pytest.fixture(scope="module")
def compiled() -> CompiledRules:
    return compile_rules(load())


@pytest.fixture(autouse=True)
def small_inputs_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blocks, "BLOCK_MIN_BYTES", 0)


def _scan(data: bytes, compiled: CompiledRules, chunk: int, use_blocks: bool) -> ScanResult:
    source = Source(name="log", opener=lambda: io.BytesIO(data), size=len(data))
    return scan(source, compiled, chunk_bytes=chunk, blocks=use_blocks)


def _assert_same(data: bytes, compiled: CompiledRules, chunk: int) -> ScanResult:
    lines = _scan(data, compiled, chunk, use_blocks=False)
    bytes_first = _scan(data, compiled, chunk, use_blocks=True)
    assert bytes_first.total_lines == lines.total_lines
    assert bytes_first.frame.equals(lines.frame)
    assert _capped(bytes_first.hit_counts, compiled) == _capped(lines.hit_counts, compiled)
    assert (bytes_first.cut_lines, bytes_first.cut_count) == (lines.cut_lines, lines.cut_count)
    assert analyse_log(bytes_first, compiled).first_error == analyse_log(lines, compiled).first_error
    return bytes_first


def _capped(counts: Counter[str], compiled: CompiledRules) -> dict[str, int]:
    """Hit counts as far as they are exact: a milestone is wanted once (the byte path reports
    the first line holding each of its literals, the per-line path up to five candidates)."""
    once = {r.id for r in compiled.markers if not r.shutdown}
    return {rule: min(n, 1) if rule in once else n for rule, n in counts.items()}


def _serving(rng: random.Random, n: int) -> list[str]:
    out = []
    for i in range(n):
        ts = f"08-06 1{i // 36000 % 10}:{i // 600 % 60:02d}:{i // 10 % 60:02d}"
        shape = rng.randrange(12)
        if shape == 0:
            out.append(
                f"(APIServer pid=1) INFO {ts} [loggers.py:123] Engine 000: Avg prompt throughput: "
                f"{rng.uniform(0, 9000):.1f} tokens/s, Running: {rng.randrange(60)} reqs"
            )
        elif shape == 1:
            out.append(
                f"(APIServer pid=1) ERROR {ts} [serving_chat.py:222] Error in preprocessing prompt inputs"
            )
            out.append(
                f"(APIServer pid=1) ERROR {ts} [serving_chat.py:222] ValueError: This model's maximum "
                f"context length is 65536 tokens. However, you requested {rng.randrange(65537, 99999)} tokens"
            )
        elif shape == 2:
            out.append(f"(APIServer pid=1) WARNING {ts} [protocol.py:58] The following fields were present")
        else:
            status = "400 Bad Request" if rng.random() < 0.05 else "200 OK"
            out.append(
                f"(APIServer pid=1) INFO:     10.0.{rng.randrange(255)}.{rng.randrange(255)}:"
                f'{rng.randrange(1024, 65535)} - "POST /v1/chat/completions HTTP/1.1" {status}'
            )
    return out


def _log(seed: int, crash: str, n: int = 6000) -> list[str]:
    """A start-up (a fixture log's head), serving, and a crash (another fixture's traceback)."""
    rng = random.Random(seed)
    start = (LOGS / "v1-0.10.1-tp2-runtime-illegal-access.log").read_text().splitlines()
    ready = next(i for i, line in enumerate(start) if "Application startup complete" in line)
    tail = (LOGS / crash).read_text().splitlines()
    serving = _serving(rng, n)
    where = rng.randrange(len(serving))
    return start[: ready + 1] + serving[:where] + tail + serving[where:]


CRASHES = [
    "v1-0.10.1-tp2-runtime-illegal-access.log",
    "v1-0.9.2-tp4-worker-nccl.log",
    "v1-0.10.2-tp1-profile-oom.log",
    "v1-0.10.0-tp4-nccl-watchdog.log",
]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("chunk", [4096, 65536, 1 << 20])
def test_generated_serving_logs(seed: int, chunk: int, compiled: CompiledRules) -> None:
    data = ("\n".join(_log(seed, CRASHES[seed])) + "\n").encode()
    result = _assert_same(data, compiled, chunk)
    assert result.total_lines > 6000


def _count_hit_lines(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The hit lines of every chunk that takes the byte path, appended as they are found."""
    seen: list[int] = []
    original = blocks.HitLines.of.__func__  # type: ignore[attr-defined]

    def counting(cls, data, database, scratch, limit, *markers):  # type: ignore[no-untyped-def]
        found = original(cls, data, database, scratch, limit, *markers)
        seen.append(found.hit_offsets.len())
        return found

    monkeypatch.setattr(blocks.HitLines, "of", classmethod(counting))
    return seen


def test_the_byte_path_is_taken_and_skips_most_lines(
    compiled: CompiledRules, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The equality above is only worth something if the block path really runs."""
    seen = _count_hit_lines(monkeypatch)
    data = ("\n".join(_log(9, CRASHES[0], 20000)) + "\n").encode()
    result = _assert_same(data, compiled, 65536)
    assert len(seen) > 10
    assert sum(seen) < result.total_lines / 4


def test_a_busy_serving_chunk_stays_on_the_byte_path(
    compiled: CompiledRules, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first chunks after start-up hold the serving milestone's literals on every line (access
    and stats lines): only the first line holding each is reported, so they are not split whole."""
    seen = _count_hit_lines(monkeypatch)
    start = (LOGS / "v1-0.10.1-tp2-runtime-illegal-access.log").read_text().splitlines()
    ready = next(i for i, line in enumerate(start) if "Application startup complete" in line)
    access = [
        f'(APIServer pid=1) INFO:     10.0.0.{i % 250}:{40000 + i} - "POST /v1/completions HTTP/1.1" 200 OK'
        for i in range(40000)
    ]
    data = ("\n".join(start[: ready + 1] + access) + "\n").encode()
    result = _assert_same(data, compiled, 1 << 20)
    assert len(seen) == 4  # every chunk went the byte path: none had a hit in most lines
    assert sum(seen) < 200
    assert result.hit_counts["marker.ready"] == 1


def test_a_milestone_literal_first_seen_outside_the_milestone(compiled: CompiledRules) -> None:
    """The first line holding a milestone's literal is not always the milestone (here a message
    quoting it before the real line): the chunk is then searched whole for it, as the per-line
    path does, and the milestone is found at the same line."""
    start = (LOGS / "v1-0.10.1-tp2-runtime-illegal-access.log").read_text().splitlines()
    at = next(i for i, line in enumerate(start) if "Available KV cache memory: " in line)
    quoted = (
        "(EngineCore_0 pid=250) INFO 08-06 10:00:00 [notes.py:7] the line 'Available KV cache "
        "memory: ' follows profiling"
    )
    lines = start[:at] + [quoted] * 3 + start[at:]
    for chunk in (512, 4096, 1 << 20):
        result = _assert_same(("\n".join(lines) + "\n").encode(), compiled, chunk)
        kv = result.frame.filter(result.frame["marker"] == "marker.kv_cache")
        assert kv.get_column("line").min() == at + 3 + 1


def _mutated(seed: int) -> bytes:
    """A generated log with the shapes the byte path must hand back, at random lines."""
    rng = random.Random(seed)
    lines = _log(seed, CRASHES[seed % len(CRASHES)], 3000)
    for _ in range(6):
        i = rng.randrange(len(lines))
        shape = rng.randrange(7)
        if shape == 0:
            lines[i] += "\r"  # one CRLF line
        elif shape == 1:
            lines[i] = f"2025-07-14T03:22:01.1Z stderr P {lines[i][:20]}"
            lines.insert(i + 1, f"2025-07-14T03:22:01.2Z stderr F {lines[i + 1][20:]}")
        elif shape == 2:
            lines[i] = f"│ {lines[i][:40]:<40} │"
        elif shape == 3:
            lines[i] = lines[i][:10] + "\x00" + lines[i][10:]
        elif shape == 4:
            lines[i] = "x" * (LIMITS.max_line + 10) + " RuntimeError: cut away"
        elif shape == 5:
            lines[i] = lines[i] + "\udcff"  # an invalid byte (surrogateescape below)
        else:
            lines[i] = "Traceback (most recent call last):"
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")


@pytest.mark.parametrize("seed", range(8))
def test_inputs_that_need_the_per_line_path(seed: int, compiled: CompiledRules) -> None:
    _assert_same(_mutated(seed), compiled, 32768)


@pytest.mark.parametrize("name", sorted(p.name for p in LOGS.glob("*.log")))
def test_fixture_logs(name: str, compiled: CompiledRules) -> None:
    data = (LOGS / name).read_bytes()
    for chunk in (4096, 1 << 20):
        _assert_same(data, compiled, chunk)


def test_a_log_without_a_last_newline_and_with_a_bom(compiled: CompiledRules) -> None:
    lines = _log(3, CRASHES[2], 2000)
    _assert_same(b"\xef\xbb\xbf" + "\n".join(lines).encode(), compiled, 8192)
    _assert_same(("\n".join(lines) + "\nValueError: at the very end").encode(), compiled, 8192)


def test_most_lines_hit_falls_back_to_splitting(
    compiled: CompiledRules, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(blocks, "MIN_BYTES_PER_HIT", 10**9)  # any hit is too many
    data = ("\n".join(_log(1, CRASHES[1], 2000)) + "\n").encode()
    _assert_same(data, compiled, 16384)


def test_a_line_only_the_exception_pattern_hits_holds_no_gate_literal(compiled: CompiledRules) -> None:
    """Milestones are looked for only in hit lines that hold a gate literal: an exception line of a
    plugin no rule knows is hit by the structural pattern alone, a milestone by its literal."""
    gate = compiled.block_gate(frozenset())
    assert gate is not None
    database = blocks.database_of(gate)
    lines = [f"filler line number {i}" for i in range(3000)] + [
        "(APIServer pid=1) INFO 08-06 10:00:00 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000",
        "(APIServer pid=1) ERROR 08-06 10:00:01 [plugin.py:9] WidgetFailure: the widget plugin gave up",
        "(APIServer pid=1) INFO 08-06 10:00:01 [x.py:1] plain",
    ]
    data = ("\n".join(lines) + "\n").encode()
    found = blocks.HitLines.of(data, database, blocks.scratch_for(database), LIMITS.max_line, gate.markers)
    assert found.hit_offsets.to_list() == [3000, 3001]
    assert found.literal_hit.to_list() == [True, False]
