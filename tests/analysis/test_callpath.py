"""analysis.callpath: frame lines → Frame objects, packages, and the phase of the call path.

The tracebacks below are written for these tests after vLLM's own call chains (V1 EngineCore and
worker processes, V0 MQLLMEngine); the table is a small hand-made one so the matching rules are
tested on their own (tests/analysis/test_frames_table.py runs the shipped table).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from vllm_triage.analysis.callpath import (
    PYTHON,
    USER,
    Frame,
    match_frame,
    package_of,
    parse_frame,
    parse_frames,
    phase_from_chain,
    phase_from_frames,
    phase_from_source,
    split_tracebacks,
)

SITE = "/usr/local/lib/python3.12/dist-packages"


@dataclass(frozen=True)
class H:
    function: str
    file: str
    phase: str = ""
    strong: bool = True
    teardown: bool = False
    package: str = "vllm"


TABLE = (
    H("init_device", "vllm/v1/worker/gpu_worker.py", "cuda_init"),
    H("init_device", "vllm/worker/worker.py", "cuda_init"),
    H("load_model", "vllm/v1/worker/gpu_worker.py", "weight_load"),
    H("load_model", "vllm/v1/worker/gpu_model_runner.py", "weight_load"),
    H("create_weights", "vllm/model_executor/layers/linear.py", "weight_load"),
    H("__init__", "vllm/model_executor/layers/linear.py", "weight_load"),
    H("__init__", "vllm/distributed/device_communicators/pynccl.py", "cuda_init"),
    H("get_config", "vllm/transformers_utils/config.py", "weight_load"),
    H("__post_init__", "vllm/config/model.py", "config"),
    H("create_engine_config", "vllm/engine/arg_utils.py", "config"),
    H("_initialize_kv_caches", "vllm/v1/engine/core.py", "engine_reserve"),
    H("determine_available_memory", "vllm/v1/worker/gpu_worker.py", "engine_reserve"),
    H("profile_run", "vllm/v1/worker/gpu_model_runner.py", "engine_reserve"),
    H("_dummy_run", "vllm/v1/worker/gpu_model_runner.py", "engine_reserve"),
    H("capture_model", "vllm/v1/worker/gpu_model_runner.py", "engine_reserve"),
    H("capture", "vllm/worker/model_runner.py", "engine_reserve"),
    H("capture", "vllm/distributed/device_communicators/custom_all_reduce.py", "engine_reserve"),
    H("initialize_cache", "vllm/worker/worker.py", "engine_reserve"),
    H("raise_if_cache_size_invalid", "vllm/worker/worker.py", "engine_reserve"),
    H("compile", "vllm/compilation/backends.py", "engine_reserve"),
    H("step", "vllm/v1/engine/core.py", "request", strong=False),
    H("step", "vllm/engine/llm_engine.py", "request", strong=False),
    H("run_busy_loop", "vllm/v1/engine/core.py", "request", strong=False),
    H("worker_busy_loop", "vllm/v1/executor/multiproc_executor.py", "request", strong=False),
    H("execute_model", "vllm/v1/worker/gpu_model_runner.py", "request", strong=False),
    H("execute_model", "vllm/v1/worker/gpu_worker.py", "request", strong=False),
    H("execute_model", "vllm/worker/model_runner.py", "request", strong=False),
    H("shutdown", "vllm/v1/engine/core.py", teardown=True),
    H("destroy_model_parallel", "vllm/distributed/parallel_state.py", teardown=True),
    H("destroy_process_group", "torch/distributed/distributed_c10d.py", teardown=True, package="torch"),
    H("_exit_function", "multiprocessing/util.py", teardown=True, package="python"),
)


def tb(*frames: tuple[str, str]) -> list[str]:
    """Frame lines as Python prints them, with the source line under each."""
    lines = ["Traceback (most recent call last):"]
    for n, (path, function) in enumerate(frames, start=1):
        lines.append(f'  File "{path}", line {40 + 7 * n}, in {function}')
        lines.append("    result = call(*args)")
    return lines


V1_PROFILE_OOM = tb(
    ("/usr/lib/python3.12/multiprocessing/process.py", "_bootstrap"),
    ("/usr/lib/python3.12/multiprocessing/process.py", "run"),
    (f"{SITE}/vllm/v1/engine/core.py", "run_engine_core"),
    (f"{SITE}/vllm/v1/engine/core.py", "__init__"),
    (f"{SITE}/vllm/v1/engine/core.py", "__init__"),
    (f"{SITE}/vllm/v1/engine/core.py", "_initialize_kv_caches"),
    (f"{SITE}/vllm/v1/executor/abstract.py", "determine_available_memory"),
    (f"{SITE}/vllm/v1/executor/uniproc_executor.py", "collective_rpc"),
    (f"{SITE}/vllm/utils/__init__.py", "run_method"),
    (f"{SITE}/torch/utils/_contextlib.py", "decorate_context"),
    (f"{SITE}/vllm/v1/worker/gpu_worker.py", "determine_available_memory"),
    (f"{SITE}/vllm/v1/worker/gpu_model_runner.py", "profile_run"),
    (f"{SITE}/vllm/v1/worker/gpu_model_runner.py", "_dummy_run"),
    (f"{SITE}/torch/nn/modules/module.py", "_wrapped_call_impl"),
    (f"{SITE}/torch/nn/modules/module.py", "_call_impl"),
    (f"{SITE}/vllm/model_executor/models/llama.py", "forward"),
    (f"{SITE}/vllm/compilation/decorators.py", "__call__"),
    (f"{SITE}/torch/_dynamo/eval_frame.py", "_fn"),
    (f"{SITE}/vllm/compilation/backends.py", "compile"),
    (f"{SITE}/torch/_inductor/compile_fx.py", "compile_fx_inner"),
    (f"{SITE}/triton/compiler/compiler.py", "compile"),
)


def test_parse_frame_line() -> None:
    frame = parse_frame(f'  File "{SITE}/vllm/v1/worker/gpu_worker.py", line 123, in init_device')
    assert frame == Frame(f"{SITE}/vllm/v1/worker/gpu_worker.py", "init_device", "vllm", 123)
    assert frame.vllm_file == "vllm/v1/worker/gpu_worker.py"
    assert not frame.bare


def test_parse_frames_skips_source_and_exception_lines() -> None:
    lines = V1_PROFILE_OOM + ["KeyError", "torch.OutOfMemoryError: CUDA out of memory."]
    frames = parse_frames(lines)
    assert len(frames) == 21
    assert frames[0].function == "_bootstrap" and frames[-1].function == "compile"


def test_bare_names_only_when_asked() -> None:
    assert parse_frame("init_device") is None  # a one-word traceback line is not a frame
    assert parse_frame("init_device", bare=True) == Frame("", "init_device", "")
    assert parse_frame("uvloop.loop.Loop.run_until_complete", bare=True).function.startswith("uvloop")


@pytest.mark.parametrize(
    ("path", "package"),
    [
        (f"{SITE}/vllm/v1/engine/core.py", "vllm"),
        ("/opt/conda/lib/python3.10/site-packages/torch/cuda/__init__.py", "torch"),
        (f"{SITE}/triton/runtime/jit.py", "triton"),
        (f"{SITE}/flashinfer/jit/core.py", "flashinfer"),
        (f"{SITE}/transformers/configuration_utils.py", "transformers"),
        (f"{SITE}/huggingface_hub/utils/_http.py", "huggingface_hub"),
        (f"{SITE}/safetensors/torch.py", "safetensors"),
        ("/home/ray/anaconda3/lib/python3.11/site-packages/ray/_private/worker.py", "ray"),
        (f"{SITE}/lmcache/integration/vllm/vllm_v1_adapter.py", "lmcache"),
        (f"{SITE}/pydantic/_internal/_dataclasses.py", "pydantic"),
        (f"{SITE}/vllm_flash_attn/flash_attn_interface.py", "vllm_flash_attn"),
        (f"{SITE}/typing_extensions.py", "typing_extensions"),
        ("/usr/lib/python3.12/multiprocessing/process.py", PYTHON),
        ("/root/.pyenv/versions/3.11.9/lib/python3.11/asyncio/base_events.py", PYTHON),
        ("<frozen runpy>", PYTHON),
        ("<string>", PYTHON),
        ("<eval_with_key>.162", "torch"),
        ("/app/generate.py", USER),
        ("<stdin>", USER),
        ("/workspace/vllm/vllm/v1/worker/gpu_worker.py", "vllm"),  # editable install
        ("C:\\Users\\me\\vllm_0.25\\Lib\\site-packages\\vllm\\v1\\worker\\gpu_worker.py", "vllm"),
        ("C:\\Python312\\Lib\\asyncio\\runners.py", PYTHON),
        ("uvloop/loop.pyx", "uvloop"),
        ("/usr/local/bin/vllm", "vllm"),
    ],
)
def test_package_of(path: str, package: str) -> None:
    assert package_of(path) == package


def test_deepest_strong_vllm_frame_wins() -> None:
    verdict = phase_from_frames(V1_PROFILE_OOM, TABLE)
    assert verdict.phase == "engine_reserve"
    # the compile itself, not the outer steps that led to it
    assert verdict.strong.frame.vllm_file == "vllm/compilation/backends.py"
    assert verdict.component == "triton"
    assert [m.hint.function for m in verdict.matches] == [
        "_initialize_kv_caches",
        "determine_available_memory",
        "profile_run",
        "_dummy_run",
        "compile",
    ]


def test_torch_and_triton_frames_never_match_vllm_entries() -> None:
    # triton's `compile` and torch's `__init__` share names with vLLM entries
    frames = tb(
        (f"{SITE}/triton/compiler/compiler.py", "compile"), (f"{SITE}/torch/cuda/graphs.py", "__init__")
    )
    verdict = phase_from_frames(frames, TABLE)
    assert verdict.matches == () and verdict.phase is None
    assert verdict.component == "torch"


def test_generic_name_is_qualified_by_file() -> None:
    linear = phase_from_frames(tb((f"{SITE}/vllm/model_executor/layers/linear.py", "__init__")), TABLE)
    pynccl = phase_from_frames(
        tb((f"{SITE}/vllm/distributed/device_communicators/pynccl.py", "__init__")), TABLE
    )
    other = phase_from_frames(tb((f"{SITE}/vllm/model_executor/models/qwen2.py", "__init__")), TABLE)
    assert (linear.phase, pynccl.phase, other.phase) == ("weight_load", "cuda_init", None)


def test_model_resolution_inside_model_config_is_weight_load() -> None:
    frames = tb(
        (f"{SITE}/vllm/entrypoints/openai/api_server.py", "build_async_engine_client_from_engine_args"),
        (f"{SITE}/vllm/engine/arg_utils.py", "create_engine_config"),
        (f"{SITE}/vllm/engine/arg_utils.py", "create_model_config"),
        (f"{SITE}/pydantic/_internal/_dataclasses.py", "__init__"),
        (f"{SITE}/vllm/config/model.py", "__post_init__"),
        (f"{SITE}/vllm/transformers_utils/config.py", "get_config"),
        (f"{SITE}/huggingface_hub/utils/_validators.py", "_inner_fn"),
    )
    verdict = phase_from_frames(frames, TABLE)
    assert verdict.phase == "weight_load"
    assert verdict.component == "huggingface_hub"


def test_pydantic_is_a_messenger_for_the_blame() -> None:
    frames = tb(
        (f"{SITE}/vllm/engine/arg_utils.py", "create_engine_config"),
        (f"{SITE}/pydantic/_internal/_dataclasses.py", "__init__"),
    )
    verdict = phase_from_frames(frames, TABLE)
    assert verdict.phase == "config"
    assert verdict.component == "vllm" and verdict.innermost.package == "pydantic"


def test_config_validation_without_resolution_stays_config() -> None:
    frames = tb(
        (f"{SITE}/vllm/engine/arg_utils.py", "create_engine_config"),
        ("<string>", "__init__"),
        (f"{SITE}/vllm/config/model.py", "__post_init__"),
        ("/usr/lib/python3.12/json/decoder.py", "decode"),
    )
    verdict = phase_from_frames(frames, TABLE)
    assert verdict.phase == "config"
    # json is the messenger: the blame goes to the innermost frame outside the standard library
    assert verdict.component == "vllm" and verdict.innermost.package == PYTHON


def test_v0_cuda_graph_capture_oom() -> None:
    frames = tb(
        (f"{SITE}/vllm/engine/multiprocessing/engine.py", "run_mp_engine"),
        (f"{SITE}/vllm/engine/llm_engine.py", "_initialize_kv_caches"),
        (f"{SITE}/vllm/executor/executor_base.py", "initialize_cache"),
        (f"{SITE}/vllm/worker/worker.py", "initialize_cache"),
        (f"{SITE}/vllm/worker/worker.py", "_warm_up_model"),
        (f"{SITE}/vllm/worker/model_runner.py", "capture_model"),
        (f"{SITE}/vllm/worker/model_runner.py", "capture"),
        (f"{SITE}/torch/cuda/graphs.py", "__exit__"),
        (f"{SITE}/torch/cuda/graphs.py", "capture_end"),
    )
    verdict = phase_from_frames(frames, TABLE)
    assert verdict.phase == "engine_reserve"
    assert verdict.strong.frame.vllm_file == "vllm/worker/model_runner.py"
    assert verdict.component == "torch"


def test_request_frames_are_weak() -> None:
    frames = tb(
        (f"{SITE}/vllm/v1/engine/core.py", "run_busy_loop"),
        (f"{SITE}/vllm/v1/engine/core.py", "step"),
        (f"{SITE}/vllm/v1/executor/multiproc_executor.py", "execute_model"),
        (f"{SITE}/vllm/v1/worker/gpu_model_runner.py", "execute_model"),
        (f"{SITE}/vllm/model_executor/layers/rotary_embedding.py", "forward_cuda"),
    )
    verdict = phase_from_frames(frames, TABLE)
    assert verdict.phase is None
    assert verdict.weak_phase == "request"
    assert verdict.weak.frame.vllm_file == "vllm/v1/worker/gpu_model_runner.py"


def test_warm_up_through_the_rpc_loop_is_start_up() -> None:
    # the worker's busy loop carries start-up RPCs: the strong frame beneath it decides
    frames = tb(
        (f"{SITE}/vllm/v1/executor/multiproc_executor.py", "worker_busy_loop"),
        (f"{SITE}/vllm/v1/worker/gpu_model_runner.py", "capture_model"),
        (f"{SITE}/vllm/v1/worker/gpu_model_runner.py", "_dummy_run"),
        (f"{SITE}/vllm/v1/worker/gpu_model_runner.py", "execute_model"),
    )
    verdict = phase_from_frames(frames, TABLE)
    assert verdict.phase == "engine_reserve" and verdict.weak_phase == "request"


def test_nccl_component_from_pynccl() -> None:
    frames = tb(
        (f"{SITE}/vllm/v1/worker/gpu_worker.py", "init_device"),
        (f"{SITE}/vllm/distributed/device_communicators/pynccl.py", "__init__"),
        (f"{SITE}/vllm/distributed/device_communicators/pynccl_wrapper.py", "ncclCommInitRank"),
        (f"{SITE}/vllm/distributed/device_communicators/pynccl_wrapper.py", "NCCL_CHECK"),
    )
    verdict = phase_from_frames(frames, TABLE)
    assert verdict.phase == "cuda_init"
    assert verdict.component == "nccl"


def test_teardown_frames_of_vllm_torch_and_python() -> None:
    vllm_side = phase_from_frames(
        tb(
            (f"{SITE}/vllm/v1/engine/core.py", "shutdown"),
            (f"{SITE}/vllm/distributed/parallel_state.py", "x"),
        ),
        TABLE,
    )
    torch_side = phase_from_frames(
        tb(
            (f"{SITE}/vllm/distributed/parallel_state.py", "destroy_model_parallel"),
            (f"{SITE}/torch/distributed/distributed_c10d.py", "destroy_process_group"),
        ),
        TABLE,
    )
    atexit = phase_from_frames(tb(("/usr/lib/python3.12/multiprocessing/util.py", "_exit_function")), TABLE)
    assert vllm_side.teardown.hint.function == "shutdown"
    assert torch_side.teardown.hint.function == "destroy_process_group"
    assert atexit.teardown is not None
    # teardown frames never give a phase
    assert (vllm_side.phase, torch_side.phase, atexit.phase) == (None, None, None)
    # shutdown in another package is not vLLM's shutdown
    assert phase_from_frames(tb((f"{SITE}/ray/worker.py", "shutdown")), TABLE).teardown is None


def test_bare_names_match_only_when_unambiguous() -> None:
    assert match_frame(Frame("", "init_device", ""), TABLE).phase == "cuda_init"  # two files, one meaning
    assert match_frame(Frame("", "capture", ""), TABLE).phase == "engine_reserve"
    assert match_frame(Frame("", "step", ""), TABLE).strong is False
    assert match_frame(Frame("", "__init__", ""), TABLE) is None  # generic
    assert match_frame(Frame("", "compile", ""), TABLE) is None  # generic: torch and triton have one
    ambiguous = TABLE + (H("profile_run", "vllm/worker/cpu_model_runner.py", "weight_load"),)
    assert match_frame(Frame("", "profile_run", ""), ambiguous) is None
    verdict = phase_from_frames(["run_engine_core", "_initialize_kv_caches", "profile_run", "forward"], TABLE)
    assert verdict.phase == "engine_reserve" and verdict.component is None


def test_later_entries_override_earlier_ones() -> None:
    override = TABLE + (H("init_device", "vllm/v1/worker/gpu_worker.py", "container"),)
    frame = parse_frame(f'File "{SITE}/vllm/v1/worker/gpu_worker.py", line 9, in init_device')
    assert match_frame(frame, override).phase == "container"


def test_legacy_entry_without_file_matches_any_package() -> None:
    legacy = (H("set_device", "", "cuda_init"),)
    frame = parse_frame(f'File "{SITE}/torch/cuda/__init__.py", line 9, in set_device')
    assert match_frame(frame, legacy).phase == "cuda_init"


@pytest.mark.parametrize(
    ("source", "phase"),
    [
        ("linear.py:210", "weight_load"),  # only model construction uses it
        ("/x/vllm/model_executor/layers/linear.py", "weight_load"),
        ("gpu_worker.py:123", None),  # cuda_init, weight_load and engine_reserve live there
        ("core.py:708", None),
        ("arg_utils.py:1", "config"),
        ("engine.py:448", None),  # not in the table
        ("not a source", None),
    ],
)
def test_phase_from_logger_source(source: str, phase: str | None) -> None:
    assert phase_from_source(source, TABLE) == phase


def test_frames_behind_log_prefixes_and_colours() -> None:
    prefixed = (
        "(EngineCore_DP0 pid=812) ERROR 03-02 10:11:12 [core.py:708]   "
        f'File "{SITE}/vllm/model_executor/layers/linear.py", line 202, in create_weights'
    )
    coloured = (
        '  File \x1b[35m"/usr/local/lib/python3.13/site-packages/vllm/v1/worker/gpu_worker.py"\x1b[0m, '
        "line \x1b[35m241\x1b[0m, in \x1b[35minit_device\x1b[0m"
    )
    assert parse_frame(prefixed).vllm_file == "vllm/model_executor/layers/linear.py"
    frame = parse_frame(coloured)
    assert (frame.function, frame.vllm_file, frame.line) == (
        "init_device",
        "vllm/v1/worker/gpu_worker.py",
        241,
    )


HUB_CAUSE = [
    "Traceback (most recent call last):",
    f'  File "{SITE}/vllm/transformers_utils/config.py", line 640, in get_config',
    "    elif file_or_path_exists(model, HF_CONFIG_NAME, revision=revision):",
    f'  File "{SITE}/huggingface_hub/utils/_validators.py", line 106, in _inner_fn',
    "    validate_repo_id(arg_value)",
    "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name'",
    "",
    "The above exception was the direct cause of the following exception:",
    "",
    "Traceback (most recent call last):",
    f'  File "{SITE}/vllm/engine/arg_utils.py", line 1021, in create_engine_config',
    "    model_config = self.create_model_config()",
    f'  File "{SITE}/vllm/engine/arg_utils.py", line 880, in create_model_config',
    "    return ModelConfig(",
    f'  File "{SITE}/pydantic/_internal/_dataclasses.py", line 123, in __init__',
    "    s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)",
    "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
]


def test_chained_exception_the_cause_decides() -> None:
    assert [len(frames) for frames in split_tracebacks(HUB_CAUSE)] == [2, 3]
    verdict = phase_from_chain(HUB_CAUSE, TABLE)
    assert verdict.phase == "weight_load" and verdict.component == "huggingface_hub"
    # read as one call path, the wrapper's frames come last and would say config
    assert phase_from_frames(parse_frames(HUB_CAUSE), TABLE).phase == "config"


def test_chained_cleanup_failure_does_not_hide_the_cause() -> None:
    lines = [
        *tb(
            (f"{SITE}/vllm/v1/engine/core.py", "_initialize_kv_caches"),
            (f"{SITE}/vllm/v1/worker/gpu_model_runner.py", "profile_run"),
        ),
        "torch.OutOfMemoryError: CUDA out of memory.",
        "During handling of the above exception, another exception occurred:",
        *tb(
            (f"{SITE}/vllm/v1/engine/core.py", "run_engine_core"),
            (f"{SITE}/vllm/v1/engine/core.py", "shutdown"),
        ),
        "AttributeError: 'EngineCore' object has no attribute 'model_executor'",
    ]
    verdict = phase_from_chain(lines, TABLE)
    assert verdict.phase == "engine_reserve" and verdict.strong.hint.function == "profile_run"
    serving = [
        *tb((f"{SITE}/vllm/v1/engine/core.py", "run_busy_loop"), (f"{SITE}/vllm/v1/engine/core.py", "step"))
    ]
    assert phase_from_chain(serving, TABLE).weak_phase == "request"


def test_ipython_frame_format() -> None:
    line = f"File {SITE}/vllm/entrypoints/llm.py:123, in LLM.__init__(self, model, tokenizer)"
    frame = parse_frame(line)
    assert (frame.package, frame.vllm_file, frame.line) == ("vllm", "vllm/entrypoints/llm.py", 123)
    assert frame.function == "__init__"


def test_a_frame_naming_its_file_alone_matches_that_files_entry() -> None:
    # An abridged paste: `File "backend_xgrammar.py", line 126, in compile_grammar`.
    table = [
        H("compile_grammar", "vllm/v1/structured_output/backend_xgrammar.py", "request", strong=False),
        H("load_model", "vllm/v1/worker/gpu_model_runner.py", "weight_load"),
        H("load_model", "vllm/worker/model_runner.py", "weight_load"),
        H("execute_model", "vllm/v1/worker/gpu_model_runner.py", "request", strong=False),
        H("execute_model", "vllm/v1/worker/gpu_worker.py", "engine_reserve"),
    ]
    frame = parse_frame('File "backend_xgrammar.py", line 126, in compile_grammar')
    assert frame is not None
    hint = match_frame(frame, table)
    assert hint is not None and hint.phase == "request"
    # must-not: another file of that name, or a name whose entries disagree within that file name
    other = parse_frame('File "grammar.py", line 126, in compile_grammar')
    assert other is not None and match_frame(other, table) is None
    runner = parse_frame('File "gpu_model_runner.py", line 9, in execute_model')
    assert runner is not None and match_frame(runner, table) is not None  # one entry of that file
    worker = parse_frame('File "model_runner.py", line 9, in load_model')
    assert worker is not None and match_frame(worker, table).phase == "weight_load"
