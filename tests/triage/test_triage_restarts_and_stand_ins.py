"""A log of a server stopped and started again holds two runs, each read alone; an exception
whose message is printed below its class names the cause there; a start-up that stops at Ray's
placement request hangs in cuda_init; a dead worker is nearer evidence than the stall before it.
Logs written after what vLLM, Ray and multiprocessing print."""

from __future__ import annotations

from triage_helpers import write_log

FIRST_RUN = (
    "INFO 10-28 13:03:02 [__init__.py:224] Automatically detected platform cpu.\n"
    "INFO 10-28 13:03:03 [utils.py:239] non-default args: {'model': 'facebook/opt-125m'}\n"
    "INFO 10-28 13:03:03 [scheduler.py:225] Chunked prefill is enabled with max_num_batched_tokens=4096.\n"
    "Received SIGTERM, shutting down...\n"
)
SPAWN_FAILURE = (
    "Traceback (most recent call last):\n"
    '  File "/home/u/serve.py", line 16, in <module>\n'
    '    llm = LLM(model="facebook/opt-125m")\n'
    '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/utils.py", line 141, in __init__\n'
    "    proc.start()\n"
    '  File "/usr/lib/python3.12/multiprocessing/spawn.py", line 140, in _check_not_importing_main\n'
    "    raise RuntimeError('''\n"
    "RuntimeError:\n"
    "        An attempt has been made to start a new process before the\n"
    "        current process has finished its bootstrapping phase.\n"
)
SECOND_RUN = (
    "user@host ~/debug> INFO 10-28 13:03:06 [__init__.py:224] Automatically detected platform cpu.\n"
    "INFO 10-28 13:03:07 [utils.py:239] non-default args: {'model': 'facebook/opt-125m'}\n"
) + SPAWN_FAILURE


def test_an_error_of_the_run_after_a_stop_and_restart_is_found(tmp_path, triage_json):
    data = triage_json(write_log(tmp_path, FIRST_RUN + SECOND_RUN))
    assert data["first_error"]["category"] == "spawn_without_main_guard"
    assert data["first_error"]["line"] == 15
    assert "run 2 of 2" in data["phase_reason"]


def test_without_a_restart_what_follows_the_stop_signal_is_shutdown(tmp_path, triage_json):
    # must-not: the same traceback after the signal, with no new start-up line, is the stop's artefact
    data = triage_json(write_log(tmp_path, FIRST_RUN + SPAWN_FAILURE))
    assert data["first_error"]["category"] != "spawn_without_main_guard"
    assert "run " not in data["phase_reason"]


def test_the_engine_process_start_is_worker_start(tmp_path, triage_json):
    data = triage_json(write_log(tmp_path, SPAWN_FAILURE))
    assert data["phase"] == "cuda_init"
    assert data["first_error"]["message"].strip().startswith("An attempt has been made")


def test_a_class_printed_alone_gives_way_to_its_message_below(tmp_path, triage_json):
    log = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app.py", line 3, in <module>\n'
        "    main()\n"
        "ValueError:\n"
        "    the tokenizer directory /models/x holds no tokenizer_config.json\n"
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["first_error"]["line"] == 5


def test_a_class_with_a_message_on_its_line_stays(tmp_path, triage_json):
    # must-not: `ValueError: x` already names the cause on its own line
    log = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app.py", line 3, in <module>\n'
        "    main()\n"
        "ValueError: max_model_len 65536 is larger than the model's 32768\n"
        "    (see the model's config.json)\n"
    )
    assert triage_json(write_log(tmp_path, log))["first_error"]["line"] == 4


RAY = "(run_inference_one_model pid=141403) "


def test_a_start_up_that_stops_at_the_ray_placement_request_hangs_in_cuda_init(tmp_path, triage_json):
    log = (
        f"{RAY}INFO 05-09 12:31:27 [ray_utils.py:288] Ray is already initialized. Skipping Ray initialization.\n"
        f"{RAY}INFO 05-09 12:31:27 [ray_utils.py:335] No current placement group found. Creating a new "
        "placement group.\n"
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["phase"] == "cuda_init"
    assert data["first_error"]["category"] == "hang"
    assert data["first_error"]["line"] == 2


def test_a_dead_worker_is_reported_before_the_stall_it_caused(tmp_path, triage_json):
    log = (
        "DEBUG 07-04 17:35:10 [shm_broadcast.py:456] No available shared memory broadcast block found in 60 second.\n"
        "ERROR 07-04 17:35:16 [multiproc_executor.py:140] Worker proc VllmWorker-1 died unexpectedly, "
        "shutting down executor.\n"
        "DEBUG 07-04 17:36:10 [shm_broadcast.py:456] No available shared memory broadcast block found in 60 second.\n"
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["first_error"]["line"] == 2
    assert data["first_error"]["category"] == "worker_died"


def test_a_stall_alone_is_still_reported(tmp_path, triage_json):
    # must-not: with no other consequence the stall is the evidence
    log = "DEBUG 07-04 17:35:10 [shm_broadcast.py:456] No available shared memory broadcast block found in 60 second.\n"
    assert triage_json(write_log(tmp_path, log))["first_error"]["line"] == 1
