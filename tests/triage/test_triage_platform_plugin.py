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


# A CPU build under WSL (vLLM 0.11, written for this test after a benchmark log of that shape): the
# probe says "No platform detected" in the front end and again in the spawned engine before its
# prefix is set up, the C extension's CUDA import warns twice, and the engine banner still names its
# device — DeviceConfig would have raised "Failed to infer device type" had no platform given one.
# The engine then dies in the CPU worker's init_device.
CPU_WORKER_START = """\
INFO 11-05 07:33:13 [__init__.py:220] No platform detected, vLLM is running on UnspecifiedPlatform
WARNING 11-05 07:33:16 [_custom_ops.py:20] Failed to import from vllm._C with ImportError('libcudart.so.12: cannot open shared object file: No such file or directory')
INFO 11-05 07:33:16 [utils.py:233] non-default args: {'dtype': 'float32', 'enforce_eager': True, 'model': '/models/Llama-3.2-1B'}
INFO 11-05 07:33:16 [model.py:547] Resolved architecture: LlamaForCausalLM
INFO 11-05 07:33:16 [model.py:1510] Using max model len 131072
INFO 11-05 07:33:22 [__init__.py:220] No platform detected, vLLM is running on UnspecifiedPlatform
WARNING 11-05 07:33:24 [_custom_ops.py:20] Failed to import from vllm._C with ImportError('libcudart.so.12: cannot open shared object file: No such file or directory')
(EngineCore_DP0 pid=12692) INFO 11-05 07:33:24 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: model='/models/Llama-3.2-1B', dtype=torch.float32, device_config=cpu, seed=0
(EngineCore_DP0 pid=12692) ERROR 11-05 07:33:26 [core.py:708] EngineCore failed to start.
(EngineCore_DP0 pid=12692) ERROR 11-05 07:33:26 [core.py:708] Traceback (most recent call last):
(EngineCore_DP0 pid=12692) ERROR 11-05 07:33:26 [core.py:708]   File "/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 699, in run_engine_core
(EngineCore_DP0 pid=12692) ERROR 11-05 07:33:26 [core.py:708]     engine_core = EngineCoreProc(*args, **kwargs)
(EngineCore_DP0 pid=12692) ERROR 11-05 07:33:26 [core.py:708]   File "/venv/lib/python3.12/site-packages/vllm/v1/worker/cpu_worker.py", line 49, in init_device
(EngineCore_DP0 pid=12692) ERROR 11-05 07:33:26 [core.py:708]     self.local_omp_cpuid = self._get_autobind_cpu_ids(
(EngineCore_DP0 pid=12692) ERROR 11-05 07:33:26 [core.py:708]   File "/venv/lib/python3.12/site-packages/vllm/platforms/cpu.py", line 284, in get_allowed_cpu_core_node_list
(EngineCore_DP0 pid=12692) ERROR 11-05 07:33:26 [core.py:708]     logical_cpu_list: list[LogicalCPUInfo] = json.loads(
(EngineCore_DP0 pid=12692) ERROR 11-05 07:33:26 [core.py:708] json.decoder.JSONDecodeError: Expecting value: line 6 column 18 (char 79)
RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}
"""


def test_an_engine_banner_naming_its_device_proves_a_platform_was_found(tmp_path: Path, triage_json) -> None:
    log = tmp_path / "server.log"
    log.write_text(CPU_WORKER_START)
    data = triage_json(log)
    assert "json.decoder.JSONDecodeError: Expecting value" in data["first_error"]["text"]
    assert data["phase"] == "cuda_init"
    reasons = " ".join(f["message"] for f in data["findings"] if f["id"] == "survived-error")
    assert "names its device, cpu" in reasons
    # the engine's own copy of the import warning has no process to follow: the front end's went on
    assert "same warning was survived at line 2" in reasons


def test_a_device_the_user_named_proves_nothing_about_the_platform(tmp_path: Path, triage_json) -> None:
    log = tmp_path / "server.log"
    named = CPU_WORKER_START.replace("'enforce_eager': True,", "'enforce_eager': True, 'device': 'cpu',")
    log.write_text(named)
    data = triage_json(log)
    assert data["first_error"]["rule"] == "container.no_platform"
    assert data["phase"] == "container"


def test_a_banner_without_a_device_leaves_the_platform_doomed(tmp_path: Path, triage_json) -> None:
    log = tmp_path / "server.log"
    log.write_text(CPU_WORKER_START.replace(" device_config=cpu,", ""))
    data = triage_json(log)
    assert data["first_error"]["rule"] == "container.no_platform"
