"""The fast parse of plain vLLM lines (logframe.PLAIN_VLLM_LINE) gives what the general parse gives,
row for row, on plain lines, on lines that only look plain, and on a mix of both in one batch."""

from __future__ import annotations

import polars as pl
from polars.testing import assert_frame_equal

from vllm_triage.logframe import _parse_general, parse_lines

PLAIN = [
    "(APIServer pid=1) ERROR 08-06 18:11:21 [serving_chat.py:222] ValueError: This model's maximum "
    "context length is 32768 tokens. However, you requested 40112 tokens in the messages.",
    "(APIServer pid=1) INFO 08-06 18:11:21 [loggers.py:123] Engine 000: Avg prompt throughput: 812.4 tokens/s",
    "(EngineCore_DP0 pid=263) WARNING 11-04 15:23:28 [core.py:718] EngineCore hit an exception",
    "(VllmWorker rank=3 pid=4411) INFO 03-12 09:01:55 [gpu_model_runner.py:1801] Loading weights took 41.2 s",
    "(Worker_PP1_TP3 pid=9) DEBUG 01-02 03:04:05 [utils.py:12] x [repeated 7x across cluster]",
    "(APIServer pid=1) INFO 08-06 18:11:21 no location here",
    "(APIServer pid=1) CRITICAL 08-06 18:11:21 [launcher.py:99] ",
    "(APIServer pid=1) ERROR 08-06 18:11:21 [a.py:1:2] colons in the location",
    "(RayWorkerWrapper pid=12) INFO 08-06 18:11:21 [ray_utils.py:3] 🙂 unicode message",
]
# Close to plain, but each needs a step the fast parse skips (or is no vLLM line at all).
NOT_PLAIN = [
    "(APIServer pid=1) (EngineCore_DP0 pid=2) ERROR 08-06 18:11:21 [core.py:1] stacked",
    "(pid=77, ip=10.0.0.3) INFO 08-06 18:11:21 [worker.py:5] ray prefix",
    "(APIServer pid=...) INFO 08-06 18:11:21 [api_server.py:1] hidden pid",
    "(APIServer pid=1) \x1b[32mINFO\x1b[0m 08-06 18:11:21 [x.py:1] colour",
    "(APIServer pid=1) INFO 08-06 18:11:21 [x.py:1] bar 10%\r bar 20%",
    "(APIServer pid=1) [rank0]: RuntimeError: NCCL error",
    '(APIServer pid=1) INFO:     10.0.0.1:5000 - "POST /v1/completions HTTP/1.1" 400 Bad Request',
    "2025-11-04T15:23:28.123456789Z (APIServer pid=1) INFO 11-04 15:23:28 [core.py:1] docker -t",
    "vllm-1  | (APIServer pid=1) INFO 11-04 15:23:28 [core.py:1] compose",
    "│ (APIServer pid=1) INFO 11-04 15:23:28 [core.py:1] boxed │",
    "Traceback (most recent call last):",
    "ValueError: bare exception line",
    "(APIServer pid=1) INFO 08-06 18:11:21",
    "",
]


def _both(lines: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    raw = pl.Series("raw", lines, dtype=pl.String)
    numbers = pl.Series("line", range(10, 10 + len(lines)), dtype=pl.Int64)
    general = _parse_general(pl.DataFrame({"raw": raw, "line": numbers}), "t.log", False)
    return parse_lines(raw, "t.log", numbers), general


def test_plain_lines_parse_as_the_general_parse_reads_them() -> None:
    fast, general = _both(PLAIN)
    assert_frame_equal(fast, general)
    assert fast.get_column("process").to_list()[3] == "VllmWorker rank=3"
    assert fast.get_column("rank").to_list()[3] == 3
    assert fast.get_column("message").to_list()[4] == "x"


def test_lines_that_only_look_plain_are_left_to_the_general_parse() -> None:
    fast, general = _both(NOT_PLAIN)
    assert_frame_equal(fast, general)
    assert fast.get_column("process").to_list()[0] == "EngineCore_DP0"  # the innermost prefix
    assert fast.get_column("transport_ts").to_list()[7] is not None


def test_a_batch_of_both_kinds_keeps_its_order() -> None:
    mixed = [line for pair in zip(PLAIN, NOT_PLAIN, strict=False) for line in pair] + NOT_PLAIN[len(PLAIN) :]
    fast, general = _both(mixed)
    assert_frame_equal(fast, general)
    assert fast.get_column("line").to_list() == list(range(10, 10 + len(mixed)))
