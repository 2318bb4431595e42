"""The scan's fast path (prefilter, first-marker search, context windows, chunks) must keep what a
full parse of every line would find.

For each log: scan with 4 KiB chunks (so chunk boundaries fall inside traceback blocks) and with
the default chunk size; parse the whole text with `iter_frames` and classify it. The retained rows
must be identical between chunk sizes and equal, column by column, to the same lines of the full
parse; and the analysis of the full parse must give the same first error and phase.
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import polars as pl
import pytest

from vllm_triage.analysis.triage import analyse_log
from vllm_triage.engine.matcher import CompiledRules, classify, compile_rules
from vllm_triage.engine.rules import load
from vllm_triage.engine.scan import ScanResult, scan
from vllm_triage.ingest.decode import check_text, decode_all, lines_of_text
from vllm_triage.ingest.sources import Source
from vllm_triage.logframe import SCHEMA, iter_frames, parse_lines

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SMALL_CHUNK = 4096
COLUMNS = [*SCHEMA, "marker", "cls", "exc", "tb"]


@pytest.fixture(scope="module")
def compiled() -> CompiledRules:
    return compile_rules(load())


def _source(name: str, data: bytes) -> Source:
    return Source(name=name, opener=lambda: io.BytesIO(data), size=len(data))


def _serving_log() -> bytes:
    """Hours of serving (~0.5 MB) between a healthy start and a runtime crash: hundreds of 4 KiB
    chunks, most of which the prefilter must skip."""
    rng = random.Random(11)
    lines = (LOGS / "v1-0.10.1-tp2-runtime-illegal-access.log").read_text().splitlines()
    ready = next(i for i, line in enumerate(lines) if "Application startup complete" in line)
    serving = []
    for i in range(5000):
        if i % 10 == 0:
            serving.append(
                f"(APIServer pid=1) INFO 08-27 {16 + i // 3000}:{i // 60 % 60:02d}:{i % 60:02d} [loggers.py:123] Engine 000: "
                f"Avg prompt throughput: {rng.uniform(0, 3000):.1f} tokens/s, Avg generation throughput: "
                f"{rng.uniform(0, 300):.1f} tokens/s, Running: {rng.randrange(9)} reqs, Waiting: 0 reqs, "
                f"GPU KV cache usage: {rng.uniform(0, 60):.1f}%, Prefix cache hit rate: {rng.uniform(0, 50):.1f}%"
            )
        else:
            status = "400 Bad Request" if i % 97 == 0 else "200 OK"
            serving.append(
                f"(APIServer pid=1) INFO:     10.42.0.{rng.randrange(2, 250)}:{rng.randrange(1024, 65535)} - "
                f'"POST /v1/chat/completions HTTP/1.1" {status}'
            )
    return ("\n".join(lines[: ready + 1] + serving + lines[ready + 1 :]) + "\n").encode()


def _json_lines(path: Path) -> bytes:
    rows = [
        json.dumps(
            {
                "log": line + "\n",
                "stream": "stderr" if "Traceback" in line else "stdout",
                "time": f"2025-07-14T03:22:{i % 60:02d}.{i:09d}Z",
            }
        )
        for i, line in enumerate(path.read_text().splitlines())
    ]
    return ("\n".join(rows) + "\n").encode()


INPUTS = {
    "tp1-profile-oom": lambda: (LOGS / "v1-0.10.2-tp1-profile-oom.log").read_bytes(),
    "tp4-worker-nccl": lambda: (LOGS / "v1-0.9.2-tp4-worker-nccl.log").read_bytes(),
    "v0-mq-safetensors-crlf": lambda: (
        (LOGS / "v0-0.6.3-mq-tp2-safetensors.log").read_bytes().replace(b"\n", b"\r\n")
    ),
    "ray-nccl": lambda: (LOGS / "v0-0.6.4-ray-multinode-nccl.log").read_bytes(),
    "nccl-watchdog": lambda: (LOGS / "v1-0.10.0-tp4-nccl-watchdog.log").read_bytes(),
    "kv-cache-sample": lambda: (SAMPLES / "kv-cache-too-small" / "vllm.log").read_bytes(),
    "healthy-v0-sample": lambda: (SAMPLES / "healthy-v0" / "server.log").read_bytes(),
    "hang": lambda: (LOGS / "v1-0.10.2-hang-in-weight-load.log").read_bytes(),
    "long-serving-then-crash": _serving_log,
    "json-lines": lambda: _json_lines(LOGS / "v1-0.9.2-tp4-worker-nccl.log"),
    "utf16-crlf": lambda: (
        (LOGS / "v1-0.10.2-tp1-profile-oom.log").read_text().replace("\n", "\r\n").encode("utf-16")
    ),
}


def _full_parse(name: str, data: bytes, compiled: CompiledRules, json_lines: bool) -> pl.DataFrame:
    """Every line, decoded by Python in one piece and split with `lines_of_text`: a path independent
    of the scan's chunked Rust splitter."""
    encoding = check_text(data[:65536], name)
    frames = list(iter_frames([lines_of_text(decode_all(data, encoding))], name, json_lines))
    return classify(pl.concat(frames, how="vertical"), compiled).select(COLUMNS)


def _first_error(result: ScanResult, compiled: CompiledRules) -> tuple[str, int | None, str | None]:
    analysis = analyse_log(result, compiled)
    fe = analysis.first_error
    return analysis.phase, fe.row.line if fe else None, fe.rule if fe else None


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_fast_path_equals_full_parse(name: str, compiled: CompiledRules) -> None:
    data = INPUTS[name]()
    small = scan(_source(name, data), compiled, chunk_bytes=SMALL_CHUNK)
    default = scan(_source(name, data), compiled)

    # Chunk size changes nothing.
    assert small.total_lines == default.total_lines
    assert small.json_lines == default.json_lines
    assert small.frame.select(COLUMNS).equals(default.frame.select(COLUMNS))
    # Rule hit counts are exact below their cap (markers are counted only until first seen).
    classifiers = {r.id for r in compiled.classifiers}
    assert {k: v for k, v in small.hit_counts.items() if k in classifiers} == {
        k: v for k, v in default.hit_counts.items() if k in classifiers
    }

    # The retained rows are exactly what a full parse says about those lines.
    full = _full_parse(name, data, compiled, small.json_lines)
    assert full.height == small.total_lines
    assert full["line"].to_list() == list(range(1, full.height + 1))
    same_lines = full.join(small.frame.select("line"), on="line", how="semi")
    assert small.frame.select(COLUMNS).equals(same_lines)

    # And nothing the full parse would base a verdict on was skipped.
    full_result = ScanResult(name, full, full.height, json_lines=small.json_lines)
    assert (
        _first_error(small, compiled)
        == _first_error(default, compiled)
        == _first_error(full_result, compiled)
    )


def test_small_chunks_do_cut_through_the_root_block(compiled: CompiledRules) -> None:
    """The equivalence above is only worth something if boundaries really fall inside blocks."""
    data = INPUTS["tp1-profile-oom"]()
    result = scan(_source("oom", data), compiled, chunk_bytes=SMALL_CHUNK)
    block = analyse_log(result, compiled).first_error
    assert block is not None
    line_starts = [0]
    for line in data.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    start_byte, end_byte = line_starts[block.start - 1], line_starts[block.end]
    assert start_byte // SMALL_CHUNK != end_byte // SMALL_CHUNK


def test_the_prefilter_skips_most_serving_lines(compiled: CompiledRules) -> None:
    """Speed comes from not parsing the serving lines; the verdict must not need them."""
    result = scan(_source("serving", _serving_log()), compiled, chunk_bytes=64 * 1024)
    assert result.total_lines > 5000
    assert result.frame.height < result.total_lines / 10
    phase, line, rule = _first_error(result, compiled)
    assert (phase, rule) == ("request", "cuda.illegal_memory_access")


def test_parse_lines_with_explicit_line_numbers_matches_a_full_chunk() -> None:
    """The scan parses a subset of a chunk with explicit line numbers; a row must not depend on
    its neighbours."""
    lines = (LOGS / "v1-0.9.2-tp4-worker-nccl.log").read_text().splitlines()
    raw = pl.Series("raw", lines, dtype=pl.String)
    whole = parse_lines(raw, "f", 1)
    picked = pl.Series("idx", [0, 9, 28, 57, 58, 81, 104], dtype=pl.UInt32)
    subset = parse_lines(raw.gather(picked), "f", picked.cast(pl.Int64) + 1)
    assert subset.equals(whole[picked.to_list()])
