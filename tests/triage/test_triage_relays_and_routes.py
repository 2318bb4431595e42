"""What a launcher that relays the server's output puts before each record, a Ray start-up waiting
for its placement group, and a request failing inside an HTTP route handler."""

from __future__ import annotations

from triage_helpers import write_log

SITE = "/opt/venv/lib/python3.12/site-packages"


def test_a_relayed_traceback_behind_a_clock_and_a_tag_is_read(tmp_path, triage_json):
    # a notebook's runner prints its clock and `[vllm]` before every line of the server it started
    head = "[11:02:40]    [vllm] (EngineCore pid=77) ERROR 04-02 11:02:40 [core.py:866] "
    log = (
        "[11:01:02] STEP 2/4  start server\n"
        "[11:01:02]    launching vllm serve, output follows\n"
        + "".join(
            head + line + "\n"
            for line in (
                "EngineCore failed to start.",
                "Traceback (most recent call last):",
                f'  File "{SITE}/vllm/v1/executor/uniproc_executor.py", line 54, in _init_executor',
                "    self.driver_worker.init_device()",
                f'  File "{SITE}/vllm/v1/worker/gpu_worker.py", line 180, in init_device',
                "    torch.cuda.set_device(self.device)",
                "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
                "you must use the 'spawn' start method",
            )
        )
        + "[11:02:41] server exited with code 1\n"
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["phase"] == "cuda_init"
    assert data["first_error"]["message"].startswith("RuntimeError: Cannot re-initialize CUDA in forked")
    assert data["first_error"]["process"] == "EngineCore"


def test_the_runners_own_lines_stay_its_own(tmp_path, triage_json):
    # must-not: a runner's line that only mentions an error is no vLLM record
    log = (
        "[11:01:02] STEP 2/4  start server\n"
        "[11:01:09] ERROR: server did not answer (will retry)\n"
        "[11:01:10]    [vllm] (APIServer pid=12) INFO 04-02 11:01:10 [api_server.py:1] vLLM API server version 0.11.0\n"
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["first_error"] is None or "did not answer" not in data["first_error"]["message"]


def test_a_start_up_that_stops_waiting_for_its_placement_group_hangs_in_cuda_init(tmp_path, triage_json):
    log = (
        "INFO 05-01 10:00:00 [ray_utils.py:201] No current placement group found. Creating a new placement group.\n"
        "INFO 05-01 10:00:10 [ray_utils.py:212] Waiting for creating a placement group of specs for 10 seconds. "
        "specs=[{'GPU': 1.0, 'node:10.0.0.4': 0.001}, {'GPU': 1.0}]. Check `ray status` to see if you have "
        "enough resources.\n"
        "INFO 05-01 10:00:30 [ray_utils.py:212] Waiting for creating a placement group of specs for 30 seconds. "
        "specs=[{'GPU': 1.0, 'node:10.0.0.4': 0.001}, {'GPU': 1.0}]. Check `ray status` to see if you have "
        "enough resources.\n"
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["phase"] == "cuda_init"
    assert data["first_error"]["category"] == "hang"


def test_the_wait_alone_pasted_bare_is_a_placement_hang(tmp_path, triage_json):
    log = (
        "Waiting for creating a placement group of specs for 150 seconds. specs=[{'GPU': 1.0}, {'GPU': 1.0}]. "
        "Check `ray status` to see if you have enough resources.\n"
    )
    assert triage_json(write_log(tmp_path, log))["phase"] == "cuda_init"


def test_an_error_raised_under_the_completion_route_is_a_request(tmp_path, triage_json):
    # V0: a LoRA adapter named by a request is loaded when the request comes; the outer traceback
    # is the route handler's
    log = (
        "Traceback (most recent call last):\n"
        f'  File "{SITE}/vllm/lora/worker_manager.py", line 174, in _load_lora\n'
        "    lora = self._lora_model_cls.from_local_checkpoint(\n"
        f'  File "{SITE}/vllm/lora/models.py", line 303, in from_local_checkpoint\n'
        "    with open(lora_config_path) as f:\n"
        "FileNotFoundError: [Errno 2] No such file or directory: '/adapters/sql-v3/adapter_config.json'\n"
        "\n"
        "The above exception was the direct cause of the following exception:\n"
        "\n"
        "Traceback (most recent call last):\n"
        f'  File "{SITE}/vllm/entrypoints/openai/api_server.py", line 155, in create_completion\n'
        "    generator = await openai_serving_completion.create_completion(\n"
        "RuntimeError: Loading lora sql-v3 failed\n"
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["phase"] == "request"
    assert data["first_error"]["message"].startswith("FileNotFoundError:")
    # a missing adapter file is not the missing CUDA compiler the catalogue knows
    assert data["known_issue"] is None or data["known_issue"]["id"] != "flashinfer-jit-needs-nvcc"


def test_the_same_error_under_a_start_up_step_stays_in_start_up(tmp_path, triage_json):
    # must-not: the route handler's frames are what make it a request
    log = (
        "Traceback (most recent call last):\n"
        f'  File "{SITE}/vllm/worker/model_runner.py", line 1100, in load_model\n'
        "    self.model = get_model(model_config=self.model_config)\n"
        f'  File "{SITE}/vllm/lora/models.py", line 303, in from_local_checkpoint\n'
        "    with open(lora_config_path) as f:\n"
        "FileNotFoundError: [Errno 2] No such file or directory: '/adapters/sql-v3/adapter_config.json'\n"
    )
    assert triage_json(write_log(tmp_path, log))["phase"] == "weight_load"


def test_a_placement_wait_killed_from_outside_is_the_hang_not_the_interrupt(tmp_path, triage_json):
    # abseil's handler (Ray) prints the stop signal; the SystemExit / KeyboardInterrupt tracebacks
    # after it are the kill's, not the failure
    log = (
        "INFO 05-26 18:53:53 [ray_utils.py:335] No current placement group found. Creating a new placement group.\n"
        "INFO 05-26 18:56:23 [ray_utils.py:233] Waiting for creating a placement group of specs for 150 seconds. "
        "specs=[{'GPU': 1.0}, {'GPU': 1.0}]. Check `ray status` to see if you have enough resources.\n"
        "*** SIGTERM received at time=1748300290 on cpu 8 ***\n"
        "PC: @     0x7a30bba98d71  (unknown)  (unknown)\n"
        "    @     0x7a30bba9bc8e        224  pthread_cond_timedwait\n"
        "ERROR 05-26 18:58:11 [engine.py:448] 15\n"
        "ERROR 05-26 18:58:11 [engine.py:448] Traceback (most recent call last):\n"
        f'ERROR 05-26 18:58:11 [engine.py:448]   File "{SITE}/vllm/executor/ray_utils.py", line 240, in _wait_until_pg_ready\n'
        "ERROR 05-26 18:58:11 [engine.py:448]     ready, _ = ray.wait([current_placement_group.ready()], timeout=wait_interval)\n"
        f'ERROR 05-26 18:58:11 [engine.py:448]   File "{SITE}/ray/_private/worker.py", line 1539, in sigterm_handler\n'
        "ERROR 05-26 18:58:11 [engine.py:448]     sys.exit(signum)\n"
        "ERROR 05-26 18:58:11 [engine.py:448] SystemExit: 15\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/asyncio/runners.py", line 123, in run\n'
        "    raise KeyboardInterrupt()\n"
        "KeyboardInterrupt\n"
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["phase"] == "cuda_init"
    assert data["first_error"]["category"] == "hang"
    assert "placement group" in data["first_error"]["message"]


def test_a_segfault_reported_by_the_same_handler_is_no_stop(tmp_path, triage_json):
    # must-not: SIGSEGV through abseil's handler is a crash of its own
    log = (
        "INFO 05-26 18:53:53 [ray_utils.py:335] No current placement group found. Creating a new placement group.\n"
        "*** SIGSEGV received at time=1748300290 on cpu 8 ***\n"
        "PC: @     0x7a30bba98d71  (unknown)  (unknown)\n"
        "Fatal Python error: Segmentation fault\n"
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["first_error"]["category"] != "hang"
