"""llama-swap config.yaml: a model entry's `cmd:` is one command line that starts the server."""

from __future__ import annotations

from launch_helpers import family, line, value

from vllm_triage.parsers.launch import looks_like, parse


def test_a_folded_cmd_running_a_vllm_container_in_a_model_entry_pasted_alone():
    text = (
        "# from my config\n"
        '  "coder": # the big one\n'
        "    proxy: http://127.0.0.1:9100\n"
        "    cmd_stop: docker stop coder\n"
        "    cmd: >\n"
        "      docker run --init --rm --name coder --runtime=nvidia\n"
        "      --gpus '\"device=2,3\"'\n"
        "      -p 9100:8000\n"
        "      vllm/vllm-openai:v0.9.1\n"
        '      --model "Qwen/Qwen3-Coder-30B-A3B-Instruct-AWQ"\n'
        "      --tensor-parallel-size 2 --enable-expert-parallel\n"
    )
    assert looks_like(text) == "llama_swap"
    result = parse(text, "config.yaml")
    assert value(result, "launcher") == "docker_run"
    assert value(result, "image.ref") == "vllm/vllm-openai:v0.9.1"
    assert value(result, "container.gpus") == "device=2,3"
    assert family(result, "arg.") == {
        "model": "Qwen/Qwen3-Coder-30B-A3B-Instruct-AWQ",
        "tensor_parallel_size": "2",
        "enable_expert_parallel": "true",
    }


def test_a_literal_cmd_is_one_command_over_several_lines_with_macros_and_comments():
    text = (
        "healthCheckTimeout: 600\nmodels:\n"
        "  llama-cpp:\n    proxy: http://127.0.0.1:${PORT}\n    cmd: llama-server --port ${PORT} -m /m/a.gguf\n"
        "  qwen:\n    proxy: http://127.0.0.1:${PORT}\n    cmdStop: pkill -f qwen\n    cmd: |\n"
        "      vllm serve Qwen/Qwen3-8B\n"
        "      # --enforce-eager\n"
        "      --port ${PORT} \\\n"
        "      --max-model-len 16384\n"
    )
    assert looks_like(text) == "llama_swap"
    result = parse(text, "config.yaml")
    assert value(result, "launcher") == "vllm_serve"
    assert family(result, "arg.") == {"model": "Qwen/Qwen3-8B", "port": "${PORT}", "max_model_len": "16384"}
    assert line(result, "arg.max_model_len") == 13
