"""A paste cut inside a traceback, above its exception line (issue 9, set G group C).

The process died of the exception (DESIGN §3), so the paste is an error block, not a healthy log;
only the raising source line is left to say what was raised, so the answer is never sure."""

from __future__ import annotations

from triage_helpers import write_log as _write

P = "ERROR 11-04 17:22:31 [core.py:396]"
SITE = "/usr/lib/python3.11/site-packages"


def _engine_lines(*messages: str) -> str:
    return "".join(f"{P} {m}\n" for m in messages)


CUT_AT_RAISE = _engine_lines(
    f'  File "{SITE}/torch/_inductor/codecache.py", line 2110, in load',
    "    return cls._compile(source_code)",
    f'  File "{SITE}/triton/runtime/build.py", line 41, in _build',
    '    raise RuntimeError("Failed to find C compiler. Please specify via CC',
)


def test_a_traceback_cut_at_its_raise_line_is_an_error_read_from_that_line(tmp_path, triage_json):
    data = triage_json(_write(tmp_path, CUT_AT_RAISE))
    assert data["phase"] == "engine_reserve"  # the rule knows the raised message
    assert data["first_error"]["message"].strip().startswith('raise RuntimeError("Failed to find C compiler')
    assert data["phase_confidence"] == "low"
    assert "cut before its exception line" in data["phase_reason"]


def test_a_traceback_cut_at_a_frame_no_rule_knows_is_still_not_healthy(tmp_path, triage_json):
    log = _engine_lines(
        f'  File "{SITE}/vllm/v1/engine/core.py", line 88, in __init__',
        "    self._initialize_kv_caches(vllm_config)",
        f'  File "{SITE}/acme_plugin/hooks.py", line 12, in before_alloc',
        "    check_quota(self.pool)",
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] != "none"
    assert data["phase_confidence"] == "low"
    assert data["first_error"]["message"].strip() == "check_quota(self.pool)"


def test_a_complete_traceback_still_reports_its_exception_line(tmp_path, triage_json):
    log = CUT_AT_RAISE + _engine_lines(
        "RuntimeError: Failed to find C compiler. Please specify via CC environment variable."
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["message"].startswith("RuntimeError: Failed to find C compiler")
    assert "cut before its exception line" not in data["phase_reason"]


def test_a_warning_traceback_cut_at_the_end_of_a_served_log_is_no_failure(tmp_path, triage_json):
    log = (
        "INFO 11-04 17:30:02 [api_server.py:1090] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
        "INFO:     Application startup complete.\n"
        'INFO:     10.0.0.7:51122 - "POST /v1/completions HTTP/1.1" 200 OK\n'
        "WARNING 11-04 17:31:10 [metrics.py:77] Failed to push metrics:\n"
        'WARNING 11-04 17:31:10 [metrics.py:77]   File "/opt/app/push.py", line 9, in push\n'
        "WARNING 11-04 17:31:10 [metrics.py:77]     raise ConnectionError(url)\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "none"


def test_a_cut_traceback_after_ready_is_not_called_a_failure(tmp_path, triage_json):
    # a request's error the server may have answered with a 4xx/5xx and survived
    log = (
        "INFO 11-04 17:30:02 [api_server.py:1090] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
        "INFO:     Application startup complete.\n"
        "ERROR 11-04 17:31:10 [serving_chat.py:210] Error in preprocessing prompt inputs\n"
        f'ERROR 11-04 17:31:10 [serving_chat.py:210]   File "{SITE}/vllm/entrypoints/chat_utils.py", line 1201, in apply_hf_chat_template\n'
        "ERROR 11-04 17:31:10 [serving_chat.py:210]     return tokenizer.apply_chat_template(\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert "cut before its exception line" not in data["phase_reason"]


def test_a_cut_traceback_a_request_handler_logged_is_survived_without_a_ready_line(tmp_path, triage_json):
    # The paste starts after start-up: no ready line, but serving_chat.py catches what one request
    # raised, logs it and answers 400 (vllm/entrypoints/openai/serving_chat.py), so the server went on.
    log = (
        "ERROR 07-03 03:19:15 [serving_chat.py:200] Error in preprocessing prompt inputs\n"
        "ERROR 07-03 03:19:15 [serving_chat.py:200] Traceback (most recent call last):\n"
        f'ERROR 07-03 03:19:15 [serving_chat.py:200]   File "{SITE}/vllm/entrypoints/openai/serving_chat.py", '
        "line 183, in create_chat_completion\n"
        "ERROR 07-03 03:19:15 [serving_chat.py:200]     ) = await self._preprocess_chat(\n"
        f'ERROR 07-03 03:19:15 [serving_chat.py:200]   File "{SITE}/vllm/entrypoints/openai/serving_engine.py", '
        "line 590, in _tokenize_prompt_input\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "none"
    assert "cut before its exception line" not in data["phase_reason"]


W = "(Worker_TP1 pid=77) ERROR 10-08 09:19:30 [v1/executor/multiproc_executor.py:671]"
CUT_IN_A_NAME = (
    f"{W} ValueError(\"type fp8e4nv not supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', 'fp8e5')\")\n"
    f"{W} Traceback (most recent call last):\n"
    f'{W}   File "{SITE}/vllm/v1/executor/multiproc_executor.py", line 666, in worker_busy_loop\n'
    f"{W}     output = func(*args, **kwargs)\n"
    f'{W}   File "{SITE}/vllm/v1/worker/gpu_worker.py", line 344, in compile_o'
)


def test_a_paste_cut_inside_the_last_frames_name_keeps_its_step(tmp_path, triage_json):
    # `compile_o` is the start of gpu_worker.py's compile_or_warm_up_model, the only function of
    # that file in the call-path table that begins so: warm-up, not the worker's RPC loop.
    data = triage_json(_write(tmp_path, CUT_IN_A_NAME))
    assert data["phase"] == "engine_reserve"
    assert "compile_or_warm_up_model" in data["phase_reason"]


def test_a_whole_name_or_a_cut_not_at_the_end_is_not_completed(tmp_path, triage_json):
    # must-not: the same frame with a line after it is not cut by the paste's end
    data = triage_json(_write(tmp_path, CUT_IN_A_NAME + f"\n{W}     return self.compile_o()\n"))
    assert "compile_or_warm_up_model" not in data["phase_reason"]
