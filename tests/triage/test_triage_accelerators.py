"""Non-CUDA accelerators say the same things in their own words (DESIGN §3: rules are written for
causes). ROCm's torch hipifies CUDA's messages ("HIP error: …", "HIP out of memory"), Intel XPU
reports Level Zero results (UR_RESULT_ERROR_…), and Ascend NPUs print CANN runtime lines
(`…[FUNC:x][FILE:y][LINE:n]`) or torch_npu's "NPU function error". Each log here is written the
way those stacks print, after the shapes of public reports (ROCm/legacy-rocm-build, vllm-ascend
issue threads, XPU vLLM threads); none is a copy of one.
"""

from __future__ import annotations

from triage_helpers import write_log as _write

W = "(EngineCore_DP0 pid=412) (VllmWorker rank=0 pid=530)"
PREFIX = f"{W} ERROR 07-01 08:38:50 [multiproc_executor.py:546]"

ROCM_START = """INFO 02-17 13:41:20 [__init__.py:239] Automatically detected platform rocm.
INFO 02-17 13:41:24 [api_server.py:1034] vLLM API server version 0.8.5
INFO 02-17 13:41:31 [llm_engine.py:241] Initializing a V0 LLM engine (v0.8.5) with config: model='acme/chat-7b'
"""


def test_rocm_invalid_device_function_is_a_build_without_the_gpus_isa(tmp_path, triage_json):
    log = ROCM_START + (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/model_executor/layers/rotary_embedding.py", line 116, in _compute_cos_sin_cache\n'
        "    inv_freq = self._compute_inv_freq(self.base)\n"
        '  File "/opt/venv/lib/python3.12/site-packages/torch/utils/_device.py", line 104, in __torch_function__\n'
        "    return func(*args, **kwargs)\n"
        "RuntimeError: HIP error: invalid device function\n"
        "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"
        "For debugging consider passing AMD_SERIALIZE_KERNEL=3\n"
        "Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions.\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["rule"] == "cuda.no_kernel_image"
    assert data["first_error"]["message"] == "RuntimeError: HIP error: invalid device function"
    # the boilerplate under it is noise, never a second error
    assert not any("AMD_SERIALIZE_KERNEL" in f.get("message", "") for f in data["findings"])


def test_hip_out_of_memory_while_loading_is_a_weight_load_oom(tmp_path, triage_json):
    log = ROCM_START + (
        "INFO 02-17 13:41:40 [model_runner.py:1110] Starting to load model acme/chat-7b...\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/model_executor/model_loader/loader.py", line 441, in load_model\n'
        "    model = _initialize_model(vllm_config=vllm_config)\n"
        '  File "/opt/venv/lib/python3.12/site-packages/torch/nn/modules/module.py", line 1326, in convert\n'
        "    return t.to(\n"
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 978.00 MiB. GPU 0 has a total capacity of 15.98 GiB of which 630.00 MiB is free.\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["rule"] == "oom.torch"
    assert data["phase"] == "weight_load"


def test_an_ascend_set_device_failure_is_device_init_even_in_the_plugins_own_files(tmp_path, triage_json):
    log = (
        f"{PREFIX} WorkerProc failed to start.\n"
        f"{PREFIX} Traceback (most recent call last):\n"
        f'{PREFIX}   File "/vllm-workspace/vllm/vllm/v1/executor/multiproc_executor.py", line 520, in worker_main\n'
        f"{PREFIX}     worker = WorkerProc(*args, **kwargs)\n"
        f'{PREFIX}   File "/vllm-workspace/vllm-ascend/vllm_ascend/worker/worker_v1.py", line 221, in init_device\n'
        f"{PREFIX}     self.device = self._init_device()\n"
        f'{PREFIX}   File "/vllm-workspace/vllm-ascend/vllm_ascend/worker/worker_v1.py", line 205, in _init_device\n'
        f"{PREFIX}     NPUPlatform.set_device(device)\n"
        f'{PREFIX}   File "/usr/local/python3.11.13/lib/python3.11/site-packages/torch_npu/npu/utils.py", line 80, in set_device\n'
        f"{PREFIX}     torch_npu._C._npu_setDevice(device_id)\n"
        f"{PREFIX} RuntimeError: Initialize:torch_npu/csrc/core/npu/sys_ctrl/npu_sys_ctrl.cpp:146 NPU function error: c10_npu::SetDevice(device_id_), error code is 507033\n"
        f"{PREFIX} [ERROR] 2025-07-01-08:38:50 (PID:530, Device:-1, RankID:1) ERR00100 PTA call acl api failed\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["rule"] == "cuda.npu_device_init"
    assert data["first_error"]["message"].startswith("RuntimeError: Initialize:")
    assert data["phase"] == "cuda_init"
    assert data["first_error"]["component"] == "torch_npu"


def test_bare_cann_runtime_lines_name_the_device_that_could_not_be_counted(tmp_path, triage_json):
    e = "(EngineCore pid=118)        "
    log = (
        f"{e} rtGetDeviceCount execution failed, reason=driver error:internal error[FUNC:FuncErrorReason][FILE:error_message_manage.cc][LINE:65]\n"
        f"{e} get device count failed, runtime result = 507899.[FUNC:ReportCallError][FILE:log_inner.cpp][LINE:148]\n"
        f"{e} rtSetDefaultDeviceId execution failed, reason=driver error:internal error[FUNC:FuncErrorReason][FILE:error_message_manage.cc][LINE:65]\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "cuda_init"
    assert data["first_error"]["message"].startswith("rtGetDeviceCount execution failed")


def test_a_healthy_npu_run_mentioning_its_device_is_no_failure(tmp_path, triage_json):
    log = (
        "INFO 07-16 06:40:50 [__init__.py:235] Platform plugin ascend is activated\n"
        "INFO 07-16 06:40:52 [core.py:69] Initializing a V1 LLM engine (v0.9.2) with config: model='acme/chat-7b', device_config=npu\n"
        "INFO 07-16 06:41:40 [worker_v1.py:180] Available memory: 43120418816, total memory: 65452113920\n"
        "INFO 07-16 06:42:01 [api_server.py:1818] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
        "INFO:     Application startup complete.\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "none"
    assert data["first_error"] is None


def test_xpu_device_lost_is_a_kernel_fault(tmp_path, triage_json):
    log = (
        f"{PREFIX} Traceback (most recent call last):\n"
        f'{PREFIX}   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/xpu_model_runner.py", line 60, in execute_model\n'
        f"{PREFIX}     return super().execute_model(scheduler_output)\n"
        f"{PREFIX} RuntimeError: level_zero backend failed with error: 20 (UR_RESULT_ERROR_DEVICE_LOST)\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["rule"] == "cuda.kernel_fault"


def test_a_cann_device_open_failure_in_a_workers_logged_text_is_device_init(tmp_path, triage_json):
    p = "(RayWorkerWrapper pid=90210) ERROR 02-26 09:45:37 worker_base.py:572]"
    log = (
        f"{p} Error executing method init_device. This might cause deadlock in distributed execution.\n"
        f"{p}         The argument is invalid.Reason: Set visible device failed, invalid device=2, input visible devices:2\n"
        f"{p}         rtSetDevice execute failed, reason=[device id error][FUNC:FuncErrorReason][FILE:error_message_manage.cc][LINE:53]\n"
        f"{p}         open device 2 failed, runtime result = 107001.[FUNC:ReportCallError][FILE:log_inner.cpp][LINE:161]\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "cuda_init"
    assert data["first_error"]["rule"] == "cuda.npu_device_init"
    assert "Set visible device failed" in data["first_error"]["message"]


def test_an_hccl_communicator_failure_at_first_collective_is_collective_init(tmp_path, triage_json):
    p = "(TaskRunner pid=4676)"
    log = (
        f"{p} Traceback (most recent call last):\n"
        f'{p}   File "/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 4159, in barrier\n'
        f"{p}     work = group.barrier(opts=opts)\n"
        f"{p} RuntimeError: create_config:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:102 HCCL function error: hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, &(comm->hcclComm_)), error code is 7\n"
        f"{p} [ERROR] 2025-04-24-16:14:56 (PID:4683, Device:0, RankID:2) ERR02200 DIST call hccl api failed.\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "cuda_init"
    assert data["first_error"]["rule"] == "cuda.hccl_error"
    assert data["first_error"]["message"].startswith("RuntimeError: create_config")


def test_vllms_own_extension_failing_to_import_is_no_optional_backend(tmp_path, triage_json):
    log = (
        "WARNING 06-13 11:42:20 _custom_ops.py:11] Failed to import from vllm._C with "
        "ImportError('/usr/local/lib/python3.10/dist-packages/vllm/_C.abi3.so: undefined symbol: _ZN5torch7LibraryC1ENS0_4KindE')\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["rule"] == "cuda.extension_abi"
