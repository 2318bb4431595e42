"""Start-up lines that place a log that stops, and short pastes that are still logs.

- ModelConfig's `Resolved architecture: X` (0.10+) ends finding the model: a log that stops there
  hangs in starting the engine (cuda_init), not in finding the model (weight_load).
- CUDAGraphWrapper's `Capturing a cudagraph on (PIECEWISE,…)` (DEBUG) is CUDA-graph capture.
- SIGBUS (abseil's `*** SIGBUS received`, CPython's `Fatal Python error: Bus error`) is a process
  killed over shared memory (vllm#859, vllm#1091, vllm#1771).
- A launch command pasted with the pydantic `Value error, …` line it got is triaged, not refused.
"""

from __future__ import annotations

from pathlib import Path

from tests.triage.conftest import TriageJson
from tests.triage.triage_helpers import write_log

API = "(APIServer pid=2210) INFO 05-02 09:10:11"
HEAD = (
    "INFO 05-02 09:10:02 [__init__.py:216] Automatically detected platform cuda.\n"
    f"{API} [api_server.py:1839] vLLM API server version 0.11.0\n"
    f"{API} [utils.py:233] non-default args: {{'model_tag': 'Qwen/Qwen3-32B', 'tensor_parallel_size': 4}}\n"
)
RESOLVED = (
    f"{API} [model.py:547] Resolved architecture: Qwen3ForCausalLM\n"
    f"{API} [model.py:1510] Using max model len 40960\n"
    "(APIServer pid=2210) WARNING 05-02 09:10:14 [numa_utils.py:74] CPU affinity is already "
    "constrained for this process. Skipping automatic NUMA binding\n"
)


def test_a_log_that_stops_after_the_resolved_architecture_hangs_in_engine_start(
    tmp_path: Path, triage_json: TriageJson
) -> None:
    data = triage_json(write_log(tmp_path, HEAD + RESOLVED))
    assert data["phase"] == "cuda_init"
    assert data["last_milestone"] == "model_resolved"
    assert data["first_error"]["category"] == "hang"


def test_a_log_that_stops_after_the_arguments_still_hangs_in_finding_the_model(
    tmp_path: Path, triage_json: TriageJson
) -> None:
    data = triage_json(write_log(tmp_path, HEAD))
    assert data["phase"] == "weight_load"


def test_the_engine_banner_after_it_moves_the_hang_on(tmp_path: Path, triage_json: TriageJson) -> None:
    log = (
        HEAD
        + RESOLVED
        + (
            "(EngineCore_DP0 pid=2301) INFO 05-02 09:10:20 [core.py:93] Initializing a V1 LLM engine "
            "(v0.11.0) with config: model='Qwen/Qwen3-32B'\n"
            "(EngineCore_DP0 pid=2301) INFO 05-02 09:10:31 [gpu_model_runner.py:2602] Starting to load "
            "model Qwen/Qwen3-32B...\n"
        )
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["phase"] == "weight_load"
    assert data["last_milestone"] == "model_load_start"


def test_a_hang_in_piecewise_cuda_graph_capture(tmp_path: Path, triage_json: TriageJson) -> None:
    w = "(Worker_TP0 pid=42) DEBUG 09-13 16:16:38 [compilation/cuda_graph.py:134]"
    log = "".join(
        f"{w} Capturing a cudagraph on (PIECEWISE,BatchDescriptor(num_tokens={n}, uniform_decode=False))\n"
        for n in (8, 4, 2, 1)
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["phase"] == "engine_reserve"
    assert data["last_milestone"] == "cuda_graphs"
    assert "num_tokens=1," in data["first_error"]["text"]


def test_a_bus_error_is_a_shared_memory_death(tmp_path: Path, triage_json: TriageJson) -> None:
    r = "(RayWorker pid=1451)"
    log = (
        f"{r} *** SIGBUS received at time=1695144916 on cpu 3 ***\n"
        f"{r} PC: @     0x7f7984381bba  (unknown)  (unknown)\n"
        f"{r}     @ 0x6e312d6c63636e2f  (unknown)  (unknown)\n"
        f"{r} Fatal Python error: Bus error\n"
        f"{r}\n"
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["first_error"]["category"] == "shm_too_small"
    assert "SIGBUS received" in data["first_error"]["text"]


def test_a_segfault_is_not_called_a_bus_error(tmp_path: Path, triage_json: TriageJson) -> None:
    data = triage_json(write_log(tmp_path, "(RayWorker pid=1451) Fatal Python error: Segmentation fault\n"))
    assert data["first_error"]["category"] != "shm_too_small"


def test_a_command_pasted_with_the_value_error_it_got(tmp_path: Path, triage_json: TriageJson) -> None:
    paste = (
        "vllm serve Qwen/Qwen2.5-72B-Instruct \\\n"
        "    --max-model-len 131072 \\\n"
        "    --tensor-parallel-size 8\n"
        "\n"
        "It got the following error:\n"
        "Value error, User-specified max_model_len (131072) is greater than the derived max_model_len "
        "(max_position_embeddings=32768.0 or model_max_length=None in model's config.json). To allow "
        "overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.\n"
    )
    data = triage_json(write_log(tmp_path, paste, name="issue-paste.txt"))  # no log name to go by
    assert data["phase"] == "config"
    assert data["first_error"]["text"].startswith("Value error, User-specified max_model_len (131072)")
