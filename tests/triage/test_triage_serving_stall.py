"""A serving engine that stops making progress is a hang in request (DESIGN §3: a log that stops
with no root error is placed in the step that never finished): its last stats heartbeats, to the
end of the log, report running requests and no tokens read or generated. Logs written after how
V1's loggers.py and V0's metrics logger print the heartbeat."""

from __future__ import annotations

from triage_helpers import write_log

A = "(APIServer pid=2019320)"
READY = (
    f"{A} INFO 08-21 14:28:01 [api_server.py:1971] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
    f"{A} INFO:     Started server process [2019320]\n"
    f"{A} INFO:     Waiting for application startup.\n"
    f"{A} INFO:     Application startup complete.\n"
)


def beat(engine: str, prompt: str, gen: str, running: int, at: str) -> str:
    return (
        f"{A} INFO 08-21 {at} [loggers.py:123] Engine {engine}: Avg prompt throughput: {prompt} tokens/s, "
        f"Avg generation throughput: {gen} tokens/s, Running: {running} reqs, Waiting: 0 reqs, "
        "GPU KV cache usage: 41.2%, Prefix cache hit rate: 0.0%\n"
    )


SERVING = (
    READY + beat("000", "5120.4", "812.3", 255, "14:30:13") + beat("000", "0.0", "904.1", 255, "14:30:23")
)


def test_heartbeats_with_running_requests_and_no_tokens_to_the_end_are_a_hang(tmp_path, triage_json):
    log = SERVING + beat("000", "0.0", "0.0", 255, "14:30:33") + beat("000", "0.0", "0.0", 255, "14:30:43")
    data = triage_json(write_log(tmp_path, log))
    assert data["phase"] == "request"
    assert data["first_error"]["category"] == "hang"
    assert data["first_error"]["line"] == 7
    assert "stopped making progress" in data["phase_reason"]


def test_one_idle_heartbeat_or_progress_after_it_is_no_hang(tmp_path, triage_json):
    # must-not: a single 0/0 heartbeat (the interval ended before the prefill did)
    one = SERVING + beat("000", "0.0", "0.0", 1, "14:30:33")
    assert triage_json(write_log(tmp_path, one))["phase"] == "none"
    # must-not: tokens again after two quiet heartbeats
    resumed = one + beat("000", "0.0", "0.0", 1, "14:30:43") + beat("000", "0.0", "77.3", 1, "14:30:53")
    assert triage_json(write_log(tmp_path, resumed))["phase"] == "none"
    # must-not: an idle server (nothing running) prints 0/0 heartbeats for hours
    idle = SERVING + beat("000", "0.0", "0.0", 0, "14:30:33") + beat("000", "0.0", "0.0", 0, "14:30:43")
    assert triage_json(write_log(tmp_path, idle))["phase"] == "none"


# An RL rollout worker submitting prompts to V1's LLMEngine after a data-parallel engine died
# (written for this test after an ms-swift GRPO report): only the death notice and the caller's
# traceback are pasted; the caller was submitting a request, so the engine had been built.
ROLLOUT = """\
ERROR 01-29 08:37:48 [core_client.py:564] Engine core proc EngineCore_DP1 died unexpectedly, shutting down client.
[ERROR:swift] Method execution failed: infer
Traceback (most recent call last):
  File "/usr/local/lib/python3.12/dist-packages/swift/llm/infer/infer_engine/vllm_engine.py", line 392, in _add_request
    return self.engine.add_request(request_id, llm_inputs, generation_config, **kwargs)
  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/llm_engine.py", line 240, in add_request
    self.engine_core.add_request(request)
"""


def test_a_death_notice_under_a_v1_add_request_is_placed_while_serving(tmp_path, triage_json):
    data = triage_json(write_log(tmp_path, ROLLOUT))
    assert data["phase"] == "request"
    assert "add_request" in data["phase_reason"]
    # must-not: the same notice under a start-up call stays in start-up
    startup = ROLLOUT.replace("line 240, in add_request", "line 120, in __init__").replace(
        "self.engine_core.add_request(request)", "self.engine_core = EngineCoreClient.make_client("
    )
    assert triage_json(write_log(tmp_path, startup))["phase"] != "request"
