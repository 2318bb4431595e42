""" "No platform detected" dooms a run only while no platform is found: an out-of-tree platform
plugin activated after it (vllm-ascend on 0.7, whose builtin probe speaks first) is the platform."""

from __future__ import annotations

from pathlib import Path

# A vllm-ascend 0.7 start, written for this test: the builtin probe, then the plugin, then start-up
# to the API server's routes.
PLUGIN_START = """\
INFO 03-02 10:00:01 __init__.py:28] Available plugins for group vllm.platform_plugins:
INFO 03-02 10:00:01 __init__.py:30] name=ascend, value=vllm_ascend:register
INFO 03-02 10:00:01 __init__.py:32] all available plugins for group vllm.platform_plugins will be loaded.
INFO 03-02 10:00:01 __init__.py:187] No platform detected, vLLM is running on UnspecifiedPlatform
INFO 03-02 10:00:01 __init__.py:44] plugin ascend loaded.
INFO 03-02 10:00:01 __init__.py:174] Platform plugin ascend is activated
INFO 03-02 10:00:09 api_server.py:838] vLLM API server version 0.7.1
INFO 03-02 10:00:09 api_server.py:839] args: Namespace(model='/models/Qwen2-VL-7B', tensor_parallel_size=4)
INFO 03-02 10:00:20 llm_engine.py:232] Initializing a V0 LLM engine (v0.7.1) with config: model='/models/Qwen2-VL-7B'
INFO 03-02 10:01:40 model_runner.py:1111] Loading model weights took 3.9 GB
INFO 03-02 10:02:11 executor_base.py:110] # npu blocks: 9120, # CPU blocks: 1170
INFO 03-02 10:02:30 launcher.py:19] Available routes are:
INFO 03-02 10:02:30 launcher.py:27] Route: /health, Methods: GET
"""


def test_a_platform_plugin_activated_after_the_probe_is_no_failure(tmp_path: Path, triage_json) -> None:
    log = tmp_path / "server.log"
    log.write_text(PLUGIN_START)
    data = triage_json(log)
    assert data["first_error"] is None
    assert data["phase"] == "none"
    survived = [f for f in data["findings"] if f["id"] == "survived-error"]
    assert survived and "found its platform" in survived[0]["message"]


def test_no_platform_and_no_plugin_still_dooms_the_run(tmp_path: Path, triage_json) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        PLUGIN_START.replace("INFO 03-02 10:00:01 __init__.py:174] Platform plugin ascend is activated\n", "")
    )
    data = triage_json(log)
    assert data["first_error"]["rule"] == "container.no_platform"
    assert data["phase"] == "container"
