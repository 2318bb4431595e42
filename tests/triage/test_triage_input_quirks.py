"""Issue 2 item 3: what real logs look like once they have travelled.

The same failure is shipped through every transport a colleague may have used (docker -t,
compose, kubectl, CRI files, journald, PowerShell redirects, terminal UIs, JSON-lines, colour,
CRLF, broken bytes, NUL padding): the verdict must not move, the line number must point into the
file as given, and `first_error.text` must be that file's line, verbatim.
"""

from __future__ import annotations

import codecs
import json
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from vllm_triage.logframe import parse_lines

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
TriageJson = Callable[..., dict[str, Any]]


@dataclass(frozen=True)
class Expected:
    line: int
    rule: str
    phase: str
    process: str | None
    milestones: tuple[str, ...]


BASES: dict[str, Expected] = {
    "v1-0.10.2-tp1-profile-oom.log": Expected(
        72,
        "oom.torch",
        "engine_reserve",
        "EngineCore_DP0",
        (
            "platform",
            "version",
            "args",
            "model_resolved",  # ModelConfig's `Resolved architecture: Qwen2ForCausalLM`
            "engine_banner",
            "distributed_init",
            "model_load_start",
            "attn_backend",  # V1 logs the backend while load_model builds the Attention layers
            "weights_loaded",
            "profiling",
        ),
    ),
    "v1-0.9.2-tp4-worker-nccl.log": Expected(
        58,
        "cuda.nccl_error",
        "cuda_init",
        "VllmWorker rank=2",
        ("platform", "version", "args", "engine_banner", "distributed_init"),
    ),
    "v0-0.6.4-ray-multinode-nccl.log": Expected(
        30,
        "cuda.nccl_error",
        "cuda_init",
        "RayWorkerWrapper@10.20.0.12",
        ("version", "args", "engine_banner", "distributed_init"),
    ),
    "v0-0.6.3-mq-tp2-safetensors.log": Expected(
        40,
        "weights.safetensors_corrupt",
        "weight_load",
        "VllmWorkerProcess",
        ("version", "args", "engine_banner", "distributed_init", "model_load_start"),
    ),
}


def docker_ts(i: int) -> str:
    """`docker logs -t` / kubectl --timestamps: RFC 3339, UTC, nanoseconds."""
    return f"2025-09-21T18:{i // 60 % 60:02d}:{i % 60:02d}.{(i * 7919) % 10**9:09d}Z"


def _ansi(line: str) -> str:
    """vLLM's ColoredFormatter on a TTY (`docker run -t`): cyan process prefix, coloured level,
    grey timestamp and location."""
    colours = {"INFO": "32", "WARNING": "33", "ERROR": "31", "DEBUG": "37"}

    def level(m: re.Match[str]) -> str:
        return f"\x1b[{colours[m.group(1)]}m{m.group(1)}\x1b[0m \x1b[90m{m.group(2)} {m.group(3)}\x1b[0m"

    line = re.sub(r"^\(([^)]*pid=\d+[^)]*)\) ", lambda m: f"\x1b[0;36m({m.group(1)})\x1b[0;0m ", line)
    return re.sub(
        r"\b(INFO|WARNING|ERROR|DEBUG) (\d\d-\d\d \d\d:\d\d:\d\d) (\[?[\w.]+:\d+\])", level, line, count=1
    )


Transform = Callable[[list[str]], bytes]


def _text(lines: list[str], end: str = "\n") -> bytes:
    return (end.join(lines) + end).encode()


TRANSFORMS: dict[str, Transform] = {
    "plain": lambda ls: _text(ls),
    "crlf": lambda ls: _text(ls, "\r\n"),
    "docker-logs-t": lambda ls: _text([f"{docker_ts(i)} {ln}" for i, ln in enumerate(ls)]),
    "compose": lambda ls: _text([f"vllm-1  | {ln}" for ln in ls]),
    "compose-colour-t": lambda ls: _text(
        [f"\x1b[36mvllm-openai-1  |\x1b[0m {docker_ts(i)} {ln}" for i, ln in enumerate(ls)]
    ),
    "kubectl-prefix-timestamps": lambda ls: _text(
        [f"[pod/vllm-7d9c5b6f4-x2x9q/vllm] {docker_ts(i)} {ln}" for i, ln in enumerate(ls)]
    ),
    "cri-file": lambda ls: _text(
        [f"{docker_ts(i)} {'stderr' if 'Traceback' in ln else 'stdout'} F {ln}" for i, ln in enumerate(ls)]
    ),
    "journald": lambda ls: _text([f"Sep 21 18:05:01 gpu-node-07 vllm[361682]: {ln}" for ln in ls]),
    "journald-russian-month": lambda ls: _text(
        [f"сен 21 18:05:01 gpu-node-07 bash[361682]: {ln}" for ln in ls]
    ),
    "journald-german-month": lambda ls: _text(
        [f"Okt 02 18:05:01 dgx-a100-3 vllm-serve.sh[2011]: {ln}" for ln in ls]
    ),
    # journalctl -o short-precise / -o short-iso
    "journald-short-precise": lambda ls: _text(
        [
            f"Sep 21 18:05:{i % 60:02d}.{i * 1013 % 10**6:06d} gpu-node-07 vllm[361682]: {ln}"
            for i, ln in enumerate(ls)
        ]
    ),
    "journald-short-iso": lambda ls: _text(
        [f"2025-09-21T18:05:01+0200 gpu-node-07 vllm[361682]: {ln}" for ln in ls]
    ),
    "ansi-colour": lambda ls: _text([_ansi(ln) for ln in ls]),
    "terminal-ui-box": lambda ls: _text(
        ["╭─ vllm ─ logs " + "─" * 186 + "╮"] + [f"│ {ln:<198} │" for ln in ls] + ["╰" + "─" * 200 + "╯"]
    ),
    "json-lines-docker": lambda ls: _text(
        [json.dumps({"log": ln + "\n", "stream": "stdout", "time": docker_ts(i)}) for i, ln in enumerate(ls)]
    ),
    "json-lines-message": lambda ls: _text(
        [
            json.dumps({"timestamp": docker_ts(i), "severity": "INFO", "message": ln})
            for i, ln in enumerate(ls)
        ]
    ),
    # A log shipper's export (Vector / Fluent Bit to Loki): `msg`, `ts`, Kubernetes metadata.
    "json-lines-msg-shipper": lambda ls: _text(
        [
            json.dumps(
                {
                    "ts": docker_ts(i),
                    "level": "info",
                    "msg": ln,
                    "kubernetes": {"pod_name": "vllm-0", "namespace_name": "inference"},
                }
            )
            for i, ln in enumerate(ls)
        ]
    ),
    # Windows PowerShell 5: `docker logs vllm > vllm.log` writes UTF-16 LE with a BOM and CRLF.
    "powershell-utf16": lambda ls: ("\r\n".join(ls) + "\r\n").encode("utf-16"),
    "utf8-bom": lambda ls: codecs.BOM_UTF8 + _text(ls, "\r\n"),
    # A collector that cut multi-byte characters in half, and a Latin-1 byte in a path.
    "invalid-utf8": lambda ls: (
        _text(ls)
        .replace(b"max_model_len", b"max_mod\xc3(el_len", 1)
        .replace(b"/usr/local/lib", b"/usr/lo\xe9cal/lib", 1)
    ),
    # A NUL run in the middle (a crashed writer) and one at the very start (copytruncate).
    "nul-run-inside": lambda ls: _text(ls[:6]) + b"\x00" * 5000 + _text(ls[6:]),
    "nul-padding-at-start": lambda ls: b"\x00" * 70_000 + _text(ls),
}


def _decoded_lines(data: bytes) -> list[str]:
    if data.startswith(codecs.BOM_UTF16_LE):
        text = data.decode("utf-16")
    else:
        text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    return [ln.rstrip("\r").replace("\x00", "") for ln in text.split("\n")]


# Every transport on the two hardest logs (interleaved ranks; Ray with ip and dedup suffixes), the
# common ones on the other two: the matrix stays meaningful and the suite stays fast.
COMMON = ("plain", "crlf", "docker-logs-t", "compose", "ansi-colour", "json-lines-docker", "powershell-utf16")
MATRIX = [
    (base, transform)
    for base in sorted(BASES)
    for transform in sorted(TRANSFORMS)
    if base in ("v1-0.9.2-tp4-worker-nccl.log", "v0-0.6.4-ray-multinode-nccl.log") or transform in COMMON
]


@pytest.mark.parametrize(("base", "transform"), MATRIX)
def test_the_verdict_survives_the_transport(
    base: str, transform: str, tmp_path: Path, triage_json: TriageJson
) -> None:
    expected = BASES[base]
    lines = (LOGS / base).read_text(encoding="utf-8").splitlines()
    data = TRANSFORMS[transform](lines)
    given = tmp_path / "vllm.log"
    given.write_bytes(data)

    result = triage_json(given)

    fe = result["first_error"]
    offset = 1 if transform == "terminal-ui-box" else 0  # the box's top border is line 1
    assert result["phase"] == expected.phase
    assert fe["rule"] == expected.rule
    assert fe["line"] == expected.line + offset
    assert fe["process"] == expected.process
    assert tuple(m["marker"] for m in result["milestones"]) == expected.milestones
    assert fe["text"] == _decoded_lines(data)[fe["line"] - 1]
    assert "\x1b" not in fe["message"]
    if transform in (
        "docker-logs-t",
        "kubectl-prefix-timestamps",
        "cri-file",
        "json-lines-docker",
        "compose-colour-t",
        "json-lines-message",
        "json-lines-msg-shipper",
    ):
        assert fe["timestamp"] == docker_ts(expected.line - 1)


def test_crlf_input_keeps_no_carriage_return(tmp_path: Path, triage_json: TriageJson) -> None:
    lines = (LOGS / "v1-0.9.2-tp4-worker-nccl.log").read_text().splitlines()
    given = tmp_path / "paste.txt"
    given.write_bytes(_text(lines, "\r\n"))
    fe = triage_json(given)["first_error"]
    assert fe["text"] == lines[57]
    assert not fe["message"].endswith("\r")


# --------------------------------------------------------------------------------------------
# Line-level parsing: one LogFrame row per input line, prefixes split into columns.


def _row(line: str) -> dict:
    return parse_lines(pl.Series([line]), "t.log", 1).row(0, named=True)


@pytest.mark.parametrize(
    ("line", "process", "pid", "rank", "message"),
    [
        # V0 multiprocessing worker (v0.4 – v0.10.2)
        (
            "(VllmWorkerProcess pid=4242) INFO 08-06 12:34:56 model_runner.py:1071] Loading model weights took 6.2000 GB",
            "VllmWorkerProcess",
            4242,
            None,
            "Loading model weights took 6.2000 GB",
        ),
        # V1 worker, v0.6.5 – v0.10.0
        (
            "(VllmWorker rank=3 pid=268) ERROR 05-12 19:01:18 [multiproc_executor.py:470] WorkerProc hit an exception.",
            "VllmWorker rank=3",
            268,
            3,
            "WorkerProc hit an exception.",
        ),
        # V1 worker, v0.10.1
        (
            "(VllmWorker TP0 pid=278) INFO 08-27 16:40:29 [pynccl.py:70] vLLM is using nccl==2.26.2",
            "VllmWorker TP0",
            278,
            0,
            "vLLM is using nccl==2.26.2",
        ),
        # V1 worker, v0.10.2+
        (
            "(Worker_TP2 pid=1043) INFO 11-02 10:00:01 [gpu_worker.py:298] Available KV cache memory: 21.07 GiB",
            "Worker_TP2",
            1043,
            2,
            "Available KV cache memory: 21.07 GiB",
        ),
        (
            "(Worker_PP1_TP3 pid=1051) INFO 11-02 10:00:01 [parallel_state.py:1208] rank 7 in world size 8 is assigned as "
            "DP rank 0, PP rank 1, TP rank 3, EP rank 3",
            "Worker_PP1_TP3",
            1051,
            3,
            "rank 7 in world size 8 is assigned as DP rank 0, PP rank 1, TP rank 3, EP rank 3",
        ),
        (
            "(Worker_DP0_TP1_EP1 pid=880) WARNING 11-02 10:00:02 [fused_moe.py:728] Using default MoE config.",
            "Worker_DP0_TP1_EP1",
            880,
            1,
            "Using default MoE config.",
        ),
        (
            "(Worker pid=870) INFO 11-02 09:59:58 [__init__.py:216] Automatically detected platform cuda.",
            "Worker",
            870,
            None,
            "Automatically detected platform cuda.",
        ),
        # EngineCore in every generation
        (
            "(EngineCore_0 pid=211) ERROR 08-27 16:42:27 [core.py:700] EngineCore encountered a fatal error.",
            "EngineCore_0",
            211,
            None,
            "EngineCore encountered a fatal error.",
        ),
        (
            "(EngineCore_DP0 pid=157) ERROR 09-21 11:05:01 [core.py:718] EngineCore failed to start.",
            "EngineCore_DP0",
            157,
            None,
            "EngineCore failed to start.",
        ),
        (
            "(EngineCore pid=88) INFO 04-28 19:20:45 [kv_cache_utils.py:1301] GPU KV cache size: 431,104 tokens",
            "EngineCore",
            88,
            None,
            "GPU KV cache size: 431,104 tokens",
        ),
        (
            "(APIServer pid=1) INFO 10-14 07:02:11 [api_server.py:1839] vLLM API server version 0.11.0",
            "APIServer",
            1,
            None,
            "vLLM API server version 0.11.0",
        ),
        # Stacked prefixes: the innermost one is the process that printed the line.
        (
            '(APIServer pid=100) (EngineCore_0 pid=200)   File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", '
            "line 390, in run_engine_core",
            "EngineCore_0",
            200,
            None,
            '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 390, in run_engine_core',
        ),
        # Ray: remote node (ip), same node, before the actor class is known, and deduplication.
        (
            "(RayWorkerWrapper pid=4711, ip=10.1.2.3) INFO 03-02 10:11:12 model_runner.py:1071] Loading model weights took "
            "6.2000 GB",
            "RayWorkerWrapper@10.1.2.3",
            4711,
            None,
            "Loading model weights took 6.2000 GB",
        ),
        (
            "(RayWorkerWrapper pid=4712) INFO 03-02 10:11:12 pynccl.py:69] vLLM is using nccl==2.21.5 [repeated 6x across "
            "cluster]",
            "RayWorkerWrapper",
            4712,
            None,
            "vLLM is using nccl==2.21.5",
        ),
        (
            "\x1b[36m(RayWorkerWrapper pid=4711, ip=10.1.2.3)\x1b[0m ERROR 03-02 10:11:14 worker_base.py:467] Error executing "
            "method init_device. This might cause deadlock in distributed execution.\x1b[32m [repeated 7x across cluster]\x1b[0m",
            "RayWorkerWrapper@10.1.2.3",
            4711,
            None,
            "Error executing method init_device. This might cause deadlock in distributed execution.",
        ),
        (
            "(pid=4700, ip=10.1.2.3) INFO 03-02 10:11:05 importing.py:15] Triton not installed or not compatible",
            "pid@10.1.2.3",
            4700,
            None,
            "Triton not installed or not compatible",
        ),
        # torch's per-rank prefix on uncaught exceptions and c10d logging
        ("[rank1]: Traceback (most recent call last):", None, None, 1, "Traceback (most recent call last):"),
        (
            "[rank0]:[E1203 09:01:02.114581552 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
            "timeout",
            None,
            None,
            0,
            "[Rank 0] Watchdog caught collective operation timeout",
        ),
    ],
)
def test_process_prefixes_of_every_generation(
    line: str, process: str | None, pid: int | None, rank: int | None, message: str
) -> None:
    row = _row(line)
    assert (row["process"], row["pid"], row["rank"], row["message"]) == (process, pid, rank, message)
    assert row["raw"] == line


@pytest.mark.parametrize(
    ("line", "level", "vllm_ts", "source", "message"),
    [
        # V0 / ≤ v0.7.3: no opening bracket
        (
            "INFO 08-06 12:34:56 api_server.py:528] vLLM API server version 0.6.3",
            "INFO",
            "08-06 12:34:56",
            "api_server.py:528",
            "vLLM API server version 0.6.3",
        ),
        # v0.8+: bracketed location
        (
            "WARNING 03-18 07:12:03 [arg_utils.py:1659] Detected VLLM_USE_V1=1 with Engine in background thread.",
            "WARNING",
            "03-18 07:12:03",
            "arg_utils.py:1659",
            "Detected VLLM_USE_V1=1 with Engine in background thread.",
        ),
        # v0.11+ at DEBUG: a shortened relative path
        (
            "DEBUG 07-15 07:11:34 [v1/engine/utils.py:1239] Waiting for 1 local, 0 remote core engine proc(s) to start.",
            "DEBUG",
            "07-15 07:11:34",
            "v1/engine/utils.py:1239",
            "Waiting for 1 local, 0 remote core engine proc(s) to start.",
        ),
        # VLLM_LOGGING_PREFIX before the level
        (
            "[node-3] INFO 02-02 02:02:02 [loader.py:447] Loading weights took 14.21 seconds",
            "INFO",
            "02-02 02:02:02",
            "loader.py:447",
            "Loading weights took 14.21 seconds",
        ),
        # uvicorn
        ("INFO:     Application startup complete.", "INFO", None, None, "Application startup complete."),
        # CRITICAL from the V0 launcher
        (
            "CRITICAL 10-21 09:20:11 launcher.py:99] MQLLMEngine is already dead, terminating server process",
            "CRITICAL",
            "10-21 09:20:11",
            "launcher.py:99",
            "MQLLMEngine is already dead, terminating server process",
        ),
        # torch c10d: month unpadded (`W808` is August 8th)
        (
            "[W808 14:30:06.203311942 ProcessGroupNCCL.cpp:1538] Warning: WARNING: destroy_process_group() was not called",
            "WARNING",
            "08-08 14:30:06",
            "ProcessGroupNCCL.cpp:1538",
            "Warning: WARNING: destroy_process_group() was not called",
        ),
        # Ray's own Python logging
        (
            "2024-11-20 10:02:15,482\tINFO worker.py:1654 -- Connecting to existing Ray cluster at address: 10.20.0.11:6379...",
            "INFO",
            "2024-11-20 10:02:15",
            "worker.py:1654",
            "Connecting to existing Ray cluster at address: 10.20.0.11:6379...",
        ),
        # No logger at all (VLLM_CONFIGURE_LOGGING=0, raw tracebacks)
        (
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            None,
            None,
            None,
            "RuntimeError: CUDA error: an illegal memory access was encountered",
        ),
    ],
)
def test_logger_formats_v0_and_v1(
    line: str, level: str | None, vllm_ts: str | None, source: str | None, message: str
) -> None:
    row = _row(line)
    assert (row["level"], row["vllm_ts"], row["source"], row["message"]) == (level, vllm_ts, source, message)


def test_tqdm_carriage_return_redraws_keep_what_the_terminal_showed(
    tmp_path: Path, triage_json: TriageJson
) -> None:
    """CUDA-graph capture bars are redrawn with `\\r`; the log holds every redraw on one line."""
    bar = "\r".join(
        f"Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): {p:3d}%|{'█' * (p // 10):<10}| {n}/67 [00:{n // 3:02d}<00:10, 3.1it/s]"
        for p, n in ((0, 0), (12, 8), (47, 31), (70, 47))
    )
    row = _row("(EngineCore_DP0 pid=157) " + bar)
    assert row["message"].startswith("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  70%")
    assert row["process"] == "EngineCore_DP0"

    lines = (LOGS / "v1-0.10.2-tp1-profile-oom.log").read_text().splitlines()
    # A hang during capture: the log ends on the last redraw of the bar.
    cut = lines[:30] + ["(EngineCore_DP0 pid=157) " + bar]
    given = tmp_path / "hang.log"
    given.write_text("\n".join(cut) + "\n")
    result = triage_json(given)
    assert result["phase"] == "engine_reserve"
    assert result["first_error"]["category"] == "hang"
    assert result["first_error"]["line"] == 31
    assert result["milestones"][-1]["marker"] == "cuda_graphs"


def test_cri_partial_records_stay_one_row_per_record(tmp_path: Path, triage_json: TriageJson) -> None:
    """The kubelet splits lines longer than 16 KiB into `P` records ended by an `F` record."""
    lines = (LOGS / "v1-0.9.2-tp4-worker-nccl.log").read_text().splitlines()
    out = []
    for i, line in enumerate(lines):
        ts = docker_ts(i)
        if line.startswith("INFO 07-14 03:22:00 [core.py:69] Initializing"):
            out += [
                f"{ts} stdout P {line[:700]}",
                f"{ts} stdout P {line[700:1400]}",
                f"{ts} stdout F {line[1400:]}",
            ]
        else:
            out.append(f"{ts} stdout F {line}")
    given = tmp_path / "vllm-0_default_0.log"
    given.write_text("\n".join(out) + "\n")
    result = triage_json(given)
    assert result["phase"] == "cuda_init"
    assert result["first_error"]["line"] == 58 + 2  # two extra records before it
    assert result["first_error"]["rule"] == "cuda.nccl_error"
    assert "engine_banner" in [m["marker"] for m in result["milestones"]]


def test_torch_rank_prefixed_traceback(tmp_path: Path, triage_json: TriageJson) -> None:
    """A V0 TP worker killed by an uncaught exception: torch prefixes every line with [rankN]:."""
    log = textwrap.dedent(
        """\
        INFO 02-11 06:40:12 api_server.py:712] vLLM API server version 0.7.2
        INFO 02-11 06:40:19 llm_engine.py:234] Initializing a V0 LLM engine (v0.7.2) with config: model='Qwen/Qwen2.5-72B-Instruct-AWQ', tensor_parallel_size=2
        INFO 02-11 06:40:25 model_runner.py:1110] Starting to load model Qwen/Qwen2.5-72B-Instruct-AWQ...
        [rank1]: Traceback (most recent call last):
        [rank1]:   File "/usr/local/lib/python3.12/dist-packages/vllm/worker/model_runner.py", line 1112, in load_model
        [rank1]:     self.model = get_model(vllm_config=self.vllm_config)
        [rank1]:   File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/model_loader/weight_utils.py", line 460, in safetensors_weights_iterator
        [rank1]:     with safe_open(st_file, framework="pt") as f:
        [rank1]: safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer
        ERROR 02-11 06:40:31 multiproc_worker_utils.py:124] Worker VllmWorkerProcess pid 301 died, exit code: 1
        INFO 02-11 06:40:31 multiproc_worker_utils.py:128] Killing local vLLM worker processes
        """
    )
    given = tmp_path / "rank.log"
    given.write_text(log)
    result = triage_json(given)
    fe = result["first_error"]
    assert (fe["line"], fe["rank"], fe["rule"], result["phase"]) == (
        9,
        1,
        "weights.safetensors_corrupt",
        "weight_load",
    )
    assert fe["block"] == {"start": 4, "end": 9}


def test_one_nul_byte_in_a_line_does_not_make_a_log_binary(tmp_path: Path, triage_json: TriageJson) -> None:
    lines = (LOGS / "v0-0.6.3-mq-tp2-safetensors.log").read_text().splitlines()
    given = tmp_path / "vllm.log"
    given.write_bytes(_text(lines).replace(b"Worker ready", b"Worker\x00ready", 1))
    result = triage_json(given)
    assert result["first_error"]["line"] == 40
    assert "distributed_init" in [m["marker"] for m in result["milestones"]]


def test_wrapped_terminal_ui_box(tmp_path: Path, triage_json: TriageJson) -> None:
    """A pane 100 columns wide cuts every longer line into box rows: they are read re-joined."""
    width = 100
    lines = (LOGS / "v1-0.9.2-tp4-worker-nccl.log").read_text().splitlines()
    boxed = []
    for line in lines:
        for start in range(0, max(len(line), 1), width):
            boxed.append(f"│ {line[start : start + width]:<{width}} │")
    given = tmp_path / "box.txt"
    given.write_text("\n".join(boxed) + "\n")
    result = triage_json(given)
    assert result["phase"] == "cuda_init"
    assert "NCCL error: unhandled system error" in result["first_error"]["message"]


def test_github_issue_paste_with_collect_env_before_the_log(tmp_path: Path, triage_json: TriageJson) -> None:
    """vLLM's bug template: collect_env output in a <details> block, then the log in a fence.
    The file is a log for triage even though it starts like collect_env output."""
    collect_env = (
        Path(__file__).resolve().parents[2] / "samples" / "healthy-v0" / "collect_env.txt"
    ).read_text()
    log = (LOGS / "v1-0.9.2-tp4-worker-nccl.log").read_text()
    body = (
        "### Your current environment\n\n<details>\n<summary>The output of <code>python collect_env.py</code>"
        f"</summary>\n\n```text\n{collect_env}```\n\n</details>\n\n### 🐛 Describe the bug\n\n"
        "Four A100s, `vllm serve mistralai/Mistral-Small-24B-Instruct-2501 -tp 4` dies right after NCCL init:\n\n"
        f"```\n{log}```\n"
    )
    given = tmp_path / "issue.md"
    given.write_text(body)
    result = triage_json(given)
    assert result["inputs"][0]["role"] == "vllm_log"
    assert result["phase"] == "cuda_init"
    fe = result["first_error"]
    assert fe["rule"] == "cuda.nccl_error"
    assert fe["text"] == body.splitlines()[fe["line"] - 1] == log.splitlines()[57]
