"""Errors the server survived are judged by what followed, not by their message (issue 9, set D
group C): bare third-party lines a child process prints at import before its engine banner, and
uvicorn's report of one request's exception. Logs written for the test after how vLLM 0.1x, the
protobuf/TensorFlow import path and uvicorn print them."""

from __future__ import annotations

from functools import partial

from triage_helpers import survived as _survived
from triage_helpers import write_log

A = "(APIServer pid=412)"
E = "(EngineCore_DP0 pid=699)"
UVICORN = "/usr/local/lib/python3.12/dist-packages/uvicorn/protocols/http/httptools_impl.py"


_write = partial(write_log, name="vllm.log")


API_START = (
    f"{A} INFO 02-11 07:03:15 [api_server.py:1896] vLLM API server version 0.15.1\n"
    f"{A} INFO 02-11 07:03:15 [utils.py:233] non-default args: {{'model': 'lab/tiny-chat-4bit', 'quantization': 'bitsandbytes'}}\n"
    f"{A} INFO 02-11 07:03:31 [model.py:547] Resolved architecture: LlamaForCausalLM\n"
)
# The engine process imports transformers, which imports TensorFlow; protobuf's old API is gone.
IMPORT_NOISE = "".join(
    "AttributeError: 'MessageFactory' object has no attribute 'GetPrototype'\n" for _ in range(3)
)
ENGINE_UP = (
    f"{E} INFO 02-11 07:03:44 [core.py:93] Initializing a V1 LLM engine (v0.15.1) with config: model='lab/tiny-chat-4bit'\n"
    f"{E} INFO 02-11 07:03:45 [gpu_model_runner.py:3338] Starting to load model lab/tiny-chat-4bit...\n"
    f"{E} INFO 02-11 07:04:02 [gpu_model_runner.py:3420] Model loading took 1.12 GiB memory and 16.9 seconds\n"
    f"{E} INFO 02-11 07:04:20 [kv_cache_utils.py:1229] GPU KV cache size: 201,344 tokens\n"
    f"{A} INFO 02-11 07:04:31 [launcher.py:44] Route: /v1/chat/completions, Methods: POST\n"
    f"{A} INFO:     Application startup complete.\n"
)


def test_bare_import_lines_of_the_engine_process_are_survived_when_the_server_comes_up(tmp_path, triage_json):
    data = triage_json(_write(tmp_path, API_START + IMPORT_NOISE + ENGINE_UP))
    assert data["phase"] == "none"
    assert data["first_error"] is None
    assert any("GetPrototype" in f["message"] for f in _survived(data))


def test_an_error_before_a_restarted_run_is_still_the_first_runs_failure(tmp_path, triage_json):
    # must-not: the arguments printed again are another run; what came up then proves nothing
    fatal = "ValueError: max_model_len (65536) is greater than the derived max_model_len (32768).\n"
    data = triage_json(_write(tmp_path, API_START + fatal + API_START + ENGINE_UP))
    assert data["phase"] != "none"
    assert data["first_error"]["message"].startswith("ValueError: max_model_len")


def _asgi_block(exception: str | None) -> str:
    lines = [
        f"{A} ERROR:    Exception in ASGI application",
        f"{A} Traceback (most recent call last):",
        f'{A}   File "{UVICORN}", line 416, in run_asgi',
        f"{A}     result = await app(  # type: ignore[func-returns-value]",
        f'{A}   File "/usr/local/lib/python3.12/dist-packages/starlette/routing.py", line 74, in app',
        f"{A}     await response(scope, receive, send)",
    ]
    if exception:
        lines.append(f"{A} {exception}")
    return "".join(line + "\n" for line in lines)


SERVING = f'{A} INFO:     10.8.0.3:51214 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
REJECTED = f'{A} INFO:     10.8.0.3:51220 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request\n'


def test_uvicorn_reporting_one_requests_exception_is_no_failure(tmp_path, triage_json):
    log = (
        API_START
        + ENGINE_UP
        + SERVING
        + REJECTED
        + _asgi_block("RuntimeError: Caught handled exception, but response already started.")
        + SERVING * 3
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "none"
    assert any("Exception in ASGI application" in f["message"] for f in _survived(data))


def test_a_cut_paste_ending_inside_the_asgi_traceback_is_no_failure(tmp_path, triage_json):
    data = triage_json(_write(tmp_path, REJECTED + _asgi_block(None)))
    assert data["phase"] == "none"
    assert data["first_error"] is None


def test_an_asgi_block_right_before_the_engine_died_is_not_survived(tmp_path, triage_json):
    # must-not: the engine died within the window: the server did not go on serving
    dead = f"{A} ERROR 02-11 07:09:12 [async_llm.py:480] AsyncLLM output_handler failed.\n" + (
        f"{A} vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n"
    )
    log = API_START + ENGINE_UP + SERVING + _asgi_block("KeyError: 'prompt_token_ids'") + dead
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "request"
    assert data["first_error"] is not None


ANSWERED_500 = (
    f'{A} INFO:     127.0.0.1:57158 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'
)


def test_the_500_right_above_a_survived_asgi_exception_is_that_requests_answer(tmp_path, triage_json):
    # starlette's ServerErrorMiddleware sends the 500, then re-raises for uvicorn to log
    data = triage_json(_write(tmp_path, ANSWERED_500 + _asgi_block(None)))
    assert data["phase"] == "none"
    assert data["first_error"] is None
    assert any("Exception in ASGI application" in f["message"] for f in _survived(data))


def test_a_500_with_no_request_error_under_it_still_says_the_engine_was_serving(tmp_path, triage_json):
    # must-not: a 500 the paste ends on, with no uvicorn report under it, is a consequence of
    # something unseen; so is one under which the report is of another stream
    assert triage_json(_write(tmp_path, SERVING + ANSWERED_500))["phase"] == "request"
    other = _asgi_block(None).replace(A, "(APIServer pid=977)")
    assert triage_json(_write(tmp_path, SERVING + ANSWERED_500 + other))["phase"] == "request"
