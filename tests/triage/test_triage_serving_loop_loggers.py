"""V0's serving loop has loggers of its own: a record they log places the failure in request even
when the paste holds no milestone (DESIGN §3). Logs written after how V0 prints them: the
AsyncLLMEngine's `_log_task_completion` ("Engine background task failed" and its traceback) and
MQLLMEngine.start()'s `logger.exception(repr(e))`; while the engine is still being built,
run_mp_engine logs `str(e)` instead, which says nothing about serving."""

from __future__ import annotations

from triage_helpers import write_log

ILLEGAL_ACCESS_TAIL = (
    'ERROR 02-05 18:42:55 async_llm_engine.py:64]   File "/usr/lib/python3/site-packages/vllm/worker/'
    'model_runner_base.py", line 146, in _wrapper\n'
    'ERROR 02-05 18:42:55 async_llm_engine.py:64]     raise type(err)(f"Error in model execution: "\n'
    "ERROR 02-05 18:42:55 async_llm_engine.py:64] RuntimeError: Error in model execution: CUDA error: "
    "an illegal memory access was encountered\n"
)


def test_the_async_engine_background_task_logger_is_the_serving_loop(tmp_path, triage_json):
    data = triage_json(write_log(tmp_path, ILLEGAL_ACCESS_TAIL))
    assert data["phase"] == "request"
    assert data["first_error"]["line"] == 3
    assert "serving loop" in data["phase_reason"]


def test_a_carriage_return_shown_as_caret_m_is_a_line_end(tmp_path, triage_json):
    log = ILLEGAL_ACCESS_TAIL.replace("\n", "^M\n")
    data = triage_json(write_log(tmp_path, log))
    assert data["phase"] == "request"
    assert data["first_error"]["message"].endswith("an illegal memory access was encountered")


def test_the_mq_engine_logs_what_its_loop_raised_as_a_repr(tmp_path, triage_json):
    log = (
        "INFO 12-13 01:12:19 engine.py:267] Added request chatcmpl-0938.\n"
        "ERROR 12-13 01:12:19 engine.py:135] RuntimeError(\"shape '[0, -1, 128]' is invalid for input of size 71680\")\n"
        "ERROR 12-13 01:12:19 engine.py:135] Traceback (most recent call last):\n"
    )
    data = triage_json(write_log(tmp_path, log.split("\n", 1)[1]))
    assert data["phase"] == "request"
    assert data["first_error"]["line"] == 1


def test_an_error_while_the_mq_engine_is_built_is_not_the_serving_loop(tmp_path, triage_json):
    # must-not: run_mp_engine logs str(e) for what failed while MQLLMEngine was constructed
    log = (
        "ERROR 01-22 15:13:59 engine.py:366] CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        "ERROR 01-22 15:13:59 engine.py:366] Traceback (most recent call last):\n"
        'ERROR 01-22 15:13:59 engine.py:366]   File "/usr/lib/python3/site-packages/vllm/worker/worker.py", '
        "line 195, in determine_num_available_blocks\n"
        "ERROR 01-22 15:13:59 engine.py:366]     self.model_runner.profile_run()\n"
        "ERROR 01-22 15:13:59 engine.py:366] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    )
    assert triage_json(write_log(tmp_path, log))["phase"] == "engine_reserve"


def test_a_paste_cut_below_the_mq_engines_repr_line_keeps_its_location(tmp_path, triage_json):
    # A k9s pane copy of the record's tail (vLLM 0.6.2/0.6.3: MQLLMEngine.start() logs at
    # engine.py:157): every line of the record carries the location, and only the serving loop
    # logs there.
    pane = "│ ERROR 09-27 06:46:46 engine.py:157] "
    log = (
        f"{pane}RuntimeError: CUDA error: an illegal memory access was encountered\n"
        f"{pane}CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.\n"
        f"{pane}For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["phase"] == "request"
    assert "serving loop" in data["phase_reason"]
    # must-not: the same tail logged two hundred lines lower (run_mp_engine) is no serving evidence
    other = triage_json(write_log(tmp_path, log.replace("engine.py:157]", "engine.py:366]")))
    assert other["phase"] != "request"
