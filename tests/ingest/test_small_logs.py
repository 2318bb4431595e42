"""A log of few lines is read line by line with prefixes.split_line instead of polars' vectorised
passes (logframe.SMALL_ROWS): both readings give the same rows, column for column, on every prefix
form the grammar knows, on stacked and unusual prefixes, and on a log mixing them."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from test_prefixes import LINES

from vllm_triage import logframe
from vllm_triage.logframe import _parse_general, _without_line_end, parse_lines

# Lines whose prefixes stack or break the usual shapes: each is read by a different mix of steps.
UNUSUAL = [
    "`(APIServer pid=1) ERROR 05-08 10:00:00 [serving_chat.py:198] RuntimeError: `x` failed`",
    "2025-03-02T10:00:00.123456789Z stdout F (EngineCore_DP0 pid=263) [rank0]: RuntimeError: NCCL error",
    "vllm-openai-1  | \x1b[1;36m(APIServer pid=1)\x1b[0;0m INFO 08-06 18:11:21 [api_server.py:1] up",
    '[pod/vllm-0/vllm] INFO:     10.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
    "Sep 22 23:46:41 gpu-node vllm[361682]: (APIServer pid=361682) ERROR 09-22 23:46:41 [core.py:1] x",
    "│ (VllmWorker rank=1 pid=77) INFO 01-02 03:04:05 [worker.py:9] boxed │",
    "Loading safetensors checkpoint shards:  10% Completed\rLoading safetensors checkpoint shards: 100% Completed",
    "(pid=4242, ip=10.1.2.3) INFO 01-02 03:04:05 [ray_utils.py:1] x [repeated 12x across cluster]",
    "[E808 10:00:00.123456 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout",
    "2024-05-01 10:00:00,123 - vllm - ERROR - Engine failed",
    "2023-12-27 11:25:36 | ERROR | stderr | RuntimeError: CUDA error: out of memory",
    "12:(APIServer pid=1) ERROR 08-06 18:11:21 [x.py:1] a grep -n line",
    "> INFO 08-06 18:11:21 [x.py:1] a quoted paste",
    "",
    "   ",
    "\u00a0INFO 08-06 18:11:21 [x.py:1] a no-break space in front",
    "ERROR 08-06 18:11:21 [x.py:1] a line ending in a carriage return shown as^M",
]


def _general(lines: list[str]) -> pl.DataFrame:
    frame = pl.DataFrame({"raw": _without_line_end(pl.Series("raw", lines, dtype=pl.String))})
    frame = frame.with_columns(line=pl.int_range(1, frame.height + 1, dtype=pl.Int64))
    return _parse_general(frame, "t.log", False)


@pytest.mark.parametrize(
    "lines", [[line for line, _ in LINES], UNUSUAL, [line for line, _ in LINES] + UNUSUAL]
)
def test_a_small_log_reads_as_the_vectorised_parse_does(lines: list[str]) -> None:
    assert len(lines) <= logframe.SMALL_ROWS
    small = parse_lines(pl.Series("raw", lines, dtype=pl.String), "t.log", 1)
    assert_frame_equal(small, _general(lines))


def test_a_line_that_still_ends_in_a_line_end_is_read_as_the_general_parse_keeps_it() -> None:
    # `x^M\r^M`: one line end is taken off; split_line would take a second one
    lines = ["INFO 08-06 18:11:21 [x.py:1] ok", "^M\r^M", "tail\r\r"]
    small = parse_lines(pl.Series("raw", lines, dtype=pl.String), "t.log", 1)
    assert_frame_equal(small, _general(lines))
    assert small.get_column("message").to_list()[1] == "^M"


def test_a_log_over_the_bound_takes_the_vectorised_parse_with_the_same_rows() -> None:
    lines = ([line for line, _ in LINES] + UNUSUAL) * (logframe.SMALL_ROWS // 50 + 1)
    assert len(lines) > logframe.SMALL_ROWS
    big = parse_lines(pl.Series("raw", lines, dtype=pl.String), "t.log", 1)
    per_line = pl.concat(
        [
            parse_lines(pl.Series("raw", lines[i : i + 500], dtype=pl.String), "t.log", i + 1)
            for i in range(0, len(lines), 500)
        ]
    )
    assert_frame_equal(big, per_line)
