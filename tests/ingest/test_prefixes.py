"""The one prefix grammar: every transport and vLLM prefix form, read the same way line by line
(`split_line`, for the log-config reader, signatures and sniffing) and vectorised (the LogFrame)."""

from __future__ import annotations

import json
import re
import time

import polars as pl
import pytest

from vllm_triage.analysis.signature import normalise
from vllm_triage.ingest.prefixes import BOX, BOX_START, Parts, split_line, strip_ansi, strip_box
from vllm_triage.logframe import parse_lines
from vllm_triage.parsers.vllm_log_config import strip_line

MESSAGE = "RuntimeError: NCCL error: unhandled system error"
# (line, what split_line must find) — one entry per prefix form and generation.
LINES: list[tuple[str, Parts]] = [
    (
        # A hand-trimmed paste keeps only the logger's location.
        "[model_runner.py:904] Loading model weights took 3.3461GB",
        Parts(
            "Loading model weights took 3.3461GB",
            None,
            None,
            None,
            source="model_runner.py:904",
            logger="vllm",
        ),
    ),
    (
        # Only a Python file's location is a vLLM logger's.
        "[allocator.cpp:904] not a vLLM logger location",
        Parts("[allocator.cpp:904] not a vLLM logger location", None, None, None),
    ),
    (
        "INFO 08-06 12:34:56 api_server.py:528] vLLM API server version 0.6.3",
        Parts(
            "vLLM API server version 0.6.3",
            None,
            "08-06 12:34:56",
            "INFO",
            source="api_server.py:528",
            logger="vllm",
        ),
    ),
    (
        "INFO 01-28 13:42:20 async_llm_engine.py:68] Engine is gracefully shutting down.",
        Parts(
            "Engine is gracefully shutting down.",
            None,
            "01-28 13:42:20",
            "INFO",
            source="async_llm_engine.py:68",
            logger="vllm",
        ),
    ),
    (
        "(EngineCore_DP0 pid=263) INFO 11-04 15:23:28 [core.py:718] Waiting for init message",
        Parts(
            "Waiting for init message",
            None,
            "11-04 15:23:28",
            "INFO",
            "EngineCore_DP0",
            None,
            263,
            "core.py:718",
            "vllm",
        ),
    ),
    (
        "(VllmWorker rank=1 pid=4711) ERROR 05-12 19:01:18 [multiproc_executor.py:470] WorkerProc hit an exception.",
        Parts(
            "WorkerProc hit an exception.",
            None,
            "05-12 19:01:18",
            "ERROR",
            "VllmWorker rank=1",
            1,
            4711,
            "multiproc_executor.py:470",
            "vllm",
        ),
    ),
    (
        "(RayWorkerWrapper pid=812, ip=10.0.0.7) INFO 03-02 10:11:12 worker.py:71] Loading model weights took 6.2 GB",
        Parts(
            "Loading model weights took 6.2 GB",
            None,
            "03-02 10:11:12",
            "INFO",
            "RayWorkerWrapper@10.0.0.7",
            None,
            812,
            "worker.py:71",
            "vllm",
        ),
    ),
    (
        '(APIServer pid=1) (EngineCore_0 pid=2)   File "/x/vllm/v1/engine/core.py", line 9, in run',
        Parts('  File "/x/vllm/v1/engine/core.py", line 9, in run', process="EngineCore_0", pid=2),
    ),
    # a custom --logging-config format: year and milliseconds, no location
    (
        "INFO 2025-11-04 15:23:28,123 Starting vLLM API server on http://0.0.0.0:8000",
        Parts(
            "Starting vLLM API server on http://0.0.0.0:8000",
            None,
            "2025-11-04 15:23:28",
            "INFO",
            logger="vllm",
        ),
    ),
    (
        "[node-3] WARNING 02-02 02:02:02 [loader.py:447] slow disk",
        Parts("slow disk", None, "02-02 02:02:02", "WARNING", source="loader.py:447", logger="vllm"),
    ),
    ("2025-09-21T18:00:01.123456789Z " + MESSAGE, Parts(MESSAGE, "2025-09-21T18:00:01.123456789Z")),
    (
        "vllm-openai-1  | 2025-09-21T18:00:01Z " + MESSAGE,
        Parts(MESSAGE, "2025-09-21T18:00:01Z", service="vllm-openai-1"),
    ),
    # podman-compose: the service name in brackets, padded to the longest
    (
        "[vllm]            | INFO 05-29 04:44:25 [gpu_model_runner.py:1276] " + MESSAGE,
        Parts(
            MESSAGE,
            None,
            "05-29 04:44:25",
            "INFO",
            source="gpu_model_runner.py:1276",
            logger="vllm",
            service="vllm",
        ),
    ),
    # a launch script stamping each line it relays with its own bracketed local time
    (
        "[2026-01-26 16:56:13]      INFO 01-26 16:56:12 [utils.py:253] " + MESSAGE,
        Parts(MESSAGE, "2026-01-26 16:56:13", "01-26 16:56:12", "INFO", source="utils.py:253", logger="vllm"),
    ),
    (
        "[2026-01-26 16:56:14]   Traceback (most recent call last):",
        Parts("Traceback (most recent call last):", "2026-01-26 16:56:14"),
    ),
    ("[pod/vllm-0/vllm] 2025-09-21T18:00:01Z " + MESSAGE, Parts(MESSAGE, "2025-09-21T18:00:01Z")),
    ("2025-09-21T18:00:01.5Z stderr F " + MESSAGE, Parts(MESSAGE, "2025-09-21T18:00:01.5Z")),
    ("Sep 21 18:05:01 gpu-node-07 vllm[361682]: " + MESSAGE, Parts(MESSAGE, "Sep 21 18:05:01")),
    (
        "2025-09-21T18:05:01+0200 gpu-node-07 vllm[361682]: " + MESSAGE,
        Parts(MESSAGE, "2025-09-21T18:05:01+0200"),
    ),
    ("[vllm]: " + MESSAGE, Parts(MESSAGE)),
    # a log viewer's export: local time with milliseconds, then ` | `
    (
        "2026-04-19 12:59:20.216 | (EngineCore pid=196) ERROR 04-19 10:59:20 [core.py:1132] " + MESSAGE,
        Parts(
            MESSAGE,
            "2026-04-19 12:59:20.216",
            "04-19 10:59:20",
            "ERROR",
            "EngineCore",
            None,
            196,
            "core.py:1132",
            "vllm",
        ),
    ),
    ("2026-04-19 12:59:20.217 | " + MESSAGE, Parts(MESSAGE, "2026-04-19 12:59:20.217")),
    # ` | `-separated Python loggers: FastChat's format and loguru's default; their time and level
    # are the logger's own, not a viewer's stamp and a compose service
    (
        "2024-03-05 11:20:45 | ERROR | stderr | " + MESSAGE,
        Parts(MESSAGE, None, "2024-03-05 11:20:45", "ERROR", logger="pipe"),
    ),
    (
        "2025-01-09 14:02:11.270 | WARNING  | bench.runner:start:88 - retrying the engine",
        Parts("retrying the engine", None, "2025-01-09 14:02:11", "WARNING", logger="pipe"),
    ),
    (
        "fastchat-worker-1  | 2024-03-05 11:20:45 | INFO | model_worker | Send heart beat.",
        Parts(
            "Send heart beat.",
            None,
            "2024-03-05 11:20:45",
            "INFO",
            logger="pipe",
            service="fastchat-worker-1",
        ),
    ),
    # a viewer's stamp in front of a FastChat line: the first time is the viewer's
    (
        "2026-04-19 12:59:20.216 | 2024-03-05 11:20:45 | ERROR | asyncio | " + MESSAGE,
        Parts(MESSAGE, "2026-04-19 12:59:20.216", "2024-03-05 11:20:45", "ERROR", logger="pipe"),
    ),
    # Rust tracing's fmt layer (NVIDIA Dynamo relays vLLM's records through it): the RFC 3339 time,
    # the level padded to five, a dotted target; WARN is vLLM's WARNING
    (
        "2026-01-08T05:13:48.113127Z ERROR core.run_engine_core: EngineCore failed to start.",
        Parts("EngineCore failed to start.", "2026-01-08T05:13:48.113127Z", None, "ERROR", logger="tracing"),
    ),
    (
        "2025-06-06T09:52:01.833Z  INFO multiproc_executor.monitor_parent_death: Parent process exited",
        Parts("Parent process exited", "2025-06-06T09:52:01.833Z", None, "INFO", logger="tracing"),
    ),
    (
        "2025-06-06T09:52:02.100Z  WARN dynamo_runtime::pipeline::network: " + MESSAGE,
        Parts(MESSAGE, "2025-06-06T09:52:02.100Z", None, "WARNING", logger="tracing"),
    ),
    # must-not: a level word and a colon after an undotted word is text, not a tracing record
    (
        "2025-06-06T09:52:02.100Z ERROR handler: " + MESSAGE,
        Parts("ERROR handler: " + MESSAGE, "2025-06-06T09:52:02.100Z"),
    ),
    # Intel Gaudi's hl_logger (Synapse / PT_BRIDGE beside vLLM on HPU): lower-case level, no date
    (
        "[19:08:34.165045][PT_BRIDGE       ][error][tid:44F8A] " + MESSAGE,
        Parts(MESSAGE, None, None, "ERROR", logger="hl"),
    ),
    (
        "[19:08:30.001002][SYN_API       ][info ][tid:44F8A] " + MESSAGE,
        Parts(MESSAGE, None, None, "INFO", logger="hl"),
    ),
    # must-not: a bracketed time and tag without hl_logger's level and thread fields
    ("[19:08:30.001002][SYN_API] " + MESSAGE, Parts("[19:08:30.001002][SYN_API] " + MESSAGE)),
    (
        "[19:08:34.164951][GC                    ][warning][tid:1A] " + MESSAGE,
        Parts(MESSAGE, None, None, "WARNING", logger="hl"),
    ),
    # a time, ` | ` and a level word: a ` | ` logger with no name field, not a compose service `ERROR`
    (
        "2026-04-19 12:59:20.218 | ERROR | " + MESSAGE,
        Parts(MESSAGE, None, "2026-04-19 12:59:20", "ERROR", logger="pipe"),
    ),
    (
        "\x1b[0;36m(Worker_TP0 pid=9)\x1b[0;0m \x1b[31mERROR\x1b[0m \x1b[90m11-04 15:23:28\x1b[0m "
        "\x1b[90m[gpu_worker.py:12]\x1b[0m boom",
        Parts("boom", None, "11-04 15:23:28", "ERROR", "Worker_TP0", 0, 9, "gpu_worker.py:12", "vllm"),
    ),
    ("│ " + MESSAGE + "      │", Parts(MESSAGE)),
    ("[rank1]: " + MESSAGE, Parts(MESSAGE, rank=1)),
    (
        "[rank0]:[E1203 09:01:02.114581552 ProcessGroupNCCL.cpp:632] Watchdog caught collective operation timeout",
        Parts(
            "Watchdog caught collective operation timeout",
            None,
            "12-03 09:01:02",
            "ERROR",
            rank=0,
            source="ProcessGroupNCCL.cpp:632",
            logger="c10d",
        ),
    ),
    (
        "INFO:     Application startup complete.",
        Parts("Application startup complete.", level="INFO", logger="uvicorn"),
    ),
    (
        "2024-11-20 10:02:15,482\tINFO worker.py:1654 -- Connecting to existing Ray cluster",
        Parts(
            "Connecting to existing Ray cluster",
            None,
            "2024-11-20 10:02:15",
            "INFO",
            source="worker.py:1654",
            logger="iso",
        ),
    ),
    # `%(asctime)s %(levelname)s %(process)d [%(filename)s:%(lineno)d] [- ]%(message)s`
    (
        "2024-12-19 21:40:35,118 ERROR 4242 [async_llm_engine.py:64] Engine background task failed",
        Parts(
            "Engine background task failed",
            None,
            "2024-12-19 21:40:35",
            "ERROR",
            source="async_llm_engine.py:64",
            logger="iso",
        ),
    ),
    (
        "2024-12-19 21:40:35 WARNING 4242 [model_runner.py:1703] - slow step",
        Parts(
            "slow step", None, "2024-12-19 21:40:35", "WARNING", source="model_runner.py:1703", logger="iso"
        ),
    ),
    # a number that opens the message is no pid without a location after it
    (
        "2024-12-19 21:40:35 ERROR 3 workers died",
        Parts("3 workers died", None, "2024-12-19 21:40:35", "ERROR", logger="iso"),
    ),
    # a format without %(asctime)s keeps the bracketed location; `INFO word` is no logger prefix
    (
        "ERROR [core.py:718] EngineCore failed to start.",
        Parts("EngineCore failed to start.", level="ERROR", source="core.py:718", logger="vllm"),
    ),
    ("WARNING something happened", Parts("WARNING something happened")),
    # `grep -n` output: the line number before the line as it was (a match `N:`, context `N-`)
    (
        "1561:(Worker_TP12_EP12 pid=4021) ERROR 06-24 21:51:00 [multiproc_executor.py:962] " + MESSAGE,
        Parts(
            MESSAGE,
            None,
            "06-24 21:51:00",
            "ERROR",
            "Worker_TP12_EP12",
            12,
            4021,
            "multiproc_executor.py:962",
            "vllm",
        ),
    ),
    (
        "17-INFO 06-24 21:44:26 [utils.py:240] non-default args: {}",
        Parts("non-default args: {}", None, "06-24 21:44:26", "INFO", source="utils.py:240", logger="vllm"),
    ),
    # a message that starts with a number and a colon is not grep's
    ("3: " + MESSAGE, Parts("3: " + MESSAGE)),
    # a date opening a line is no grep line number: KServe's logger (time, pid, logger name, level,
    # `[file:function():line]`) is read as a Python logger
    (
        "2025-06-10 11:36:24.900 269781 kserve INFO loaded",
        Parts("loaded", None, "2025-06-10 11:36:24", "INFO", logger="iso"),
    ),
    (
        "2024-07-01 07:28:04.488 1 kserve ERROR [__main__.py:<module>():254] Failed to start model server: boom",
        Parts(
            "Failed to start model server: boom",
            None,
            "2024-07-01 07:28:04",
            "ERROR",
            source="__main__.py:<module>():254",
            logger="iso",
        ),
    ),
    # a word and a count before the level are a message, not a pid and a logger name
    (
        "2024-07-01 07:28:04 loaded 3 ERROR lines",
        Parts("2024-07-01 07:28:04 loaded 3 ERROR lines"),
    ),
    # a reporter's abbreviations: the pid hidden, the date and location cut to `...`
    (
        "(EngineCore pid=...) INFO ... Model loading took 14.53 GiB memory and 172.4 seconds",
        Parts(
            "Model loading took 14.53 GiB memory and 172.4 seconds",
            level="INFO",
            process="EngineCore",
            logger="vllm",
        ),
    ),
    (
        "(APIServer pid=xxx) WARNING … slow",
        Parts("slow", level="WARNING", process="APIServer", logger="vllm"),
    ),
    # a wrapper's logger relaying the server's stdout (olmocr): the vLLM line inside is the record
    (
        "2025-06-27 12:57:51,600 - __main__ - INFO - ERROR 06-27 12:57:51 [core.py:515] EngineCore failed to start.",
        Parts(
            "EngineCore failed to start.",
            "2025-06-27 12:57:51,600",
            "06-27 12:57:51",
            "ERROR",
            source="core.py:515",
            logger="vllm",
        ),
    ),
    (
        "2025-10-30 08:25:40,120 - __main__ - INFO - (EngineCore_DP0 pid=263) WARNING 10-30 08:25:40 "
        "[core.py:1] slow",
        Parts(
            "slow",
            "2025-10-30 08:25:40,120",
            "10-30 08:25:40",
            "WARNING",
            process="EngineCore_DP0",
            pid=263,
            source="core.py:1",
            logger="vllm",
        ),
    ),
    # must-not: the wrapper's own lines are its logger's
    (
        "2025-06-27 12:57:46,167 - __main__ - WARNING - Attempt 18: Please wait for vllm server to become ready...",
        Parts(
            "Attempt 18: Please wait for vllm server to become ready...",
            None,
            "2025-06-27 12:57:46",
            "WARNING",
            logger="iso",
        ),
    ),
    # A launcher relaying the server's output puts its clock and a name tag before each record.
    (
        "[06:51:09]    [vllm] (EngineCore pid=289) ERROR 09-09 06:51:09 [core.py:1354] " + MESSAGE,
        Parts(
            MESSAGE,
            None,
            "09-09 06:51:09",
            "ERROR",
            process="EngineCore",
            pid=289,
            source="core.py:1354",
            logger="vllm",
        ),
    ),
    (
        "step0: INFO 05-01 10:00:00 [gpu_worker.py:1] Available KV cache memory: 1 GiB",
        Parts(
            "Available KV cache memory: 1 GiB",
            None,
            "05-01 10:00:00",
            "INFO",
            source="gpu_worker.py:1",
            logger="vllm",
        ),
    ),
    (
        "[vllm] (APIServer pid=12) " + MESSAGE,
        Parts(MESSAGE, None, None, None, process="APIServer", pid=12),
    ),
    (
        "Captured: (EngineCore pid=289) " + MESSAGE,
        Parts(MESSAGE, None, None, None, process="EngineCore", pid=289),
    ),
    # must-not: a head of more than three words, or text with parentheses, is the message's own
    (
        "Worker failed with the error (EngineCore pid=289) ERROR 09-09 06:51:09 [core.py:1] x",
        Parts("Worker failed with the error (EngineCore pid=289) ERROR 09-09 06:51:09 [core.py:1] x"),
    ),
    (MESSAGE, Parts(MESSAGE)),
]


@pytest.mark.parametrize(("line", "expected"), LINES, ids=[str(i) for i in range(len(LINES))])
def test_split_line_reads_every_prefix_form(line: str, expected: Parts) -> None:
    assert split_line(line) == expected


_COLUMNS = ("message", "transport_ts", "vllm_ts", "level", "process", "rank", "pid", "source", "service")


def test_the_logframe_reads_every_line_as_split_line_does() -> None:
    lines = [line for line, _ in LINES]
    frame = parse_lines(pl.Series("raw", lines), "t.log", 1)
    for line, row in zip(lines, frame.iter_rows(named=True), strict=True):
        parts = split_line(line)
        assert tuple(row[c] for c in _COLUMNS) == tuple(getattr(parts, c) for c in _COLUMNS), line


def test_vllm_json_logging_fills_the_same_columns() -> None:
    """`--logging-config.formatter json` / python-json-logger: one LogRecord per line."""
    record = json.dumps(
        {
            "asctime": "2025-11-04 15:23:28,123",
            "levelname": "ERROR",
            "name": "vllm.v1.engine.core",
            "processName": "EngineCore_DP0",
            "vllm_process_name": "EngineCore_DP0",
            "process": 263,
            "filename": "core.py",
            "lineno": 718,
            "message": "EngineCore failed to start.",
        }
    )
    shipped = json.dumps({"log": "INFO 11-04 15:23:29 [core.py:70] ready\n", "time": "2025-11-04T15:23:29Z"})
    frame = parse_lines(pl.Series("raw", [record, shipped]), "t.log", 1, json_lines=True)
    rows = list(frame.iter_rows(named=True))
    assert tuple(rows[0][c] for c in _COLUMNS) == (
        "EngineCore failed to start.",
        None,
        "11-04 15:23:28",
        "ERROR",
        "EngineCore_DP0",
        None,
        263,
        "core.py:718",
        None,
    )
    assert (rows[1]["message"], rows[1]["transport_ts"], rows[1]["level"]) == (
        "ready",
        "2025-11-04T15:23:29Z",
        "INFO",
    )
    for line, row in zip([record, shipped], rows, strict=True):
        parts = split_line(line, json_lines=True)
        assert tuple(row[c] for c in _COLUMNS) == tuple(getattr(parts, c) for c in _COLUMNS)
    # A shipper's own `level` is its guess, not the logger's: only a LogRecord's levelname counts.
    guess = json.dumps({"ts": "2025-11-04T15:23:29Z", "level": "info", "msg": MESSAGE})
    assert split_line(guess, json_lines=True) == Parts(MESSAGE, "2025-11-04T15:23:29Z")
    # The main process (API server, V0 engine) prints its text lines unprefixed: its records too.
    main = json.dumps({"levelname": "INFO", "processName": "MainProcess", "process": 1, "message": "m"})
    assert split_line(main, json_lines=True) == Parts("m", level="INFO")
    main_row = parse_lines(pl.Series("raw", [main]), "t.log", 1, json_lines=True).row(0, named=True)
    assert (main_row["process"], main_row["pid"], main_row["level"]) == (None, None, "INFO")
    # A JSON value printed on a line of its own is left as it is.
    assert split_line('{"a": 1}', json_lines=True).message == '{"a": 1}'


def test_the_log_config_reader_and_signatures_use_the_grammar() -> None:
    line = "[pod/vllm-0/vllm] 2025-09-21T18:00:01Z (APIServer pid=1) INFO 11-04 15:23:28 [api_server.py:1839] vLLM API server version 0.11.0"
    assert strip_line(line) == ("vLLM API server version 0.11.0", "api_server.py")
    assert strip_line("Sep 21 18:05:01 node vllm[3]: INFO 11-04 15:23:28 [core.py:1] x") == ("x", "core.py")
    assert normalise("2025-09-21T18:00:01.5Z stderr F [rank3]: " + MESSAGE) == normalise(MESSAGE)


def test_strip_ansi_takes_every_terminal_escape() -> None:
    assert (
        strip_ansi("\x1b[1;36mA\x1b[0;0m \x1b]8;;http://x\x07link\x1b]8;;\x07 \x1b(Bz\x1b[2K") == "A link z"
    )
    assert strip_ansi("plain") == "plain"


def _shipped(lines: list[str]) -> dict[str, list[str]]:
    """The same server start through transports the old log-config reader did not know."""
    return {
        "cri-file": [f"2025-11-04T15:23:2{i}.5Z stdout F {line}" for i, line in enumerate(lines)],
        "journald-short-iso": [f"2025-11-04T15:23:28+0100 gpu7 vllm[3]: {line}" for line in lines],
        "shipper-tag-kubectl": [f"[vllm]: [pod/vllm-0/vllm] 2025-11-04T15:23:28Z {line}" for line in lines],
        "vllm-json": [
            json.dumps(
                {"asctime": "2025-11-04 15:23:28,001", "levelname": "INFO", "processName": "MainProcess",
                 "process": 1, "filename": "api_server.py", "lineno": 1839, "message": split_line(line).message}
            )
            for line in lines
        ],
    }  # fmt: skip


@pytest.mark.parametrize("transport", sorted(_shipped(["x"])))
def test_a_log_triage_reads_has_its_configuration_read(transport: str) -> None:
    from vllm_triage.parsers import vllm_log_config

    lines = [
        "(APIServer pid=1) INFO 11-04 15:23:28 [api_server.py:1839] vLLM API server version 0.11.0",
        "(APIServer pid=1) INFO 11-04 15:23:28 [utils.py:233] non-default args: {'model': 'Qwen/Qwen3-8B', "
        "'tensor_parallel_size': 2}",
    ]
    text = "\n".join(_shipped(lines)[transport]) + "\n"
    assert vllm_log_config.looks_like(text)
    result = vllm_log_config.parse(text, "vllm.log")
    assert result.facts["vllm.version"].value == "0.11.0"
    assert result.knobs["arg.tensor_parallel_size"].value == 2


def test_ray_repeat_tail_is_dropped_in_linear_time() -> None:
    # Fuzz finding: `\s*\[repeated …\]\s*$` was tried at every space of a long line — a 160 KB
    # line of spaces took seconds per line in the Python path (sniffing a log, launch pastes).
    import time

    from vllm_triage.ingest.prefixes import split_line

    tagged = "INFO 11-20 10:02:25 pynccl.py:69] vLLM is using nccl==2.21.5 [repeated 6x across cluster] "
    assert split_line(tagged).message == "vLLM is using nccl==2.21.5"
    assert split_line("a [repeated 2x across cluster] b").message == "a [repeated 2x across cluster] b"
    started = time.process_time()
    long_line = "INFO 11-20 10:02:25 core.py:1] x" + " " * 400_000 + "y"
    assert split_line(long_line).message.endswith("y")
    assert split_line("z" + " " * 400_000 + "[repeated 3x across cluster]").message == "z"
    assert time.process_time() - started < 1.0


def test_last_redraw_is_taken_in_linear_time() -> None:
    # Fuzz finding: `([^\r]*)$` searched from every start, each scanning to the next `\r`: a log
    # line of 70 KB of tabs and then a redraw took over 10 s.
    import time

    from vllm_triage.ingest.prefixes import split_line

    assert split_line("Loading  10%\rLoading  50%\rINFO 10-14 07:02:55 [core.py:1] done\r").message == "done"
    started = time.process_time()
    assert split_line("INFO 10-14 07:02:55 [core.py:1] x" + "\t" * 200_000 + "\rlast").message == "last"
    assert time.process_time() - started < 1.0


def test_a_relayed_line_of_repeated_pid_words_is_read_in_linear_time() -> None:
    # Review finding: `\([A-Za-z_][^()]*pid=[^()]*\) ` in the relay's process head backtracked
    # over every `pid=` (80,000 of them: 65 s); the head is now bounded
    import time

    started = time.process_time()
    for line in (
        "2024-05-01 10:00:00 (" + "pid=" * 200_000,
        "2024-05-01 10:00:00 - x - INFO - (" + "apid=" * 200_000 + ") ",
    ):
        assert split_line(line).process is None  # no vLLM line inside: nothing relayed
    assert time.process_time() - started < 1.0


BOX_ROWS = ("│ text │", "│  x", "│ │", "│   ", "┃\tabc ┃  ", "  ║ a b  ║", "│a│", "│ a │ b │", "x │ y", "│")


@pytest.mark.parametrize("row", BOX_ROWS)
def test_strip_box_keeps_what_the_box_pattern_keeps(row: str) -> None:
    # The LogFrame reads BOX with Rust's regex; the Python reader cuts the same text by hand.
    boxed = re.match(BOX, row) if re.match(BOX_START, row) else None
    assert strip_box(row) == (boxed.group("inner") if boxed else row)


def test_a_box_row_with_a_long_blank_run_is_linear() -> None:
    # `│a`, blanks, `b`: BOX's lazy inner in Python's re retried every split of the run (2,000: 9 s)
    def cost(n: int) -> float:
        started = time.process_time()
        split_line("│a" + " " * n + "b")
        return time.process_time() - started

    small, big = cost(3_000), cost(30_000)
    assert big < 25 * small + 0.5, (small, big)
