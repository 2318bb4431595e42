"""The shipped frame table (rules/frames.toml) on tracebacks of both engine generations.

The tracebacks are written for these tests after vLLM's call chains (0.6 V0 MQLLMEngine with a
multiproc worker, 0.10–0.11 V1 EngineCore with WorkerProc workers, the API server's start-up).
"""

from __future__ import annotations

from functools import lru_cache

import pytest

from vllm_triage.analysis.callpath import GENERIC_FUNCTIONS, phase_from_frames
from vllm_triage.analysis.phase import frame_phase
from vllm_triage.core.phases import PHASES
from vllm_triage.engine import rules
from vllm_triage.engine.check import check_frames, problem_line
from vllm_triage.engine.rules import FrameHint

SITE = "/usr/local/lib/python3.12/dist-packages"


@lru_cache(maxsize=1)
def table() -> tuple[FrameHint, ...]:
    return tuple(rules.load().frames)


def tb(*frames: tuple[str, str]) -> list[str]:
    return [
        f'  File "{SITE}/{path}", line {100 + n}, in {function}' for n, (path, function) in enumerate(frames)
    ]


def vllm_entries() -> list[FrameHint]:
    return [h for h in table() if h.package == "vllm"]


def test_every_entry_cites_a_vllm_file() -> None:
    assert vllm_entries()
    for hint in vllm_entries():
        assert hint.file.startswith("vllm/") and hint.file.endswith(".py"), hint


def test_builtin_table_passes_the_validator() -> None:
    assert [problem_line(p) for p in check_frames(list(table()))] == []


@pytest.mark.parametrize(
    ("v0", "v1"),
    [
        ("vllm/worker/", "vllm/v1/worker/"),
        ("vllm/engine/", "vllm/v1/engine/"),
        ("vllm/executor/", "vllm/v1/executor/"),
    ],
)
def test_covers_both_engine_generations(v0: str, v1: str) -> None:
    files = {h.file for h in vllm_entries()}
    assert any(f.startswith(v0) for f in files), v0
    assert any(f.startswith(v1) for f in files), v1


@pytest.mark.parametrize("phase", PHASES)
def test_every_phase_has_strong_entries(phase: str) -> None:
    assert any(h.phase == phase and h.strong for h in vllm_entries())


def test_both_generations_have_every_start_up_step() -> None:
    for prefix in ("vllm/worker/", "vllm/v1/worker/"):
        phases = {h.phase for h in vllm_entries() if h.file.startswith(prefix) and h.strong}
        assert {"cuda_init", "weight_load", "engine_reserve"} <= phases, prefix


def test_generic_names_always_carry_a_file() -> None:
    for hint in table():
        if hint.function in GENERIC_FUNCTIONS:
            assert hint.file, hint


V1_WORKER_WEIGHT_OOM = tb(
    ("vllm/v1/executor/multiproc_executor.py", "worker_main"),
    ("vllm/v1/executor/multiproc_executor.py", "__init__"),
    ("vllm/v1/worker/worker_base.py", "load_model"),
    ("vllm/v1/worker/gpu_worker.py", "load_model"),
    ("vllm/v1/worker/gpu_model_runner.py", "load_model"),
    ("vllm/model_executor/model_loader/__init__.py", "get_model"),
    ("vllm/model_executor/model_loader/base_loader.py", "load_model"),
    ("vllm/model_executor/model_loader/utils.py", "initialize_model"),
    ("vllm/model_executor/models/qwen2.py", "__init__"),
    ("vllm/model_executor/models/utils.py", "make_layers"),
    ("vllm/model_executor/layers/linear.py", "__init__"),
    ("vllm/model_executor/layers/linear.py", "create_weights"),
    ("torch/utils/_device.py", "__torch_function__"),
)

V1_ENGINE_KV_TOO_SMALL = tb(
    ("vllm/v1/engine/core.py", "run_engine_core"),
    ("vllm/v1/engine/core.py", "__init__"),
    ("vllm/v1/engine/core.py", "__init__"),
    ("vllm/v1/engine/core.py", "_initialize_kv_caches"),
    ("vllm/v1/core/kv_cache_utils.py", "get_kv_cache_configs"),
    ("vllm/v1/core/kv_cache_utils.py", "_check_enough_kv_cache_memory"),
)

V1_INIT_DEVICE_FREE_MEMORY = tb(
    ("vllm/v1/engine/core.py", "run_engine_core"),
    ("vllm/v1/engine/core.py", "__init__"),
    ("vllm/v1/executor/abstract.py", "__init__"),
    ("vllm/v1/executor/uniproc_executor.py", "_init_executor"),
    ("vllm/v1/worker/worker_base.py", "init_device"),
    ("vllm/v1/worker/gpu_worker.py", "init_device"),
    ("vllm/v1/worker/utils.py", "request_memory"),
)

V1_WARMUP_JIT = tb(
    ("vllm/v1/engine/core.py", "_initialize_kv_caches"),
    ("vllm/v1/executor/abstract.py", "initialize_from_config"),
    ("vllm/v1/executor/multiproc_executor.py", "collective_rpc"),
    ("vllm/v1/executor/multiproc_executor.py", "worker_busy_loop"),
    ("vllm/v1/worker/gpu_worker.py", "compile_or_warm_up_model"),
    ("vllm/model_executor/warmup/kernel_warmup.py", "kernel_warmup"),
    ("vllm/v1/worker/gpu_model_runner.py", "_dummy_sampler_run"),
    ("vllm/v1/sample/sampler.py", "forward"),
    ("flashinfer/jit/core.py", "build_and_load"),
)

V1_SERVING = tb(
    ("vllm/v1/engine/core.py", "run_engine_core"),
    ("vllm/v1/engine/core.py", "run_busy_loop"),
    ("vllm/v1/engine/core.py", "_process_engine_step"),
    ("vllm/v1/engine/core.py", "step"),
    ("vllm/v1/executor/multiproc_executor.py", "execute_model"),
    ("vllm/v1/worker/gpu_model_runner.py", "execute_model"),
    ("vllm/model_executor/models/qwen3.py", "forward"),
)

API_SERVER_HUB = tb(
    ("vllm/entrypoints/cli/main.py", "main"),
    ("vllm/entrypoints/cli/serve.py", "cmd"),
    ("vllm/entrypoints/openai/api_server.py", "run_server"),
    ("vllm/entrypoints/openai/api_server.py", "run_server_worker"),
    ("vllm/entrypoints/openai/api_server.py", "build_async_engine_client_from_engine_args"),
    ("vllm/engine/arg_utils.py", "create_engine_config"),
    ("vllm/engine/arg_utils.py", "create_model_config"),
    ("pydantic/_internal/_dataclasses.py", "__init__"),
    ("vllm/config/model.py", "__post_init__"),
    ("vllm/transformers_utils/config.py", "get_config"),
    ("vllm/transformers_utils/repo_utils.py", "file_or_path_exists"),
    ("huggingface_hub/file_download.py", "hf_hub_download"),
)

CLI_BAD_ARGUMENT = tb(
    ("vllm/entrypoints/cli/main.py", "main"),
    ("vllm/entrypoints/cli/serve.py", "validate"),
    ("vllm/entrypoints/openai/cli_args.py", "validate_parsed_serve_args"),
    ("vllm/entrypoints/chat_utils.py", "load_chat_template"),
)

PLATFORM_UNDETECTED = tb(
    ("vllm/engine/arg_utils.py", "create_engine_config"),
    ("<string>", "__init__"),
    ("vllm/config/device.py", "__post_init__"),
)

V0_INIT_DEVICE = tb(
    ("vllm/executor/multiproc_worker_utils.py", "_run_worker_process"),
    ("vllm/worker/worker_base.py", "execute_method"),
    ("vllm/worker/worker.py", "init_device"),
    ("vllm/worker/worker.py", "init_worker_distributed_environment"),
    ("vllm/distributed/parallel_state.py", "ensure_model_parallel_initialized"),
    ("vllm/distributed/parallel_state.py", "initialize_model_parallel"),
    ("vllm/distributed/parallel_state.py", "init_model_parallel_group"),
    ("vllm/distributed/parallel_state.py", "__init__"),
    ("vllm/distributed/device_communicators/pynccl.py", "__init__"),
    ("vllm/distributed/device_communicators/pynccl_wrapper.py", "ncclCommInitRank"),
    ("vllm/distributed/device_communicators/pynccl_wrapper.py", "NCCL_CHECK"),
)

V0_BF16_ON_TURING = tb(
    ("vllm/engine/multiprocessing/engine.py", "run_mp_engine"),
    ("vllm/engine/multiprocessing/engine.py", "from_engine_args"),
    ("vllm/engine/llm_engine.py", "__init__"),
    ("vllm/executor/executor_base.py", "__init__"),
    ("vllm/executor/gpu_executor.py", "_init_executor"),
    ("vllm/worker/worker.py", "init_device"),
    ("vllm/worker/worker.py", "_check_if_gpu_supports_dtype"),
)

V0_KV_TOO_SMALL = tb(
    ("vllm/engine/multiprocessing/engine.py", "run_mp_engine"),
    ("vllm/engine/llm_engine.py", "_initialize_kv_caches"),
    ("vllm/executor/executor_base.py", "initialize_cache"),
    ("vllm/executor/uniproc_executor.py", "collective_rpc"),
    ("vllm/utils.py", "run_method"),
    ("vllm/worker/worker.py", "initialize_cache"),
    ("vllm/worker/worker.py", "raise_if_cache_size_invalid"),
)

V0_SERVING = tb(
    ("vllm/engine/multiprocessing/engine.py", "run_engine_loop"),
    ("vllm/engine/multiprocessing/engine.py", "engine_step"),
    ("vllm/engine/llm_engine.py", "step"),
    ("vllm/executor/gpu_executor.py", "execute_model"),
    ("vllm/worker/worker_base.py", "execute_model"),
    ("vllm/worker/model_runner_base.py", "_wrapper"),
    ("vllm/worker/model_runner.py", "execute_model"),
    ("triton/runtime/jit.py", "run"),
)

# 0.7 V0 (vllm#14320 shape): the model runner asks the selector for a backend the platform refuses.
V0_ATTENTION_BACKEND_REFUSED = tb(
    ("vllm/engine/multiprocessing/engine.py", "run_mp_engine"),
    ("vllm/engine/llm_engine.py", "__init__"),
    ("vllm/executor/executor_base.py", "__init__"),
    ("vllm/executor/uniproc_executor.py", "_init_executor"),
    ("vllm/worker/worker_base.py", "init_worker"),
    ("vllm/worker/worker.py", "__init__"),
    ("vllm/worker/model_runner.py", "__init__"),
    ("vllm/attention/selector.py", "get_attn_backend"),
    ("vllm/attention/selector.py", "_cached_get_attn_backend"),
    ("vllm/platforms/cuda.py", "get_attn_backend_cls"),
)

# 0.7 V0: --quantization awq on a checkpoint with no AWQ config, read while VllmConfig validates.
V0_QUANT_CONFIG_MISSING = tb(
    ("vllm/engine/multiprocessing/engine.py", "run_mp_engine"),
    ("vllm/engine/multiprocessing/engine.py", "from_engine_args"),
    ("vllm/engine/arg_utils.py", "create_engine_config"),
    ("vllm/config.py", "__post_init__"),
    ("vllm/config.py", "_get_quantization_config"),
    ("vllm/model_executor/model_loader/weight_utils.py", "get_quant_config"),
)

# 0.5 V0: the loader built the quantization config while loading the model.
V05_LOADER_QUANT_CONFIG = tb(
    ("vllm/worker/model_runner.py", "load_model"),
    ("vllm/model_executor/model_loader/__init__.py", "get_model"),
    ("vllm/model_executor/model_loader/loader.py", "load_model"),
    ("vllm/model_executor/model_loader/loader.py", "_initialize_model"),
    ("vllm/model_executor/model_loader/loader.py", "_get_quantization_config"),
    ("vllm/model_executor/model_loader/weight_utils.py", "get_quant_config"),
)

V0_SHUTDOWN = tb(
    ("vllm/executor/executor_base.py", "__del__"),
    ("vllm/executor/mp_distributed_executor.py", "shutdown"),
    ("torch/distributed/distributed_c10d.py", "destroy_process_group"),
)


@pytest.mark.parametrize(
    ("frames", "strong", "weak", "file", "component"),
    [
        (V1_WORKER_WEIGHT_OOM, "weight_load", None, "vllm/model_executor/layers/linear.py", "torch"),
        (V1_ENGINE_KV_TOO_SMALL, "engine_reserve", None, "vllm/v1/core/kv_cache_utils.py", "vllm"),
        (V1_INIT_DEVICE_FREE_MEMORY, "cuda_init", None, "vllm/v1/worker/utils.py", "vllm"),
        (V1_WARMUP_JIT, "engine_reserve", "request", "vllm/v1/worker/gpu_model_runner.py", "flashinfer"),
        (V1_SERVING, None, "request", None, "vllm"),
        (API_SERVER_HUB, "weight_load", None, "vllm/transformers_utils/repo_utils.py", "huggingface_hub"),
        (CLI_BAD_ARGUMENT, "config", None, "vllm/entrypoints/chat_utils.py", "vllm"),
        (PLATFORM_UNDETECTED, "container", None, "vllm/config/device.py", "vllm"),
        (
            V0_INIT_DEVICE,
            "cuda_init",
            None,
            "vllm/distributed/device_communicators/pynccl_wrapper.py",
            "nccl",
        ),
        (V0_BF16_ON_TURING, "config", None, "vllm/worker/worker.py", "vllm"),
        (V0_KV_TOO_SMALL, "engine_reserve", None, "vllm/worker/worker.py", "vllm"),
        (V0_SERVING, None, "request", None, "triton"),
        (V0_ATTENTION_BACKEND_REFUSED, "config", None, "vllm/platforms/cuda.py", "vllm"),
        (V0_QUANT_CONFIG_MISSING, "config", None, "vllm/config.py", "vllm"),
        (
            V05_LOADER_QUANT_CONFIG,
            "weight_load",
            None,
            "vllm/model_executor/model_loader/loader.py",
            "vllm",
        ),
    ],
)
def test_tracebacks(
    frames: list[str], strong: str | None, weak: str | None, file: str | None, component: str
):
    verdict = phase_from_frames(frames, table())
    assert verdict.phase == strong
    assert verdict.weak_phase == weak
    assert (verdict.strong.hint.file if verdict.strong else None) == file
    assert verdict.component == component


def test_shutdown_traceback_is_teardown() -> None:
    verdict = phase_from_frames(V0_SHUTDOWN, table())
    assert verdict.teardown is not None and verdict.phase is None


def test_dispatchers_never_decide() -> None:
    # the outer frames of every start-up traceback: none of them names a step
    outer = tb(
        ("vllm/entrypoints/cli/main.py", "main"),
        ("vllm/entrypoints/cli/serve.py", "cmd"),
        ("vllm/v1/engine/core.py", "run_engine_core"),
        ("vllm/v1/engine/core.py", "__init__"),
        ("vllm/v1/executor/multiproc_executor.py", "_init_executor"),
        ("vllm/v1/executor/multiproc_executor.py", "wait_for_ready"),
        ("vllm/v1/engine/utils.py", "wait_for_engine_startup"),
    )
    verdict = phase_from_frames(outer, table())
    assert verdict.phase is None and verdict.weak is None


def test_frame_phase_adapter_takes_lines_or_names() -> None:
    strong, weak, _ = frame_phase(V1_WARMUP_JIT, list(table()))
    assert (strong.function, strong.file) == ("_dummy_sampler_run", "vllm/v1/worker/gpu_model_runner.py")
    assert weak.function == "worker_busy_loop"
    names = ["run_engine_core", "__init__", "_initialize_kv_caches", "determine_available_memory", "forward"]
    strong, weak, _ = frame_phase(names, list(table()))
    assert strong.phase == "engine_reserve" and weak is None


def test_teardown_names_for_name_only_callers() -> None:
    names = rules.load().teardown_functions
    assert {"destroy_process_group", "_exit_function", "__del__", "destroy_model_parallel"} <= names
    assert not names & GENERIC_FUNCTIONS  # `shutdown` alone would mark any package's frame


def test_a_match_describes_itself_with_its_file_and_why() -> None:
    verdict = phase_from_frames(V1_INIT_DEVICE_FREE_MEMORY, table())
    text = verdict.strong.describe()
    assert text.startswith("request_memory() in vllm/v1/worker/utils.py (")
    assert "Free memory on device" in text
    bare = phase_from_frames(["init_device"], table()).strong.describe()
    assert bare.startswith("init_device() in vllm/")
