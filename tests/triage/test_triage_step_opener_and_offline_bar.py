"""Fatality and hangs on pastes that keep no process prefix: the line that opens the very step an
error was raised in (a progress bar at 0 % of loading, printed after a weight-loading error) is
another rank starting it, not the failing process going past it; and an offline run whose log ends
on LLM.generate's progress bar short of its total is a hang while serving."""

from __future__ import annotations

from triage_helpers import write_log

SITE = "/opt/venv/lib/python3.12/site-packages/vllm"
ERROR = "ValueError: There is no module or parameter named 'language_model' in LlamaForCausalLM"
TRACEBACK = (
    "Traceback (most recent call last):\n"
    f'  File "{SITE}/model_executor/model_loader/default_loader.py", line 277, in load_weights\n'
    "    loaded_weights = model.load_weights(self.get_all_weights(model_config, model))\n"
    f'  File "{SITE}/model_executor/models/utils.py", line 319, in _load_module\n'
    "    raise ValueError(msg)\n"
    f"{ERROR}\n"
)
TS = "2026-01-08T05:13:4"


def test_a_later_loading_bar_at_zero_is_not_survival(tmp_path, triage_json):
    text = (
        TRACEBACK
        + f"{TS}6.607498Z  INFO multiproc_executor.monitor_parent_death: Parent process exited, terminating worker\n"
        + "Loading safetensors checkpoint shards:   0% Completed | 0/10 [00:00<?, ?it/s]\n"
        + f"{TS}8.113127Z ERROR core.run_engine_core: EngineCore failed to start.\n"
        + "Traceback (most recent call last):\n"
        + f'  File "{SITE}/v1/engine/core.py", line 834, in run_engine_core\n'
        + "    engine_core = EngineCoreProc(*args, **kwargs)\n"
    )
    data = triage_json(write_log(tmp_path, text))
    assert data["first_error"]["message"] == ERROR
    assert data["phase"] == "weight_load"


def test_loading_that_finished_after_the_error_is_survival(tmp_path, triage_json):
    # must-not: the step's end (`Loading weights took`) is the process going past the error
    text = (
        TRACEBACK
        + "Loading safetensors checkpoint shards: 100% Completed | 10/10 [00:09<00:00,  1.07it/s]\n"
        + "INFO 01-08 05:14:01 [default_loader.py:262] Loading weights took 9.41 seconds\n"
        + "INFO 01-08 05:14:02 [gpu_model_runner.py:2392] Model loading took 15.2 GiB and 10.1 seconds\n"
        + "INFO 01-08 05:14:30 [kv_cache_utils.py:1087] GPU KV cache size: 201,344 tokens\n"
    )
    data = triage_json(write_log(tmp_path, text))
    assert data["first_error"] is None or data["first_error"]["message"] != ERROR


STARTED = (
    "INFO 04-09 02:05:52 [default_loader.py:447] Loading weights took 33.15 seconds\n"
    "INFO 04-09 02:06:28 [kv_cache_utils.py:578] GPU KV cache size: 16,064 tokens\n"
    "INFO 04-09 02:07:01 [core.py:162] init engine (profile, create kv cache, warmup model) took 68.69 seconds\n"
)


def test_an_offline_run_that_ends_on_its_bar_at_zero_is_a_hang_while_serving(tmp_path, triage_json):
    bar = "Processed prompts:   0%|          | 0/1 [00:00<?, ?it/s, est. speed input: 0.00 toks/s, output: 0.00 toks/s]"
    data = triage_json(write_log(tmp_path, STARTED + bar + "\n"))
    assert data["phase"] == "request"
    assert data["first_error"]["category"] == "hang"
    assert "init engine" in data["first_error"]["message"]


def test_an_offline_run_whose_bar_reached_its_total_is_no_failure(tmp_path, triage_json):
    # must-not: the batch finished
    bar = "Processed prompts: 100%|██████████| 8/8 [00:04<00:00,  1.90it/s, est. speed input: 512.0 toks/s]"
    data = triage_json(write_log(tmp_path, STARTED + bar + "\n"))
    assert data["phase"] == "none"
