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
