"""Root vs consequence (vllm-anatomy §4.7): the first root error block and the phase, never a
consequence while a root is in the input; only-consequence pastes, hangs and kills said as such.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
TriageJson = Callable[..., dict[str, Any]]


@dataclass(frozen=True)
class Case:
    phase: str
    line: int | None
    rule: str | None
    category: str | None
    kind: str | None = "root"
    block: tuple[int, int] | None = None
    consequences: frozenset[str] = field(default_factory=frozenset)  # rule ids that must be listed
    findings: frozenset[str] = field(default_factory=frozenset)  # finding ids that must be present


CASES: dict[str, Case] = {
    # V1, TP=1: EngineCore logs the root; `Process EngineCore_DP0:` repeats it raw; the API
    # server says "Engine core initialization failed". The OOM's frames put it in profiling.
    "v1-0.10.2-tp1-profile-oom.log": Case(
        "engine_reserve",
        72,
        "oom.torch",
        "oom_engine_reserve",
        block=(31, 72),
        consequences=frozenset(
            {"engine.core_failed_to_start", "engine.duplicate_traceback_header", "engine.core_init_failed"}
        ),
        findings=frozenset({"root-cause.oom_engine_reserve", "next-step"}),
    ),
    # V1, TP=4: two workers fail in interleaved output; the earliest root wins, the engine's
    # "WorkerProc initialization failed" and the API server's line are consequences.
    "v1-0.9.2-tp4-worker-nccl.log": Case(
        "cuda_init",
        58,
        "cuda.nccl_error",
        "nccl_init_failed",
        block=(29, 58),
        consequences=frozenset(
            {"engine.core_failed_to_start", "engine.duplicate_traceback_header", "engine.core_init_failed"}
        ),
        findings=frozenset({"root-cause.nccl_init_failed", "same-error-other-processes"}),
    ),
    # V1 runtime death: a worker's illegal memory access while serving; then worker died,
    # Worker failed with error, EngineDeadError, 500s.
    "v1-0.10.1-tp2-runtime-illegal-access.log": Case(
        "request",
        64,
        "cuda.illegal_memory_access",
        "illegal_memory_access",
        block=(48, 67),
        consequences=frozenset(
            {
                "engine.worker_hit_exception",
                "engine.worker_died",
                "engine.executor_failed",
                "engine.dead",
                "engine.http_500",
            }
        ),
        findings=frozenset({"root-cause.illegal_memory_access"}),
    ),
    # V0 MQ engine: the worker's traceback under "Exception in worker … while processing method
    # load_model" is the root; the engine process's raw traceback, the -15 exit of the worker
    # and "Engine process failed to start" are not.
    "v0-0.6.3-mq-tp2-safetensors.log": Case(
        "weight_load",
        40,
        "weights.safetensors_corrupt",
        "weights_corrupt",
        block=(21, 40),
        consequences=frozenset(
            {
                "engine.method_wrapper",
                "engine.duplicate_traceback_header",
                "engine.worker_died",
                "engine.process_failed_to_start",
            }
        ),
    ),
    # Ray: "Error executing method init_device. This might cause deadlock…" wraps the root.
    "v0-0.6.4-ray-multinode-nccl.log": Case(
        "cuda_init",
        30,
        "cuda.nccl_error",
        "nccl_init_failed",
        block=(17, 33),
        consequences=frozenset({"engine.method_wrapper", "engine.process_failed_to_start"}),
    ),
    # An OOM after a CUDA error is the sticky CUDA context, not a memory problem.
    "v1-0.8.5-illegal-access-then-oom.log": Case(
        "request",
        22,
        "cuda.illegal_memory_access",
        "illegal_memory_access",
        block=(11, 25),
        consequences=frozenset(
            {"engine.worker_hit_exception", "engine.executor_failed", "engine.dead", "engine.http_500"}
        ),
        findings=frozenset({"oom-after-cuda-error"}),
    ),
    # NCCL watchdog: the first watchdog line is the marker; the shm-broadcast warnings before it
    # and torch's "taking the entire process down" after it are symptoms.
    "v1-0.10.0-tp4-nccl-watchdog.log": Case(
        "request",
        12,
        "nccl.watchdog_timeout",
        "nccl_timeout",
        block=(12, 12),
        consequences=frozenset(
            {
                "hang.shm_broadcast",
                "nccl.watchdog_cascade",
                "engine.worker_died",
                "engine.executor_failed",
                "engine.dead",
                "engine.http_500",
            }
        ),
        # rank 0's own watchdog line (13) is another rank reporting, not part of rank 2's block
        findings=frozenset({"root-cause.nccl_timeout", "same-error-other-processes"}),
    ),
    # Only consequences were pasted: say so, and say what to collect.
    "only-consequences-paste.txt": Case(
        "request",
        1,
        "engine.dead",
        "cascade",
        kind="consequence_only",
        consequences=frozenset({"engine.http_500"}),
        findings=frozenset({"only-consequence"}),
    ),
    # Healthy serving, then an orderly shutdown with its usual noise: no failure.
    "v1-0.11.0-healthy-then-shutdown.log": Case("none", None, None, None, kind=None),
    # The log stops after "Starting to load model": a hang (or a kill) in weight_load.
    "v1-0.10.2-hang-in-weight-load.log": Case(
        "weight_load",
        12,
        "marker.model_load_start",
        "hang",
        kind="hang",
        block=(12, 12),
        findings=frozenset({"hang"}),
    ),
    # SIGTERM during CUDA-graph capture: the step in progress never finished.
    "v1-sigterm-during-graph-capture.log": Case(
        "engine_reserve",
        21,
        "marker.cuda_graphs",
        "hang",
        kind="hang",
        findings=frozenset({"hang"}),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_root_and_phase(name: str, triage_json: TriageJson) -> None:
    case = CASES[name]
    result = triage_json(LOGS / name)
    fe = result["first_error"]

    assert result["phase"] == case.phase
    if case.line is None:
        assert fe is None
        assert result["consequences"] == []
        return
    assert (fe["line"], fe["rule"], fe["category"], fe["kind"]) == (
        case.line,
        case.rule,
        case.category,
        case.kind,
    )
    if case.block:
        assert (fe["block"]["start"], fe["block"]["end"]) == case.block
    listed = {c["rule"] for c in result["consequences"]}
    assert case.consequences <= listed
    assert fe["line"] not in {c["line"] for c in result["consequences"]}
    if case.kind == "root":  # a consequence is never the root while a root is in the input
        assert fe["rule"] not in listed
        assert not fe["rule"].startswith(("engine.", "hang.", "nccl.watchdog_cascade"))
    assert case.findings <= {f["id"] for f in result["findings"]}


def test_the_root_block_holds_the_traceback_and_the_exception(triage_json: TriageJson) -> None:
    fe = triage_json(LOGS / "v1-0.9.2-tp4-worker-nccl.log")["first_error"]
    block = fe["block_lines"]
    assert block[0].endswith("WorkerProc failed to start.")
    assert block[-1].endswith(
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"
    )
    # Interleaved lines of rank 3 are not part of rank 2's block.
    assert all(line.startswith("(VllmWorker rank=2 pid=814)") for line in block)
    assert any("in ncclCommInitRank" in line for line in block)


def test_a_frame_that_names_an_nccl_function_is_not_the_error(triage_json: TriageJson) -> None:
    """`File "…/pynccl_wrapper.py", line 277, in ncclCommInitRank` matches the NCCL rule's words;
    it is a frame of the traceback, not the error line."""
    fe = triage_json(LOGS / "v1-0.9.2-tp4-worker-nccl.log")["first_error"]
    assert "File " not in fe["message"]
    assert fe["message"].startswith("RuntimeError: NCCL error:")


def test_paste_starting_mid_traceback(tmp_path: Path, triage_json: TriageJson) -> None:
    """A paste that begins inside the block still finds its root, and says the head was cut."""
    lines = (LOGS / "v1-0.10.2-tp1-profile-oom.log").read_text().splitlines()
    given = tmp_path / "paste.txt"
    given.write_text("\n".join(lines[55:]) + "\n")
    result = triage_json(given)
    assert result["first_error"]["line"] == 72 - 55
    assert result["phase"] == "engine_reserve"
    assert "paste-starts-mid-block" in {f["id"] for f in result["findings"]}


def test_snippet_without_milestones_takes_the_phase_of_its_rule(
    tmp_path: Path, triage_json: TriageJson
) -> None:
    given = tmp_path / "snippet.txt"
    given.write_text(
        "ValueError: To serve at least one request with the models's max seq len (131072), (20.00 GiB KV cache is "
        "needed, which is larger than the available KV cache memory (1.87 GiB). Based on the available memory, the "
        "estimated maximum model length is 12240. Try increasing `gpu_memory_utilization` or decreasing "
        "`max_model_len` when initializing the engine.\n"
    )
    result = triage_json(given)
    assert result["phase"] == "engine_reserve"
    assert result["first_error"]["rule"] == "kv.max_seq_len_exceeds_cache"
    assert result["milestones"] == []


def test_signal_after_healthy_serving_is_no_failure(tmp_path: Path, triage_json: TriageJson) -> None:
    """Ctrl-C on a V0 server that served requests: KeyboardInterrupt tracebacks are the shutdown."""
    lines = (LOGS / "v1-0.11.0-healthy-then-shutdown.log").read_text().splitlines()
    ready = next(i for i, line in enumerate(lines) if "Application startup complete" in line)
    tail = [
        "(APIServer pid=1) INFO 10-14 09:47:01 [launcher.py:80] [shutdown] API server: trigger received signal=SIGINT",
        "(EngineCore_DP0 pid=94) Traceback (most recent call last):",
        '(EngineCore_DP0 pid=94)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 701, '
        "in run_engine_core",
        "(EngineCore_DP0 pid=94)     engine_core.run_busy_loop()",
        "(EngineCore_DP0 pid=94) KeyboardInterrupt",
        "(APIServer pid=1) ERROR 10-14 09:47:01 [async_llm.py:480] AsyncLLM output_handler failed.",
        "(APIServer pid=1) ERROR 10-14 09:47:01 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: "
        "EngineCore encountered an issue. See stack trace (above) for the root cause.",
    ]
    given = tmp_path / "ctrl-c.log"
    given.write_text("\n".join(lines[: ready + 3] + tail) + "\n")
    result = triage_json(given)
    assert result["phase"] == "none"
    assert result["first_error"] is None
