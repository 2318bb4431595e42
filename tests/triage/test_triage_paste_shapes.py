"""Shapes real pastes take that are neither a transport nor a vLLM format: the output of a run that
stopped at its command line, tracebacks whose indentation a log shipper stripped, lone exception
lines a library printed while the process went on. Written after public reports (vllm#9312,
recipes#51, OpenRLHF / TRL embeddings); none is a copy of one.
"""

from __future__ import annotations

from functools import partial

from triage_helpers import write_log

_write = partial(write_log, name="paste.txt")


def test_a_command_followed_by_argparses_error_is_that_runs_log(tmp_path, triage_json):
    text = (
        "vllm serve acme/chat-air --tensor-parallel-size 4 --enable-auto-tool-choice --tool-call-parser acme9 --max-model-len 65536\n"
        "vllm serve: error: argument --tool-call-parser: invalid choice: 'acme9' (choose from 'hermes', 'mistral', 'llama3_json')\n"
    )
    data = triage_json(_write(tmp_path, text))
    assert data["phase"] == "config"
    assert data["first_error"]["rule"] == "config.argparse"
    assert data["first_error"]["line"] == 2


def test_a_launch_script_alone_is_still_a_launch_command(tmp_path, run_cli):
    text = "#!/bin/sh\nvllm serve acme/chat-air --tensor-parallel-size 4 --max-model-len 65536\n"
    result = run_cli("triage", str(_write(tmp_path, text)))
    assert result.exit_code == 4
    assert "launch_command" in result.stderr


def test_frames_with_their_indentation_stripped_still_place_the_error(tmp_path, triage_json):
    # Ray's log monitor prints a worker's traceback with each line's leading blanks removed.
    p = "(TrainerActor pid=7003)"
    text = (
        f"{p} Unhandled error (suppress with 'RAY_IGNORE_UNHANDLED_ERRORS=1'): ray::Rollout.sync_weights() (pid=7001, ip=10.0.0.4)\n"
        f'{p} File "/opt/venv/lib/python3.12/site-packages/trainer/rollout.py", line 58, in sync_weights\n'
        f"{p} return self.llm.collective_rpc(\n"
        f"{p} ^^^^^^^^^^^^^^^^^^^^^^^^\n"
        f'{p} File "/opt/venv/lib/python3.12/site-packages/vllm/entrypoints/llm.py", line 495, in collective_rpc\n'
        f"{p} executor = self.llm_engine.model_executor\n"
        f"{p} ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        f"{p} AttributeError: 'LLMEngine' object has no attribute 'model_executor'\n"
    )
    data = triage_json(_write(tmp_path, text))
    assert (
        data["first_error"]["message"]
        == "AttributeError: 'LLMEngine' object has no attribute 'model_executor'"
    )
    assert data["phase"] == "request"  # LLM.collective_rpc runs on an LLM already built
    assert data["first_error"]["component"] == "vllm"


def test_lone_exception_lines_a_library_printed_are_survived(tmp_path, triage_json):
    lone = "AttributeError: 'MessageFactory' object has no attribute 'GetPrototype'\n"
    text = (
        lone * 3
        + "INFO 06-17 05:17:17 __init__.py:207] Automatically detected platform cuda.\n"
        + "INFO 06-17 05:17:17 api_server.py:912] vLLM API server version 0.7.3\n"
        + "Traceback (most recent call last):\n"
        + '  File "/opt/venv/lib/python3.10/site-packages/vllm/engine/arg_utils.py", line 1334, in create_engine_config\n'
        + "    config = VllmConfig(\n"
        + '  File "/opt/venv/lib/python3.10/site-packages/vllm/config.py", line 3279, in __post_init__\n'
        + "    self.quant_config = VllmConfig._get_quantization_config(\n"
        + "ValueError: Unknown quantization method: awq9. Must be one of ['awq', 'gptq'].\n"
    )
    data = triage_json(_write(tmp_path, text))
    assert data["first_error"]["message"].startswith("ValueError: Unknown quantization method")
    survived = [f for f in data["findings"] if f["id"] == "survived-error"]
    assert survived and "GetPrototype" in survived[0]["message"]


def test_a_lone_exception_line_with_nothing_after_it_is_the_root(tmp_path, triage_json):
    text = "INFO 06-17 05:17:17 api_server.py:912] vLLM API server version 0.7.3\nOSError: We couldn't connect to 'https://huggingface.co' to load this model\n"
    data = triage_json(_write(tmp_path, text))
    assert data["first_error"]["message"].startswith("OSError: We couldn't connect")


def test_a_relays_quote_is_read_in_linear_time() -> None:
    import time

    from vllm_triage.analysis.triage import _quoted

    assert _quoted("RuntimeError: Worker failed with error 'NPU out of memory.', please check the stack") == (
        "NPU out of memory."
    )
    assert _quoted("RuntimeError: Worker failed with error 'CUDA error: an illegal memory access") == (
        "CUDA error: an illegal memory access"
    )

    def cost(n: int) -> float:
        started = time.process_time()
        _quoted("RuntimeError: Worker failed with error '" + "'" * n)
        return time.process_time() - started

    small, big = cost(20_000), cost(200_000)
    assert big < 25 * small + 0.05  # the lazy pattern it replaces was quadratic in the quotes
