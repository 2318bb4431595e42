"""Shapes real server logs take that the reading first missed: several compose services in one log,
Python loggers with ` | `-separated fields (FastChat, loguru) or a pid before the location, asyncio's
report of a future nobody awaited, a cut launcher line, a TPU plugin's worker frames. Each input is
written here after the public reports cited in the rules and prefixes; none is a copy of one.
"""

from __future__ import annotations

from triage_helpers import write_log as _write


def test_a_launcher_line_cut_after_terminating_still_says_the_engine_died(tmp_path, triage_json):
    text = (
        "ERROR 05-17 03:12:44 async_llm_engine.py:61] RuntimeError: Engine loop has died\n"
        'INFO:     172.18.0.5:51344 - "GET /metrics HTTP/1.1" 200 OK\n'
        "CRITICAL 05-17 03:12:45 launcher.py:72] AsyncLLMEngine has failed, terminating\n"
    )
    data = triage_json(_write(tmp_path, text))
    assert data["first_error"]["message"] == "RuntimeError: Engine loop has died"
    # The engine was serving when it died: the cut line is the consequence that says so.
    assert data["phase"] == "request"


_TPU = "(EngineCore_DP0 pid=611) ERROR 06-02 14:20:11 [core.py:1098]"


def test_a_tpu_plugin_workers_load_frames_place_the_failure_in_weight_load(tmp_path, triage_json):
    text = (
        f"{_TPU} EngineCore failed to start.\n"
        f"{_TPU} Traceback (most recent call last):\n"
        f'{_TPU}   File "/opt/venv/lib/python3.12/site-packages/vllm/v1/executor/uniproc_executor.py", line 48, in _init_executor\n'
        f"{_TPU}     self.driver_worker.load_model()\n"
        f'{_TPU}   File "/opt/venv/lib/python3.12/site-packages/tpu_inference/worker/tpu_worker.py", line 402, in load_model\n'
        f"{_TPU}     self.model_runner.load_model()\n"
        f'{_TPU}   File "/opt/venv/lib/python3.12/site-packages/tpu_inference/runner/tpu_runner.py", line 545, in load_model\n'
        f"{_TPU}     model = get_model(\n"
        f'{_TPU}   File "/opt/venv/lib/python3.12/site-packages/tpu_inference/models/common/model_loader.py", line 412, in get_model\n'
        f"{_TPU}     return _get_nnx_model(model_class, vllm_config, rng, mesh)\n"
        f"{_TPU} ValueError: Sharding spec ('model', None) does not divide dimension 0 of size 14 by mesh axis 'model' of size 4\n"
    )
    data = triage_json(_write(tmp_path, text))
    assert data["phase"] == "weight_load"
    assert "tpu_inference/models/common/model_loader.py" in data["phase_reason"]


def test_a_tpu_workers_hbm_check_is_the_kv_reservation(tmp_path, triage_json):
    text = (
        f"{_TPU} EngineCore failed to start.\n"
        f"{_TPU} Traceback (most recent call last):\n"
        f'{_TPU}   File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 240, in _initialize_kv_caches\n'
        f"{_TPU}     available_gpu_memory = self.model_executor.determine_available_memory()\n"
        f'{_TPU}   File "/opt/venv/lib/python3.12/site-packages/tpu_inference/worker/tpu_worker.py", line 318, in determine_available_memory\n'
        f"{_TPU}     raise ValueError(\n"
        f"{_TPU} ValueError: total_hbm_used_gb=29.8GiB exceeds total_hbm_limit_cap_gb=28.8GiB by 1.0GiB. "
        "Please consider increasing --gpu-memory-utilization from 0.9 to a larger value.\n"
    )
    data = triage_json(_write(tmp_path, text))
    assert data["phase"] == "engine_reserve"
    assert "tpu_inference/worker/tpu_worker.py" in data["phase_reason"]


_FASTCHAT_WORKER = (
    "2024-03-05 11:20:41 | INFO | model_worker | Send heart beat. Models: ['qwen-14b-chat']. "
    "Semaphore: Semaphore(value=4, locked=False). call_ct: 311. worker_id: 3f2a9c1b.\n"
    '2024-03-05 11:20:44 | INFO | stdout | INFO:     10.8.0.12:40118 - "POST /worker_generate_stream HTTP/1.1" 200 OK\n'
)


def test_asyncios_future_repr_is_the_failure_when_no_traceback_names_it(tmp_path, triage_json):
    text = _FASTCHAT_WORKER + (
        "2024-03-05 11:20:45 | ERROR | asyncio | Future exception was never retrieved\n"
        "future: <Future finished exception=RayTaskError(ValueError)(ValueError('seq_group 1841 has no "
        "logical token blocks'))>\n"
    )
    data = triage_json(_write(tmp_path, text))
    assert data["first_error"]["rule"] == "runtime.asyncio_unretrieved"
    assert data["first_error"]["line"] == 4
    assert data["phase"] == "request"


def test_a_more_specific_rule_under_the_future_repr_still_wins(tmp_path, triage_json):
    text = _FASTCHAT_WORKER + (
        "2024-03-05 11:20:45 | ERROR | asyncio | Task exception was never retrieved\n"
        "future: <Task finished name='Task-12' coro=<AsyncLLMEngine.run_engine_loop() done, defined at "
        "/srv/venv/lib/python3.10/site-packages/vllm/engine/async_llm_engine.py:487> "
        "exception=RuntimeError('CUDA error: an illegal memory access was encountered')>\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/venv/lib/python3.10/site-packages/vllm/engine/async_llm_engine.py", line 497, in run_engine_loop\n'
        "    has_requests_in_progress = await self.engine_step()\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    data = triage_json(_write(tmp_path, text))
    assert data["first_error"]["rule"] == "cuda.illegal_memory_access"
    assert data["phase"] == "request"


def test_a_cancelled_gather_at_shutdown_is_not_a_failure(tmp_path, triage_json):
    text = (
        "INFO 08-14 09:02:10 api_server.py:212] vLLM API server version 0.5.4\n"
        "INFO:     Application startup complete.\n"
        'INFO:     127.0.0.1:39110 - "POST /v1/completions HTTP/1.1" 200 OK\n'
        "INFO:     Shutting down\n"
        "_GatheringFuture exception was never retrieved\n"
        "future: <_GatheringFuture finished exception=CancelledError()>\n"
    )
    data = triage_json(_write(tmp_path, text))
    assert data["first_error"] is None


def test_a_pid_and_bracketed_location_logging_config_is_read_as_a_logger(tmp_path, triage_json):
    # `%(asctime)s %(levelname)s %(process)d [%(filename)s:%(lineno)d] %(message)s`, Windows line ends
    h = "2024-12-19 21:40:35"
    text = (
        f"{h} WARNING 4242 [model_runner_base.py:143] Failed to pickle inputs of failed execution: "
        "CUDA error: an illegal memory access was encountered\r\n"
        f"{h} ERROR 4242 [async_llm_engine.py:64] Engine background task failed\r\n"
        f"{h} ERROR 4242 [async_llm_engine.py:64] Traceback (most recent call last):\r\n"
        f'{h} ERROR 4242 [async_llm_engine.py:64]   File "/srv/venv/lib/python3.11/site-packages/vllm/worker/model_runner.py", line 1703, in execute_model\r\n'
        f"{h} ERROR 4242 [async_llm_engine.py:64]     hidden_or_intermediate_states = model_executable(\r\n"
    )
    data = triage_json(_write(tmp_path, text))
    assert data["first_error"]["rule"] == "cuda.illegal_memory_access"
    assert data["first_error"]["level"] == "WARNING"
    # The traceback's frames are read once the pid and location are off: the serving loop failed.
    assert data["phase"] == "request"


def test_a_fastchat_workers_error_lines_keep_their_level_and_message(tmp_path, triage_json):
    text = _FASTCHAT_WORKER + (
        "2024-03-05 11:21:02 | ERROR | stderr | Traceback (most recent call last):\n"
        '2024-03-05 11:21:02 | ERROR | stderr |   File "/srv/venv/lib/python3.10/site-packages/vllm/worker/worker.py", line 118, in load_model\n'
        "2024-03-05 11:21:02 | ERROR | stderr |     self.model_runner.load_model()\n"
        "2024-03-05 11:21:02 | ERROR | stderr | torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate "
        "448.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 301.44 MiB is free.\n"
    )
    data = triage_json(_write(tmp_path, text))
    assert data["first_error"]["message"].startswith("torch.cuda.OutOfMemoryError: CUDA out of memory.")
    assert data["first_error"]["level"] == "ERROR"
    assert data["phase"] == "weight_load"


_SMALL = "chat-small  | "
_LARGE = "chat-large  | "


def _failing_small_server() -> str:
    e = f"{_SMALL}(EngineCore_DP0 pid=88) ERROR 03-09 12:56:44 [core.py:1100]"
    return (
        f"{_SMALL}(EngineCore_DP0 pid=88) INFO 03-09 12:56:00 [default_loader.py:293] Loading weights took 41.02 seconds\n"
        f"{_SMALL}(EngineCore_DP0 pid=88) INFO 03-09 12:56:44 [gpu_worker.py:424] Available KV cache memory: -1.75 GiB\n"
        f"{e} EngineCore failed to start.\n"
        f"{e} Traceback (most recent call last):\n"
        f'{e}   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/core/kv_cache_utils.py", line 623, in _check_enough_kv_cache_memory\n'
        f"{e}     raise ValueError(\n"
        f"{e} ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
        "when initializing the engine.\n"
    )


def test_another_compose_services_readiness_is_not_the_failing_ones(tmp_path, triage_json):
    text = (
        f"{_LARGE}(APIServer pid=1) INFO 03-09 12:55:30 [api_server.py:1880] vLLM API server version 0.11.0\n"
        f"{_LARGE}(APIServer pid=1) INFO 03-09 12:55:33 [launcher.py:47] Route: /v1/completions, Methods: POST\n"
        f"{_LARGE}(APIServer pid=1) INFO:     Application startup complete.\n"
        + _failing_small_server()
        + f'{_LARGE}(APIServer pid=1) INFO:     10.0.0.2:5100 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    )
    data = triage_json(_write(tmp_path, text))
    assert data["first_error"]["rule"] == "kv.no_memory"
    assert data["phase"] == "engine_reserve"
    # chat-large's readiness and traffic are another server's: chat-small never became ready.
    assert data["ready"] is False
    assert "compose service chat-small" in data["phase_reason"]


def test_a_service_whose_pids_repeat_anothers_is_still_another_server(tmp_path, triage_json):
    # Both containers' engines are `(EngineCore_DP0 pid=88)`: only the service tells them apart, so
    # chat-large going on past the KV reservation is not chat-small surviving its error.
    text = _failing_small_server() + (
        f"{_LARGE}(EngineCore_DP0 pid=88) INFO 03-09 12:56:50 [gpu_worker.py:424] Available KV cache memory: 12.40 GiB\n"
        f"{_LARGE}(EngineCore_DP0 pid=88) INFO 03-09 12:56:51 [kv_cache_utils.py:1087] GPU KV cache size: 232,368 tokens\n"
        f"{_LARGE}(EngineCore_DP0 pid=88) INFO 03-09 12:57:19 [core.py:222] init engine (profile, create kv cache, "
        "warmup model) took 28.1 seconds\n"
    )
    data = triage_json(_write(tmp_path, text))
    assert data["first_error"]["rule"] == "kv.no_memory"
    assert data["phase"] == "engine_reserve"


def test_one_compose_service_is_read_as_one_server(tmp_path, triage_json):
    e = f"{_SMALL}(EngineCore_DP0 pid=88) ERROR 03-09 13:00:00 [core.py:900]"
    text = (
        f"{_SMALL}(APIServer pid=1) INFO:     Application startup complete.\n"
        f'{_SMALL}(APIServer pid=1) INFO:     10.0.0.2:5100 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
        f"{e} RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    data = triage_json(_write(tmp_path, text))
    assert data["phase"] == "request"
    assert data["ready"] is True
    assert "compose service" not in data["phase_reason"]


def test_a_stray_pipe_line_is_no_second_service(tmp_path, triage_json):
    # A table pasted above the log (`name | value`) is not a container of its own.
    e = f"{_SMALL}(EngineCore_DP0 pid=88) ERROR 03-09 13:00:00 [core.py:900]"
    text = (
        "model | Qwen/Qwen2.5-7B-Instruct\n"
        f"{_SMALL}(APIServer pid=1) INFO:     Application startup complete.\n"
        f"{e} RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    data = triage_json(_write(tmp_path, text))
    assert data["phase"] == "request"
    assert data["ready"] is True


_KSERVE = "2025-04-07 08:49:55.100 408300 kserve"


def test_a_kserve_records_bare_exc_info_traceback_is_its_block(tmp_path, triage_json):
    # Python's logging prints exc_info under the message with no prefix (KServe's huggingfaceserver
    # runs vLLM in-process and logs `Failed to start model server: <str(e)>` with the traceback).
    text = (
        "INFO 04-07 08:49:40 [__init__.py:256] Automatically detected platform cuda.\n"
        f"{_KSERVE} INFO [model_server.py:register_model():398] Registering model: model\n"
        "INFO 04-07 08:49:52 [model_runner.py:1110] Starting to load model acme/chat-7b...\n"
        f"{_KSERVE} ERROR [__main__.py:<module>():263] Failed to start model server: CUDA out of memory. "
        "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 14.58 GiB of which 1.10 GiB is free.\n"
        "Traceback (most recent call last):\n"
        '  File "/ws/huggingfaceserver/__main__.py", line 259, in <module>\n'
        "    model.load()\n"
        '  File "/venv/lib/python3.12/site-packages/vllm/worker/model_runner.py", line 1112, in load_model\n'
        "    self.model = get_model(vllm_config=self.vllm_config)\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
        "capacity of 14.58 GiB of which 1.10 GiB is free.\n"
    )
    data = triage_json(_write(tmp_path, text))
    # The exception line names the cause; the logged headline quoting it opens the block.
    assert data["first_error"]["message"].startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert data["first_error"]["block"]["start"] == 4
    assert data["phase"] == "weight_load"


def test_a_kserve_error_line_alone_is_the_failure(tmp_path, triage_json):
    text = (
        "/venv/lib/python3.10/site-packages/huggingface_hub/file_download.py:1132: FutureWarning: "
        "`resume_download` is deprecated and will be removed in version 1.0.0.\n"
        "  warnings.warn(\n"
        "2024-07-01 07:28:04.488 1 kserve ERROR [__main__.py:<module>():254] Failed to start model "
        "server: integer division or modulo by zero\n"
    )
    data = triage_json(_write(tmp_path, text))
    assert data["first_error"]["level"] == "ERROR"
    assert (
        data["first_error"]["message"] == "Failed to start model server: integer division or modulo by zero"
    )


def test_a_kserve_info_line_over_a_bare_traceback_is_not_its_headline(tmp_path, triage_json):
    text = (
        f"{_KSERVE} INFO [model_server.py:register_model():398] Registering model: model\n"
        "Traceback (most recent call last):\n"
        '  File "/venv/lib/python3.12/site-packages/vllm/entrypoints/cli/main.py", line 54, in main\n'
        "    args = parser.parse_args()\n"
        "ValueError: invalid literal for int() with base 10: 'auto'\n"
    )
    data = triage_json(_write(tmp_path, text))
    assert data["first_error"]["message"].startswith("ValueError: invalid literal")
    assert data["first_error"]["block"]["start"] == 2


_RELAY = "2025-06-27 12:57:51,600 - __main__ - INFO - "


def test_a_server_relayed_by_a_wrappers_logger_is_read_as_its_own_lines(tmp_path, triage_json):
    # olmocr's pipeline runs `vllm serve` as a child and logs each of its lines at INFO: vLLM's
    # own prefix inside is the record, so its ERROR and its frames count
    text = (
        "2025-06-27 12:56:10,101 - __main__ - INFO - Starting pipeline with PID 4021\n"
        f"{_RELAY}INFO 06-27 12:56:30 [core.py:70] Initializing a V1 LLM engine (v0.9.1) with config: "
        "model='allenai/olmOCR-7B-0225-preview'\n"
        f"{_RELAY}ERROR 06-27 12:57:51 [core.py:515] EngineCore failed to start.\n"
        f"{_RELAY}ERROR 06-27 12:57:51 [core.py:515] Traceback (most recent call last):\n"
        f'{_RELAY}ERROR 06-27 12:57:51 [core.py:515]   File "/opt/venv/lib/python3.11/site-packages/vllm/'
        'v1/worker/gpu_worker.py", line 140, in init_device\n'
        f"{_RELAY}ERROR 06-27 12:57:51 [core.py:515]     raise ValueError(\n"
        f"{_RELAY}ERROR 06-27 12:57:51 [core.py:515] ValueError: Free memory on device (10.2/23.6 GiB) on "
        "startup is less than desired GPU memory utilization (0.8, 18.9 GiB).\n"
        "2025-06-27 12:57:52,001 - __main__ - WARNING - Attempt 19: Please wait for vllm server to become ready...\n"
    )
    data = triage_json(_write(tmp_path, text))
    assert data["phase"] == "cuda_init"
    assert data["first_error"]["line"] == 7
    assert data["first_error"]["level"] == "ERROR"
    assert data["first_error"]["message"].startswith("ValueError: Free memory on device")
