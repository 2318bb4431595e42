"""The root is an error the failing process did not survive (DESIGN §3), found by structure first.

Each log here is written the way vLLM prints it (V0 and V1 prefixes, bare Python tracebacks) and
asserts what a careful reader concludes: which line names the cause, in which phase, and which
errors the server went on after.
"""

from __future__ import annotations

import pytest
from triage_helpers import survived as _survived
from triage_helpers import write_log as _write

E = "(EngineCore_DP0 pid=157)"
A = "(APIServer pid=1)"

V1_START = f"""INFO 09-21 11:03:52 [__init__.py:216] Automatically detected platform cuda.
{A} INFO 09-21 11:03:56 [api_server.py:1896] vLLM API server version 0.10.2
{A} INFO 09-21 11:03:56 [utils.py:328] non-default args: {{'model_tag': 'org/m', 'model': 'org/m'}}
{E} INFO 09-21 11:04:10 [core.py:76] Initializing a V1 LLM engine (v0.10.2) with config: model='org/m'
{E} INFO 09-21 11:04:12 [parallel_state.py:1165] rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0
{E} INFO 09-21 11:04:12 [gpu_model_runner.py:2338] Starting to load model org/m...
"""


def test_a_retried_hub_failure_is_survived_and_the_later_fatal_error_is_the_root(tmp_path, triage_json):
    log = V1_START + (
        f"{E} WARNING 09-21 11:04:13 [weight_utils.py:90] Retrying listing of repo files\n"
        f"{E} ERROR 09-21 11:04:13 [weight_utils.py:95] httpcore.ConnectError: [Errno -3] Temporary failure in name resolution\n"
        f"{E} INFO 09-21 11:04:18 [default_loader.py:268] Loading weights took 4.51 seconds\n"
        f"{E} INFO 09-21 11:04:18 [gpu_model_runner.py:2392] Model loading took 14.2487 GiB and 5.346811 seconds\n"
        f"{E} ERROR 09-21 11:04:40 [core.py:718] EngineCore failed to start.\n"
        f"{E} ERROR 09-21 11:04:40 [core.py:718] Traceback (most recent call last):\n"
        f'{E} ERROR 09-21 11:04:40 [core.py:718]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/core/kv_cache_utils.py", line 699, in check_enough_kv_cache_memory\n'
        f'{E} ERROR 09-21 11:04:40 [core.py:718]     raise ValueError("No available memory for the cache blocks. "\n'
        f"{E} ERROR 09-21 11:04:40 [core.py:718] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["message"].startswith("ValueError: No available memory for the cache blocks")
    assert data["phase"] == "engine_reserve"
    survived = _survived(data)
    assert len(survived) == 1
    assert "Temporary failure in name resolution" in survived[0]["message"]
    assert "Loading weights took" not in survived[0]["message"]  # the reason names the step, not the text
    assert "weights_loaded" in survived[0]["message"]


def test_an_error_logged_before_the_server_became_ready_is_no_failure(tmp_path, triage_json):
    log = V1_START + (
        f"{E} ERROR 09-21 11:04:13 [weight_utils.py:120] Cannot list revisions: requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded with url: /api/models/org/m\n"
        f"{E} INFO 09-21 11:04:18 [default_loader.py:268] Loading weights took 4.51 seconds\n"
        f"{E} INFO 09-21 11:05:02 [core.py:214] init engine (profile, create kv cache, warmup model) took 41.2 seconds\n"
        f"{A} INFO 09-21 11:05:04 [api_server.py:1971] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
        f"{A} INFO:     Application startup complete.\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "none"
    assert data["first_error"] is None
    assert "Cannot list revisions" in _survived(data)[0]["message"]


def test_a_request_error_followed_by_served_requests_is_survived(tmp_path, triage_json):
    log = V1_START + (
        f"{A} INFO:     Application startup complete.\n"
        f'{A} INFO:     10.0.0.7:40112 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
        f"{E} ERROR 09-21 12:10:00 [core.py:800] RuntimeError: shape '[0, -1, 128]' is invalid for input of size 71680\n"
        f'{A} INFO:     10.0.0.7:40113 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'
        f'{A} INFO:     10.0.0.7:40114 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "none"
    assert "went on serving requests" in _survived(data)[0]["message"]


def test_a_request_error_followed_only_by_500s_is_the_root(tmp_path, triage_json):
    log = V1_START + (
        f"{A} INFO:     Application startup complete.\n"
        f"{E} ERROR 09-21 12:10:00 [core.py:800] RuntimeError: shape '[0, -1, 128]' is invalid for input of size 71680\n"
        f'{A} INFO:     10.0.0.7:40113 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'
        f'{A} INFO:     10.0.0.7:40114 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "request"
    assert data["first_error"]["message"].startswith("RuntimeError: shape")
    assert _survived(data) == []


def test_a_restart_after_the_error_is_not_survival(tmp_path, triage_json):
    restarted = V1_START.replace("11:0", "11:2")
    log = V1_START + (
        f"{E} ERROR 09-21 11:04:13 [core.py:718] ValueError: Unsupported attention head size 80\n"
        + restarted
        + f"{E} INFO 09-21 11:24:18 [default_loader.py:268] Loading weights took 4.51 seconds\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["message"] == "ValueError: Unsupported attention head size 80"


def test_a_bare_cli_traceback_after_an_info_line_is_the_root(tmp_path, triage_json):
    # `vllm serve` validates --chat-template before logging is configured: Python prints the
    # traceback with no prefix right after the last INFO line.
    log = (
        "INFO 11-20 09:12:01 [__init__.py:216] Automatically detected platform cuda.\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/bin/vllm", line 10, in <module>\n'
        "    sys.exit(main())\n"
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/cli/main.py", line 54, in main\n'
        "    cmd.validate(args)\n"
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/cli/serve.py", line 62, in validate\n'
        "    validate_parsed_serve_args(args)\n"
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/cli_args.py", line 290, in validate_parsed_serve_args\n'
        "    validate_chat_template(args.chat_template)\n"
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/chat_utils.py", line 410, in validate_chat_template\n'
        "    raise ValueError(\n"
        "ValueError: The supplied chat template string (./tmpl.jinja) appears path-like, but doesn't exist!\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["message"].startswith("ValueError: The supplied chat template string")
    assert data["first_error"]["kind"] == "root"
    assert data["phase"] == "config"


def test_a_prefixed_info_line_is_not_the_headline_of_a_bare_traceback(tmp_path, triage_json):
    log = (
        "INFO 07-14 12:14:17 llm_engine.py:249] Initializing an LLM engine (v0.6.4.post1) with config: model='org/m'\n"
        "INFO 07-14 12:14:20 model_runner.py:1072] Starting to load model org/m...\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/app/run.py", line 7, in <module>\n'
        '    llm = LLM(model="org/m")\n'
        '  File "/opt/venv/lib/python3.10/site-packages/vllm/worker/model_runner.py", line 1074, in load_model\n'
        "    self.model = get_model(vllm_config=self.vllm_config)\n"
        '  File "/opt/venv/lib/python3.10/site-packages/torch/utils/_device.py", line 106, in __torch_function__\n'
        "    return func(*args, **kwargs)\n"
        'RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "../c10/cuda/CUDACachingAllocator.cpp":995, please report a bug to PyTorch.\n'
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["message"].startswith("RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT")
    assert data["phase"] == "weight_load"


def test_the_exception_line_names_the_cause_not_the_generic_headline(tmp_path, triage_json):
    log = V1_START + (
        f"{A} INFO:     Application startup complete.\n"
        f"{E} ERROR 09-21 12:00:01 [core.py:861] Invocation of wake_up method failed\n"
        f"{E} ERROR 09-21 12:00:01 [core.py:861] Traceback (most recent call last):\n"
        f'{E} ERROR 09-21 12:00:01 [core.py:861]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 858, in _handle_client_request\n'
        f"{E} ERROR 09-21 12:00:01 [core.py:861]     output.result = method(\n"
        f'{E} ERROR 09-21 12:00:01 [core.py:861]   File "/usr/local/lib/python3.12/dist-packages/vllm/device_allocator/cumem.py", line 244, in wake_up\n'
        f"{E} ERROR 09-21 12:00:01 [core.py:861]     create_and_map(handle)\n"
        f"{E} ERROR 09-21 12:00:01 [core.py:861] RuntimeError: CUDA Error: invalid argument at /workspace/csrc/cumem_allocator.cpp:62\n"
    )
    data = triage_json(_write(tmp_path, log))
    fe = data["first_error"]
    assert fe["message"].startswith("RuntimeError: CUDA Error: invalid argument")
    assert fe["block"]["start"] < fe["line"]  # the block still spans the headline
    assert data["phase"] == "request"


def test_an_engine_that_vanished_without_a_traceback_is_placed_after_its_last_milestone(
    tmp_path, triage_json
):
    log = (
        "INFO 01-16 18:11:30 api_server.py:585] vLLM API server version 0.6.4.post1\n"
        "INFO 01-16 18:11:35 llm_engine.py:249] Initializing an LLM engine (v0.6.4.post1) with config: model='org/m'\n"
        "INFO 01-16 18:11:40 model_runner.py:1072] Starting to load model org/m...\n"
        "INFO 01-16 18:11:50 model_runner.py:1077] Loading model weights took 2.0512 GB\n"
        "INFO 01-16 18:11:59 worker.py:232] Memory profiling results: total_gpu_memory=23.99GiB\n"
        "INFO 01-16 18:11:59 gpu_executor.py:113] # GPU blocks: 20671, # CPU blocks: 11915\n"
        "INFO 01-16 18:11:59 gpu_executor.py:117] Maximum concurrency for 2048 tokens per request: 161.49x\n"
        "Task exception was never retrieved\n"
        "future: <Task finished name='Task-2' coro=<MQLLMEngineClient.run_output_handler_loop() done, defined at /usr/local/lib/python3.12/dist-packages/vllm/engine/multiprocessing/client.py:178> exception=ZMQError('Operation not supported')>\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/engine/multiprocessing/client.py", line 184, in run_output_handler_loop\n'
        "    while await self.output_socket.poll(timeout=VLLM_RPC_TIMEOUT\n"
        '  File "/usr/local/lib/python3.12/dist-packages/zmq/_future.py", line 400, in poll\n'
        "    raise _zmq.ZMQError(_zmq.ENOTSUP)\n"
        "zmq.error.ZMQError: Operation not supported\n"
        "RuntimeError: Engine process failed to start. See stack trace for the root cause.\n"
    )
    data = triage_json(_write(tmp_path, log))
    fe = data["first_error"]
    assert fe["message"] == "Maximum concurrency for 2048 tokens per request: 161.49x"
    assert fe["category"] == "process_died_without_traceback"
    assert data["phase"] == "engine_reserve"
    assert any(f["id"] == "died-without-traceback" and f["severity"] == "error" for f in data["findings"])
    assert {c["rule"] for c in data["consequences"]} >= {"engine.client_socket_closed"}


def test_a_one_line_error_is_placed_by_the_traceback_that_unwinds_it(tmp_path, triage_json):
    # No milestones in the paste: the one-line OOM is placed by the call path of the traceback
    # the same process prints right after it.
    log = (
        f"{E} ERROR 11-05 12:19:32 [linear.py:210] Failed to create unquantized linear weights: CUDA out of memory. Tried to allocate 896.00 MiB.\n"
        f"{E} ERROR 11-05 12:19:32 [core.py:708] EngineCore failed to start.\n"
        f"{E} ERROR 11-05 12:19:32 [core.py:708] Traceback (most recent call last):\n"
        f'{E} ERROR 11-05 12:19:32 [core.py:708]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 2338, in load_model\n'
        f"{E} ERROR 11-05 12:19:32 [core.py:708]     self.model = model_loader.load_model(\n"
        f"{E} ERROR 11-05 12:19:32 [core.py:708] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 896.00 MiB.\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["message"].startswith("Failed to create unquantized linear weights")
    assert data["phase"] == "weight_load"
    assert "load_model" in data["phase_reason"]


@pytest.mark.parametrize(
    ("log", "confidence"),
    [
        (V1_START + f"{E} ERROR 09-21 11:04:13 [core.py:718] ValueError: something odd happened\n", "medium"),
        ("ValueError: something odd happened\n", "low"),
    ],
)
def test_phase_confidence_follows_the_evidence(tmp_path, triage_json, log, confidence):
    data = triage_json(_write(tmp_path, log))
    assert data["phase_confidence"] == confidence


def test_a_multi_line_statement_under_a_frame_is_code_not_an_error(tmp_path, triage_json):
    w = "(VllmWorker rank=1 pid=301) ERROR 03-13 08:47:26 [multiproc_executor.py:470]"
    site = "/usr/local/lib/python3.12/dist-packages/vllm/distributed/device_communicators"
    log = (
        f"{w} WorkerProc failed to start.\n"
        f"{w} Traceback (most recent call last):\n"
        f'{w}   File "{site}/pynccl.py", line 99, in __init__\n'
        f"{w}     self.comm: ncclComm_t = self.nccl.ncclCommInitRank(\n"
        f"{w}                             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        f'{w}   File "{site}/pynccl_wrapper.py", line 277, in ncclCommInitRank\n'
        f'{w}     self.NCCL_CHECK(self._funcs["ncclCommInitRank"](ctypes.byref(comm),\n'
        f"{w}                     unique_id, rank))  # NCCL error: a comment quoting an error\n"
        f'{w}   File "{site}/pynccl_wrapper.py", line 256, in NCCL_CHECK\n'
        f'{w}     raise RuntimeError(f"NCCL error: {{error_str}}")\n'
        f"{w} RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["message"].startswith("RuntimeError: NCCL error: unhandled cuda error")
    assert data["phase"] == "cuda_init"


def _heartbeat(second: int, generated: str) -> str:
    return (
        f"{A} INFO 09-21 12:10:{second:02d} [loggers.py:123] Engine 000: Avg prompt throughput: 10.0 tokens/s, "
        f"Avg generation throughput: {generated} tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 4.1%\n"
    )


def test_heartbeats_that_keep_generating_prove_a_request_time_warning_was_survived(tmp_path, triage_json):
    shm = (
        f"{E} INFO 09-21 12:10:00 [shm_broadcast.py:466] No available shared memory broadcast block found in 60 "
        "seconds. This typically happens when some processes are hanging or doing some time-consuming work.\n"
    )
    healthy = V1_START + f"{A} INFO:     Application startup complete.\n" + shm
    data = triage_json(_write(tmp_path, healthy + _heartbeat(10, "95.1") + _heartbeat(20, "88.0")))
    assert data["phase"] == "none"
    assert "No available shared memory broadcast block" in _survived(data)[0]["message"]
    # One heartbeat may still count tokens generated before the hang: no proof.
    data = triage_json(_write(tmp_path, healthy + _heartbeat(10, "95.1"), name="one.log"))
    assert data["phase"] == "request"
    assert _survived(data) == []


def test_hub_probes_that_vllm_retries_or_swallows_are_never_the_root(tmp_path, triage_json):
    # A local model path passed as a repo id: with_retry logs each failed attempt and
    # try_get_safetensors_metadata swallows the last one; start-up goes on.
    log = (
        f"{A} INFO 08-29 11:23:39 [__init__.py:742] Resolved architecture: GptOssForCausalLM\n"
        f"{A} ERROR 08-29 11:23:39 [config.py:130] Error retrieving safetensors: Repo id must be in the form "
        "'repo_name' or 'namespace/repo_name': '/data/gpt-oss-20b'. Use `repo_type` argument if needed., retrying 1 of 2\n"
        f"{A} ERROR 08-29 11:23:41 [config.py:128] Error retrieving safetensors: Repo id must be in the form "
        "'repo_name' or 'namespace/repo_name': '/data/gpt-oss-20b'. Use `repo_type` argument if needed.\n"
        f"{A} ERROR 08-29 11:23:45 [core.py:700] ValueError: Unsupported attention head size 80\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["message"] == "ValueError: Unsupported attention head size 80"


def test_the_server_answering_the_failed_request_with_400_is_survival(tmp_path, triage_json):
    # No milestone in the paste: only the traceback of one request and the 400 that answered it.
    log = (
        'ERROR 03-13 11:21:33 serving_chat.py:197]   File "/usr/local/lib/python3.10/dist-packages/vllm/entrypoints/chat_utils.py", line 452, in add\n'
        "ERROR 03-13 11:21:33 serving_chat.py:197]     raise ValueError(\n"
        "ERROR 03-13 11:21:33 serving_chat.py:197] ValueError: At most 1 image(s) may be provided in one request.\n"
        'INFO:     172.17.0.1:39790 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request\n'
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "none"
    assert "answered the request with 400" in _survived(data)[0]["message"]


def test_answers_to_requests_in_flight_do_not_outlive_a_dead_engine(tmp_path, triage_json):
    log = (
        "INFO 11-01 10:00:00 api_server.py:585] vLLM API server version 0.6.3\n"
        "INFO:     Application startup complete.\n"
        "ERROR 11-01 10:05:00 engine.py:135] RuntimeError('Engine loop has died')\n"
        'INFO:     10.0.0.7:40112 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
        'INFO:     10.0.0.7:40113 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
        "CRITICAL 11-01 10:05:02 launcher.py:99] MQLLMEngine is already dead, terminating server process\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["message"] == "RuntimeError('Engine loop has died')"
    assert data["phase"] == "request"
    assert _survived(data) == []


def test_a_docker_desktop_local_time_prefix_is_a_transport(tmp_path, triage_json):
    log = (
        "2024-10-27 23:04:39 INFO 10-27 09:04:39 api_server.py:585] vLLM API server version 0.6.3\n"
        "2024-10-27 23:04:47 ERROR 10-27 09:04:47 engine.py:135] RuntimeError('Engine loop has died')\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["message"] == "RuntimeError('Engine loop has died')"
    assert data["first_error"]["timestamp"] == "2024-10-27 23:04:47"


def test_a_wrapper_headline_whose_traceback_was_cut_names_the_failing_step(tmp_path, triage_json):
    w = "(RayWorkerWrapper pid=20770) ERROR 06-28 06:11:46 worker_base.py:145]"
    log = (
        "INFO 06-28 06:11:30 llm_engine.py:161] Initializing an LLM engine (v0.5.0) with config: model='org/m'\n"
        "INFO 06-28 06:11:45 distributed_gpu_executor.py:45] # GPU blocks: 378, # CPU blocks: 1638\n"
        f"{w} Error executing method initialize_cache. This might cause deadlock in distributed execution.\n"
        f"{w} Traceback (most recent call last):\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["message"].startswith("Error executing method initialize_cache")
    assert data["phase"] == "engine_reserve"


def test_an_api_server_polling_a_stuck_engine_is_a_hang_after_the_engines_last_milestone(
    tmp_path, triage_json
):
    poll = f"{A} DEBUG 09-02 17:29:%02d [utils.py:777] Waiting for 1 local, 0 remote core engine proc(s) to start.\n"
    log = (
        V1_START
        + f"{E} INFO 09-21 11:04:18 [gpu_model_runner.py:2392] Model loading took 14.2487 GiB and 5.346811 seconds\n"
        + "".join(poll % s for s in (6, 16, 26, 36))
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["category"] == "hang"
    assert data["first_error"]["message"].startswith("Model loading took")
    assert data["phase"] == "engine_reserve"
    # The same polls during a start that then succeeds are no failure.
    ok = log + f"{A} INFO:     Application startup complete.\n"
    assert triage_json(_write(tmp_path, ok, name="ok.log"))["phase"] == "none"


def test_a_doomed_run_goes_on_logging_but_only_becoming_ready_survives_no_platform(tmp_path, triage_json):
    doomed = (
        "INFO 03-17 06:04:10 __init__.py:211] No platform detected, vLLM is running on UnspecifiedPlatform\n"
        "INFO 03-17 06:04:15 api_server.py:912] vLLM API server version 0.7.3\n"
        "INFO 03-17 06:04:15 api_server.py:913] args: Namespace(subparser='serve', model_tag='org/m')\n"
    )
    data = triage_json(_write(tmp_path, doomed))
    assert data["phase"] == "container"
    assert data["first_error"]["message"].startswith("No platform detected")
    served = doomed + "INFO:     Application startup complete.\n"
    assert triage_json(_write(tmp_path, served, name="served.log"))["phase"] == "none"


def test_a_logged_warning_before_a_bare_crash_is_a_finding_and_the_crash_is_the_root(tmp_path, triage_json):
    # vllm/_core_ext.py (0.5–0.6) catches the failed import of its extension and only warns; the
    # import goes on and dies on the missing op: the process survived the warning, not the crash.
    log = (
        "WARNING 02-28 20:57:36 _core_ext.py:180] Failed to import from vllm._core_C with ImportError('libtorch_hip.so: cannot open shared object file: No such file or directory')\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/bin/vllm", line 5, in <module>\n'
        "    from vllm.entrypoints.cli.main import main\n"
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/__init__.py", line 12, in <module>\n'
        "    from vllm.engine.arg_utils import AsyncEngineArgs\n"
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/_core_ext.py", line 182, in <module>\n'
        "    ScalarType = torch.classes._core_C.ScalarType\n"
        "RuntimeError: Tried to instantiate class '_core_C.ScalarType', but it does not exist! Ensure that it is registered via torch::class_\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["message"].startswith("RuntimeError: Tried to instantiate class")
    assert data["phase"] == "cuda_init"  # nothing of vLLM ran: raised while it was imported
    warned = [f for f in data["findings"] if f["id"] == "earlier-warning"]
    assert len(warned) == 1 and "libtorch_hip.so" in warned[0]["message"]
    assert data["first_error"]["block"]["start"] == 2  # the warning is not the traceback's headline
    assert not [f for f in data["findings"] if f["id"] == "paste-starts-mid-block"]


def test_a_lone_rule_warning_with_nothing_after_it_stays_the_answer(tmp_path, triage_json):
    log = V1_START + (
        "WARNING 09-21 11:04:13 [_core_ext.py:180] Failed to import from vllm._core_C with ImportError('/opt/venv/lib/python3.12/site-packages/vllm/_core_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi')\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["rule"] == "cuda.extension_abi"
    assert not [f for f in data["findings"] if f["id"] == "earlier-warning"]


def test_a_prompt_too_long_kills_an_offline_loop_but_a_server_answers_400_and_goes_on(tmp_path, triage_json):
    offline = (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/processor.py", line 405, in _validate_model_input\n'
        "    raise ValueError(\n"
        "ValueError: The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens.\n"
    )
    data = triage_json(_write(tmp_path, offline, "rollout.log"))
    assert data["phase"] == "request"
    assert data["first_error"]["rule"] == "request.prompt_too_long"
    served = V1_START + (
        f"{A} INFO:     Application startup complete.\n"
        f"{A} ERROR 09-21 11:06:00 [serving_chat.py:222] ValueError: The decoder prompt (length 9000) is longer than the maximum model length of 8192.\n"
        f'{A} INFO:     10.0.0.5:41234 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request\n'
    )
    data = triage_json(_write(tmp_path, served))
    assert data["phase"] == "none"
    assert any(f["id"] == "survived-error" for f in data["findings"])


def test_a_relay_quoting_the_workers_error_names_the_cause_when_the_worker_traceback_is_missing(
    tmp_path, triage_json
):
    log = (
        f"{E} ERROR 11-10 12:30:57 [core.py:710] EngineCore encountered a fatal error.\n"
        f"{E} ERROR 11-10 12:30:57 [core.py:710] Traceback (most recent call last):\n"
        f'{E} ERROR 11-10 12:30:57 [core.py:710]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", line 254, in get_response\n'
        f"{E} ERROR 11-10 12:30:57 [core.py:710]     raise RuntimeError(\n"
        f"{E} ERROR 11-10 12:30:57 [core.py:710] RuntimeError: Worker failed with error 'CUDA out of memory. Tried to allocate 326.00 MiB. GPU 0 has a total capacity of 79.19 GiB', please check the stack trace above for the root cause\n"
        f"{A} ERROR 11-10 12:30:57 [async_llm.py:480] AsyncLLM output_handler failed.\n"
        f"{A} ERROR 11-10 12:30:57 [async_llm.py:480] Traceback (most recent call last):\n"
        f'{A} ERROR 11-10 12:30:57 [async_llm.py:480]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core_client.py", line 846, in get_output_async\n'
        f"{A} ERROR 11-10 12:30:57 [async_llm.py:480]     raise self._format_exception(outputs) from None\n"
        f"{A} ERROR 11-10 12:30:57 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["line"] == 5
    assert data["first_error"]["rule"] == "oom.torch"  # classified by what the relay quotes
    assert "AsyncLLM output_handler failed" not in data["first_error"]["message"]


def test_an_error_the_request_handler_logged_is_answered_and_survived(tmp_path, triage_json):
    log = (
        f"2026-04-28T14:17:50.089230833+08:00 {A} ERROR 04-28 14:17:50 [serving_chat.py:257] ValueError: "
        "'max_tokens' or 'max_completion_tokens' is too large: 8192. This model's maximum context length is "
        "8192 tokens and your request has 1210 input tokens (8192 > 8192 - 1210).\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "none"
    assert [f for f in data["findings"] if f["id"] == "survived-error"]


OOM_IN_HANDLER = (
    "vllm  | ERROR 02-11 08:25:49 serving_chat.py:661] torch.OutOfMemoryError: CUDA out of memory. Tried to "
    "allocate 1.15 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.13 GiB is free.\n"
    "vllm  | ERROR 02-11 08:25:49 serving_chat.py:661] Error in chat completion stream generator.\n"
    "vllm  | ERROR 02-11 08:25:49 serving_chat.py:661] Traceback (most recent call last):\n"
    'vllm  | ERROR 02-11 08:25:49 serving_chat.py:661]   File "/usr/local/lib/python3.12/dist-packages/vllm/'
    'entrypoints/openai/serving_chat.py", line 359, in chat_completion_stream_generator\n'
)


def test_a_device_fault_the_request_handler_logged_is_the_engines_not_one_requests(tmp_path, triage_json):
    # V0's AsyncLLMEngine hands what killed its loop to every request stream: the handler relays it
    data = triage_json(_write(tmp_path, OOM_IN_HANDLER))
    assert data["phase"] == "request"
    assert data["first_error"]["line"] == 1
    assert data["first_error"]["message"].startswith("torch.OutOfMemoryError")


def test_a_device_fault_in_the_handler_is_survived_when_the_server_went_on_serving(tmp_path, triage_json):
    # must-not: requests answered 200 afterwards prove the engine lived on
    ok = 'vllm  | INFO:     10.0.0.5:41234 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    data = triage_json(_write(tmp_path, OOM_IN_HANDLER + ok * 3))
    assert data["phase"] == "none"


# Two nodes under Ray (V0, written for this test after a vllm-ascend report of that shape): the
# remote worker fails, then Ray's deduplicator prints the other workers' start-of-loading line as
# one summary, stamped before the failure and printed after it.
RAY_WORKER = "(RayWorkerWrapper pid=12580, ip=10.0.0.2)"
RAY_DEDUP = f"""INFO 05-28 03:53:31 [model_runner.py:943] Starting to load model /models/ds-w8a8...
{RAY_WORKER} ERROR 05-28 03:54:00 [worker_base.py:620] Error executing method 'load_model'. This might cause deadlock in distributed execution.
{RAY_WORKER} ERROR 05-28 03:54:00 [worker_base.py:620] Traceback (most recent call last):
{RAY_WORKER} ERROR 05-28 03:54:00 [worker_base.py:620]   File "/vllm/vllm/model_executor/models/deepseek_v2.py", line 788, in load_weights
{RAY_WORKER} ERROR 05-28 03:54:00 [worker_base.py:620]     param = params_dict[name]
{RAY_WORKER} ERROR 05-28 03:54:00 [worker_base.py:620] KeyError: 'model.layers.40.mlp.experts.w2_weight_offset'
{RAY_WORKER} INFO 05-28 03:53:56 [model_runner.py:943] Starting to load model /models/ds-w8a8... [repeated 14x across cluster]
INFO 05-28 03:54:01 [ray_distributed_executor.py:127] Shutting down Ray distributed executor.
"""


def test_a_ray_dedup_summary_after_an_error_is_no_progress(tmp_path, triage_json):
    data = triage_json(_write(tmp_path, RAY_DEDUP))
    assert data["first_error"]["line"] == 6
    assert data["phase"] == "weight_load"
    # must-not: a later step's line without the summary tail is the worker going on (a retried
    # step that finished). The step's opening line alone is no progress either way: it is another
    # rank starting the step, or the step starting over (tests/triage/test_triage_step_opener_and_offline_bar.py).
    finished = RAY_DEDUP.replace(
        "03:53:56 [model_runner.py:943] Starting to load model /models/ds-w8a8...",
        "03:53:56 [model_runner.py:1010] Model loading took 2.4390 GiB and 41.96 seconds",
    )
    assert triage_json(_write(tmp_path, finished))["first_error"]["line"] == 6
    went_on = triage_json(_write(tmp_path, finished.replace(" [repeated 14x across cluster]", "")))
    assert went_on["first_error"] is None or went_on["first_error"]["line"] != 6
