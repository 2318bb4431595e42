"""Shapes of real logs the triage must read by mechanism, not by message (issue 9): `grep -n`
excerpts, hand-abbreviated prefixes, vLLM's own client-error classes after ready, a doomed
platform line in a program that never runs vLLM, NCCL's set-up lines as the last sign of life,
and call-path helpers that two steps share. Every log is written for the test after how vLLM
prints it."""

from __future__ import annotations

from triage_helpers import survived as _survived
from triage_helpers import write_log as _write

A = "(APIServer pid=2294868)"
E = "(EngineCore pid=2295872)"
W = "(Worker_TP3_EP3 pid=2295939)"
SITE = "/usr/local/lib/python3.12/dist-packages"


GREP_EXCERPT = (
    f"17:{A} INFO 06-24 21:44:26 [utils.py:240] non-default args: {{'tensor_parallel_size': 4}}\n"
    f"1189:{W} INFO 06-24 21:47:27 [gpu_model_runner.py:4243] Graph capturing finished in 7 secs, took 0.34 GiB\n"
    f"1355:{A} INFO:     Application startup complete.\n"
    f'1357:{A} INFO:     127.0.0.1:57800 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request\n'
    f"1442:{A} vllm.exceptions.VLLMValidationError: max_tokens=9000 cannot be greater than max_model_len=4096.\n"
    f"1561:{W} ERROR 06-24 21:51:00 [multiproc_executor.py:762] IndexError: index 306 is out of bounds for dimension 0 with size 306\n"
    f"5223:{E} ERROR 06-24 21:51:00 [core.py:942] EngineCore encountered a fatal error.\n"
    f"5247:{E} ERROR 06-24 21:51:00 [core.py:942] RuntimeError: Worker failed with error 'index 306 is out of "
    "bounds for dimension 0 with size 306', please check the stack trace above for the root cause\n"
    f'5256:{A} INFO:     127.0.0.1:60426 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'
)


def test_a_grep_n_excerpt_is_read_as_the_log_it_was_cut_from(tmp_path, triage_json):
    data = triage_json(_write(tmp_path, GREP_EXCERPT))
    assert data["phase"] == "request"
    assert data["first_error"]["message"].startswith("IndexError: index 306 is out of bounds")
    assert data["first_error"]["process"] == "Worker_TP3_EP3"
    # the request vLLM rejected as the client's fault (a 4xx) was survived, not the root
    assert any("VLLMValidationError" in f["message"] for f in _survived(data))


def test_a_client_error_class_in_an_offline_run_is_still_fatal(tmp_path, triage_json):
    # no server was ready: an offline caller does not catch it and dies of it
    log = (
        "Traceback (most recent call last):\n"
        '  File "/work/rollout.py", line 40, in <module>\n'
        "    outputs = llm.generate(prompts, params)\n"
        f'  File "{SITE}/vllm/v1/engine/processor.py", line 380, in _validate_model_input\n'
        "    raise VLLMValidationError(\n"
        "vllm.exceptions.VLLMValidationError: max_tokens=9000 cannot be greater than max_model_len=4096.\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["message"].startswith("vllm.exceptions.VLLMValidationError")


def test_hidden_pid_and_cut_date_still_make_a_milestone(tmp_path, triage_json):
    log = (
        "(EngineCore pid=...) INFO ... Model loading took 14.53 GiB memory and 172.4 seconds\n"
        "(Stuck here indefinitely)\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "engine_reserve"
    assert data["first_error"]["category"] == "hang"
    assert "Model loading took" in data["first_error"]["text"]


NO_PLATFORM = (
    "INFO 06-10 11:36:23 [__init__.py:247] No platform detected, vLLM is running on UnspecifiedPlatform\n"
)


def test_no_platform_in_a_program_that_never_runs_vllm_is_no_failure(tmp_path, triage_json):
    log = (
        "python -m modelserver --model_id=org/bert-base --backend=huggingface\n"
        + NO_PLATFORM
        + f"{SITE}/torch/cuda/__init__.py:789: UserWarning: Can't initialize NVML\n"
        + '  warnings.warn("Can\'t initialize NVML")\n'
        + "2025-06-10 11:36:24.900 269781 modelserver [main.py:load_model():284] Loading encoder model\n"
        + "2025-06-10 11:36:26.764 269781 modelserver [encoder_model.py:load():204] Successfully loaded model\n"
        + "2025-06-10 11:36:26.764 269781 modelserver [model_server.py:register_model():402] Registering model\n"
        + "2025-06-10 11:36:26.786 269781 modelserver [server.py:_register_endpoints():108] Endpoints registered\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "none" and data["first_error"] is None
    assert any("No platform detected" in f["message"] for f in _survived(data))


def test_no_platform_followed_by_vllm_start_up_is_the_root(tmp_path, triage_json):
    log = NO_PLATFORM + (
        "INFO 06-10 11:36:25 [api_server.py:1043] vLLM API server version 0.8.5\n"
        "INFO 06-10 11:36:25 [api_server.py:1044] args: Namespace(subparser='serve', model_tag='org/m')\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "container"
    assert "No platform detected" in data["first_error"]["text"]


def test_no_platform_at_the_end_of_a_cut_paste_is_the_root(tmp_path, triage_json):
    log = "DEBUG 06-10 11:36:23 [__init__.py:58] Checking if CUDA platform is available.\n" + NO_PLATFORM
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "container"


def test_a_hang_on_nccl_set_up_lines_is_a_cuda_init_hang(tmp_path, triage_json):
    # a worker's NCCL INFO text and the API server's DEBUG line glued by two writers on one stream
    waiting = "DEBUG 08-09 20:55:{s:02d} [v1/engine/utils.py:1262] Waiting for 1 local, 0 remote core engine proc(s) to start."
    log = (
        f"pod-7b94:958:958 [1] NCCL INFO Channel 01/0 : (APIServer pid=1) {waiting.format(s=10)}\n"
        + "".join(f"(APIServer pid=1) {waiting.format(s=s)}\n" for s in (20, 30, 40, 50))
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "cuda_init"
    assert data["last_milestone"] == "distributed_init"


def test_a_quantization_config_missing_while_vllmconfig_validates_is_config(tmp_path, triage_json):
    log = (
        "INFO 06-17 05:17:17 api_server.py:912] vLLM API server version 0.7.3\n"
        "INFO 06-17 05:17:17 api_server.py:913] args: Namespace(model='org/m', quantization='awq')\n"
        "Traceback (most recent call last):\n"
        f'  File "{SITE}/vllm/engine/arg_utils.py", line 1334, in create_engine_config\n'
        "    config = VllmConfig(\n"
        f'  File "{SITE}/vllm/config.py", line 3279, in __post_init__\n'
        "    self.quant_config = VllmConfig._get_quantization_config(\n"
        f'  File "{SITE}/vllm/config.py", line 3222, in _get_quantization_config\n'
        "    quant_config = get_quant_config(model_config, load_config)\n"
        f'  File "{SITE}/vllm/model_executor/model_loader/weight_utils.py", line 193, in get_quant_config\n'
        "    raise ValueError(\n"
        "ValueError: Cannot find the config file for awq\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "config"
    assert data["first_error"]["message"] == "ValueError: Cannot find the config file for awq"


def test_an_attention_backend_the_platform_refuses_is_config(tmp_path, triage_json):
    p = "ERROR 09-05 06:01:06 [engine.py:467]"
    log = (
        f"{p}     attention_cls = current_platform.get_attn_backend_cls(\n"
        f'{p}   File "{SITE}/vllm/platforms/cpu.py", line 102, in get_attn_backend_cls\n'
        f'{p}     raise ValueError("CPU backend only supports V1.")\n'
        f"{p} ValueError: CPU backend only supports V1.\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "config"


def test_a_ray_wrapper_line_gives_way_to_the_exception_it_carries(tmp_path, triage_json):
    p = "ERROR 07-31 19:35:35 [core.py:586]"
    log = (
        f"{p} EngineCore failed to start.\n"
        f"{p} Traceback (most recent call last):\n"
        f'{p}   File "{SITE}/vllm/executor/ray_distributed_executor.py", line 397, in _init_workers_ray\n'
        f'{p}     self._run_workers("load_model",\n'
        f'{p}   File "{SITE}/ray/_private/worker.py", line 937, in get_objects\n'
        f"{p}     raise value.as_instanceof_cause()\n"
        f"{p} ray.exceptions.RayTaskError(TypeError): ray::RayWorkerWrapper.execute_method() (pid=13215, ip=10.0.0.3)\n"
        f'{p}   File "{SITE}/vllm/worker/worker_base.py", line 614, in execute_method\n'
        f"{p}     return run_method(self, method, args, kwargs)\n"
        f'{p}   File "{SITE}/vllm/model_executor/model_loader/default_loader.py", line 201, in _get_weights_iterator\n'
        f"{p}     weights_iterator = safetensors_weights_iterator(hf_weights_files, True)\n"
        f"{p} TypeError: _safetensors_weights_iterator() takes 1 positional argument but 2 were given\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["message"].startswith("TypeError: _safetensors_weights_iterator()")
    assert data["phase"] == "weight_load"


def test_an_llvm_abort_before_the_engine_died_is_the_root(tmp_path, triage_json):
    log = (
        "INFO 12-06 14:09:00 api_server.py:641] vLLM API server version 0.6.4\n"
        "INFO:     Application startup complete.\n"
        'INFO:     10.0.0.5:40312 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
        "LLVM ERROR: Unsupported rounding mode for conversion.\n"
        "ERROR 12-06 14:09:37 client.py:282] RuntimeError('Engine process (pid 16470) died.')\n"
        "ERROR 12-06 14:09:37 client.py:282] NoneType: None\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["message"] == "LLVM ERROR: Unsupported rounding mode for conversion."
    assert data["phase"] == "request"


CHAT_TEMPLATE = (
    "vllm.entrypoints.chat_utils.ChatTemplateResolutionError: As of transformers v4.44, default chat "
    "template is no longer allowed, so you must provide a chat template if the tokenizer does not define one.\n"
)


def test_a_lone_chat_template_error_is_one_request_answered(tmp_path, triage_json):
    log = "chat requests fail, request error:\n" + CHAT_TEMPLATE
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "none" and data["first_error"] is None
    assert any("ChatTemplateResolutionError" in f["message"] for f in _survived(data))


def test_an_uncaught_chat_template_error_in_an_offline_caller_is_the_root(tmp_path, triage_json):
    log = (
        "Traceback (most recent call last):\n"
        '  File "/work/chat.py", line 12, in <module>\n'
        "    outputs = llm.chat(messages)\n"
        f'  File "{SITE}/vllm/entrypoints/chat_utils.py", line 1500, in apply_hf_chat_template\n'
        "    raise ChatTemplateResolutionError(\n" + CHAT_TEMPLATE
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["message"].startswith(
        "vllm.entrypoints.chat_utils.ChatTemplateResolutionError"
    )


def test_a_v0_log_that_stops_after_the_attention_backend_is_a_start_up_hang(tmp_path, triage_json):
    log = (
        "INFO 08-12 14:54:40 llm_engine.py:174] Initializing an LLM engine (v0.5.4) with config: model='org/m'\n"
        "INFO 08-12 14:54:48 selector.py:79] Using Flashinfer backend.\n"
        "WARNING 08-12 14:54:48 selector.py:80] Flashinfer will be stuck on llama-2-7b, please avoid it.\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "cuda_init"  # V0 picks the backend as the worker is built, before init_device
    assert data["first_error"]["category"] == "hang"


def test_a_v1_hang_after_the_attention_backend_is_still_in_loading(tmp_path, triage_json):
    e = "(EngineCore_DP0 pid=157) INFO 09-21 11:04"
    log = (
        f"{e}:10 [core.py:76] Initializing a V1 LLM engine (v0.10.2) with config: model='org/m'\n"
        f"{e}:12 [parallel_state.py:1165] rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0\n"
        f"{e}:12 [gpu_model_runner.py:2338] Starting to load model org/m...\n"
        f"{e}:13 [cuda.py:362] Using Flash Attention backend on V1 engine.\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "weight_load"


NVML_TAIL = (
    f'(RayWorkerWrapper pid=729) ERROR 01-22 15:13:58 worker_base.py:467]   File "{SITE}/vllm/platforms/cuda.py", '
    "line 159, in get_device_capability\n"
    "(RayWorkerWrapper pid=729) ERROR 01-22 15:13:58 worker_base.py:467]     handle = "
    "pynvml.nvmlDeviceGetHandleByIndex(physical_device_id)\n"
    f'(RayWorkerWrapper pid=729) ERROR 01-22 15:13:58 worker_base.py:467]   File "{SITE}/pynvml.py", line 979, '
    "in _nvmlCheckReturn\n"
    "(RayWorkerWrapper pid=729) ERROR 01-22 15:13:58 worker_base.py:467]     raise NVMLError(ret)\n"
    "(RayWorkerWrapper pid=729) ERROR 01-22 15:13:58 worker_base.py:467] pynvml.NVMLError_InvalidArgument: Invalid Argument\n"
    "ERROR 01-22 15:13:59 engine.py:366] Invalid Argument\n"
    "ERROR 01-22 15:13:59 engine.py:366] Traceback (most recent call last):\n"
)


def test_pynvml_names_its_exception_classes_after_the_return_code(tmp_path, triage_json):
    # `NVMLError_InvalidArgument` ends no class name in Error, yet it is the exception line; the
    # engine's `Invalid Argument` below it is run_mp_engine's copy of the worker's error.
    data = triage_json(_write(tmp_path, NVML_TAIL))
    assert data["first_error"]["line"] == 5
    assert data["first_error"]["category"] == "nvml_invalid_device_index"
    assert data["phase"] == "cuda_init"
