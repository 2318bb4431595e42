"""The message's own evidence against a generic frame or a rule default (issue 9, set D group D):
vLLM 0.3's wording of "no GPU visible" raised inside a config constructor, and an NCCL watchdog
timeout whose collective was the process group's first. Every log is written for the test after
how vLLM and torch print them."""

from __future__ import annotations

from functools import partial

from triage_helpers import write_log

SITE = "/opt/conda/lib/python3.10/site-packages"


_write = partial(write_log, name="run.log")


OLD_NO_DEVICE = (
    "Traceback (most recent call last):\n"
    '  File "/srv/rlhf/actors/generator.py", line 52, in __init__\n'
    "    self.llm = vllm.LLM(model=model_path, tensor_parallel_size=1)\n"
    f'  File "{SITE}/vllm/entrypoints/llm.py", line 109, in __init__\n'
    "    self.llm_engine = LLMEngine.from_engine_args(engine_args)\n"
    f'  File "{SITE}/vllm/engine/llm_engine.py", line 385, in from_engine_args\n'
    "    engine_configs = engine_args.create_engine_configs()\n"
    f'  File "{SITE}/vllm/engine/arg_utils.py", line 286, in create_engine_configs\n'
    "    device_config = DeviceConfig(self.device)\n"
    f'  File "{SITE}/vllm/config.py", line 484, in __init__\n'
    '    raise RuntimeError("No supported device detected.")\n'
    "RuntimeError: No supported device detected.\n"
)


def test_vllm_03_no_supported_device_is_a_container_problem_not_config(tmp_path, triage_json):
    # DeviceConfig.__init__ is a config constructor, but what it reports is that torch saw no GPU
    data = triage_json(_write(tmp_path, OLD_NO_DEVICE))
    assert data["phase"] == "container"
    assert data["first_error"]["message"] == "RuntimeError: No supported device detected."
    assert data["first_error"]["rule"] == "container.no_platform"


def test_a_config_error_raised_in_the_same_constructor_stays_config(tmp_path, triage_json):
    # must-not: the frame still places what the constructor rejects about the values themselves
    log = OLD_NO_DEVICE.replace(
        "RuntimeError: No supported device detected.\n",
        "ValueError: Unknown device type: 'gpu0'. Expected one of cuda, neuron, cpu.\n",
    ).replace('raise RuntimeError("No supported device detected.")', "raise ValueError(msg)")
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "config"


def _watchdog(seq: int, completed: int, ranks: tuple[int, ...] = (0, 1)) -> str:
    lines = []
    for rank in ranks:
        lines.append(
            f"[rank{rank}]:[E1114 03:12:44.118209551 ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog caught "
            f"collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=600000) ran for 600021 milliseconds before timing out.\n"
        )
        lines.append(
            f"[rank{rank}]:[E1114 03:12:44.118414872 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank {rank}] "
            f"Exception (either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL "
            f"work: {seq}, last completed NCCL work: {completed}.\n"
        )
    return "".join(lines)


NCCL_READY = (
    "a100-07:88121:88174 [0] NCCL INFO comm 0x5633e1a0 rank 0 nranks 2 cudaDev 0 nvmlDev 4 busId 81000 "
    "commId 0x1f2e3d4c5b6a7980 - Init COMPLETE\n"
    "a100-07:88122:88175 [1] NCCL INFO comm 0x55e01b20 rank 1 nranks 2 cudaDev 1 nvmlDev 5 busId c1000 "
    "commId 0x1f2e3d4c5b6a7980 - Init COMPLETE\n"
)


def test_the_first_collective_timing_out_is_distributed_init(tmp_path, triage_json):
    data = triage_json(_write(tmp_path, NCCL_READY + _watchdog(1, -1)))
    assert data["phase"] == "cuda_init"
    assert "SeqNum=1," in data["first_error"]["message"]
    assert data["first_error"]["rule"] == "nccl.watchdog_first_collective"


def test_a_later_collective_timing_out_with_no_context_keeps_the_request_default(tmp_path, triage_json):
    # must-not: thousands of collectives had completed, the group worked: a hang while serving
    data = triage_json(_write(tmp_path, _watchdog(48213, 48212)))
    assert data["phase"] == "request"
    assert data["first_error"]["rule"] == "nccl.watchdog_timeout"


def test_a_first_collective_after_ready_is_placed_by_the_milestones(tmp_path, triage_json):
    # a group made after start-up (its first collective while serving): the ready line decides
    log = (
        "INFO 11-14 02:58:01 api_server.py:212] vLLM API server version 0.6.3\n"
        "INFO:     Application startup complete.\n"
        'INFO:     10.1.4.20:51234 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    ) + _watchdog(1, -1)
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "request"


NEW_SITE = "/usr/local/lib/python3.12/dist-packages"


def test_a_cut_tail_through_the_mamba_backend_lookup_is_config(tmp_path, triage_json):
    # vllm/config/mamba.py: the enum lookup an unknown --mamba-backend name fails in
    log = (
        'deploy: pod llm-0 failed: container "server" exited 1 (Error)\n'
        f'(APIServer pid=1) File "{NEW_SITE}/vllm/config/mamba.py", line 20, in __getitem__\n'
        "(APIServer pid=1)     raise ValueError(\n"
        "(APIServer pid=1) ValueError: Unknown Mamba SSU backend: 'CUTLASS'. Valid options are: TRITON, FLASHINFER\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "config"
    assert data["first_error"]["message"].startswith("ValueError: Unknown Mamba SSU backend")


def test_a_parallel_config_validator_frame_is_config(tmp_path, triage_json):
    log = (
        "Traceback (most recent call last):\n"
        f'  File "{NEW_SITE}/pydantic/_internal/_dataclasses.py", line 120, in __init__\n'
        "    s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)\n"
        f'  File "{NEW_SITE}/vllm/config/parallel.py", line 601, in _validate_parallel_config\n'
        '    raise ValueError(f"tp_size={tp} must be divisible by dcp_size={dcp}.")\n'
        "ValueError: tp_size=4 must be divisible by dcp_size=3.\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "config"


def test_a_bare_getitem_name_places_nothing(tmp_path, triage_json):
    # must-not: every container has __getitem__; without its file the name says no step
    log = (
        "Traceback (most recent call last):\n"
        "  __getitem__\n"
        "KeyError: 'model.layers.31.mlp.experts.w2_weight'\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert "__getitem__" not in data["phase_reason"]


def test_a_config_accessor_frame_under_kv_cache_sizing_is_not_config(tmp_path, triage_json):
    # must-not: ModelConfig's accessors run at every step; the caller (KV-cache sizing) decides
    log = (
        "Traceback (most recent call last):\n"
        f'  File "{NEW_SITE}/vllm/v1/engine/core.py", line 214, in _initialize_kv_caches\n'
        "    kv_cache_specs = self.model_executor.get_kv_cache_specs()\n"
        f'  File "{NEW_SITE}/vllm/config/model.py", line 1402, in get_num_layers_by_block_type\n'
        "    raise ValueError(\n"
        "ValueError: The model is an hybrid without a layers_block_type or an attn_type_list, or a "
        "layer_types in the hf_config, cannot determine the num of attention layers\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] != "config"
