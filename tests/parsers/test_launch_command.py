"""The launch-command parser on the shapes people paste: shell, docker/podman, compose, k8s,
supervisord — and on text that is not a launch command at all."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from vllm_triage.parsers.base import ParseResult
from vllm_triage.parsers.launch import looks_like, parse
from vllm_triage.parsers.vllm_flags import canonical_flag, suggest_flag

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "commands"


def parse_fixture(name: str) -> ParseResult:
    return parse((FIXTURES / name).read_text(encoding="utf-8"), name)


def values(result: ParseResult) -> dict[str, object]:
    return {name: sourced.value for name, sourced in result.knobs.items()}


def line(result: ParseResult, name: str) -> int | None:
    return result.knobs[name].source.line


def args(result: ParseResult) -> dict[str, object]:
    return {name[4:]: value for name, value in values(result).items() if name.startswith("arg.")}


def env(result: ParseResult) -> dict[str, object]:
    return {name[4:]: value for name, value in values(result).items() if name.startswith("env.")}


def problem_ids(result: ParseResult) -> list[str]:
    return [problem.id for problem in result.problems]


# --- shell: vllm serve / api_server ---------------------------------------------------------


def test_vllm_serve_with_continuations_comments_aliases_prefixes_and_dotted_keys():
    result = parse_fixture("vllm-serve-continuations.sh")
    assert result.kind == "launch_command.shell"
    assert values(result)["launcher"] == "vllm_serve"
    assert args(result) == {
        "model": "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8",
        "tensor_parallel_size": "4",
        "max_model_len": "16384",
        "gpu_memory_utilization": "0.92",
        "enable_prefix_caching": "false",
        "max_num_seqs": "128",
        "compilation_config": '{"level": 3, "cudagraph_mode": "FULL_AND_PIECEWISE"}',
        "override_generation_config": '{"temperature": 0.6, "top_p": 0.9}',
        "max_modle_len": "8192",
        "port": "8100",
    }
    # the commented-out continuation line (#   --enforce-eager \) is not part of the command
    assert "enforce_eager" not in args(result)
    assert line(result, "arg.tensor_parallel_size") == 6
    assert line(result, "arg.enable_prefix_caching") == 10
    assert env(result) == {
        "NCCL_DEBUG": "WARN",
        "VLLM_LOGGING_LEVEL": "DEBUG",
        "CUDA_VISIBLE_DEVICES": "4,5,6,7",
    }
    assert line(result, "env.NCCL_DEBUG") == 3
    assert line(result, "env.CUDA_VISIBLE_DEVICES") == 5
    (problem,) = result.problems
    assert problem.id == "unknown-flag" and problem.severity == "warning"
    assert problem.message == "unknown vLLM flag --max-modle-len (did you mean --max-model-len?)"
    assert problem.evidence[0].line == 15
    assert any("--max-model read as --max-model-len" in note for note in result.notes)


def test_a_comment_inside_a_continued_export_ends_it_before_a_command_of_its_own():
    # bash ends the export at the comment (its backslash is inside the comment), so `uv run vllm
    # serve $MODEL` is a command of its own, with MODEL exported just before.
    text = (
        'export MODEL="Qwen/Qwen3-0.6B" \\\n'
        "VLLM_WORKER_MULTIPROC_METHOD=spawn \\\n"
        "#VLLM_LOGGING_LEVEL=DEBUG \\\n"
        "uv run vllm serve $MODEL --port 8000 \\\n"
        "  --max-model-len 32768\n"
    )
    result = parse(text, "start.sh")
    assert values(result)["launcher"] == "vllm_serve"
    assert args(result) == {"model": "Qwen/Qwen3-0.6B", "port": "8000", "max_model_len": "32768"}
    assert env(result) == {"MODEL": "Qwen/Qwen3-0.6B", "VLLM_WORKER_MULTIPROC_METHOD": "spawn"}
    assert line(result, "arg.model") == 4


def test_a_comment_between_options_keeps_the_command_going():
    # The reader's reading: the comment drops one flag and the command goes on (an option, or a
    # launch after a command that runs one, cannot be a command of its own).
    text = "vllm serve org/model \\\n  # --enforce-eager \\\n  --port 8001\n"
    assert args(parse(text, "a.sh")) == {"model": "org/model", "port": "8001"}
    text = "sudo \\\n# note \\\nvllm serve org/model --port 8002\n"
    assert args(parse(text, "b.sh"))["port"] == "8002"


def test_api_server_under_nohup_with_exports_env_prefix_and_redirect():
    result = parse_fixture("api-server-nohup.sh")
    assert values(result)["launcher"] == "api_server_module"
    assert args(result)["model"] == "Qwen/Qwen2.5-Coder-14B-Instruct-AWQ"
    assert args(result)["enable_chunked_prefill"] == "False"  # v0.6 StoreBoolean form, kept as written
    assert args(result)["served_model_name"] == "coder"
    assert env(result) == {
        "HF_HOME": "/mnt/cache/hf",
        "VLLM_WORKER_MULTIPROC_METHOD": "spawn",
        "CUDA_VISIBLE_DEVICES": "2",
    }
    assert any("redirected to /var/log/vllm/coder.log" in note for note in result.notes)
    assert result.problems == []


def test_conda_run_with_equals_and_underscore_spellings():
    result = parse_fixture("conda-run-equals.sh")
    assert values(result)["launcher"] == "api_server_module"
    assert args(result) == {
        "model": "/data/ckpt/internlm2_5-20b-chat",
        "trust_remote_code": "true",
        "tensor_parallel_size": "2",
        "dtype": "bfloat16",
        "kv_cache_dtype": "fp8",
        "disable_log_requests": "true",
    }
    assert any("conda run -n serving" in note for note in result.notes)


def test_uv_run_vllm_serve_reads_json_flag_and_short_alias_and_ignores_output_lines():
    result = parse_fixture("uv-run-vllm-serve.txt")
    assert values(result)["launcher"] == "vllm_serve"
    assert args(result) == {
        "model": "google/gemma-3-12b-it",
        "limit_mm_per_prompt": '{"image": 4}',
        "max_model_len": "32k",
        "quantization": "fp8",
        "enforce_eager": "true",
    }


def test_terminal_wrapped_prompt_line_is_joined_inside_the_flag():
    result = parse_fixture("terminal-wrapped.txt")
    assert args(result) == {
        "model": "meta-llama/Llama-3.2-11B-Vision-Instruct",
        "max_model_len": "8192",
        "max_num_seqs": "16",
        "enforce_eager": "true",
        "limit_mm_per_prompt": "image=1",
    }
    assert env(result) == {"VLLM_ATTENTION_BACKEND": "FLASHINFER"}
    assert line(result, "arg.limit_mm_per_prompt") == 2


def test_several_attempts_in_markdown_pick_the_last_live_one():
    result = parse_fixture("several-attempts.md")
    assert line(result, "launcher") == 12
    assert args(result)["max_model_len"] == "16384"
    assert args(result)["gpu_memory_utilization"] == "0.85"
    assert "enforce_eager" not in args(result)  # only in the commented-out third try
    assert any("line 4: another launch" in note for note in result.notes)
    assert any("line 13: commented-out launch" in note for note in result.notes)


def test_config_yaml_from_a_heredoc_cli_wins_and_false_is_dropped():
    result = parse_fixture("config-heredoc.sh")
    assert args(result) == {
        "model": "ibm-granite/granite-3.3-8b-instruct",
        "config": "/etc/vllm/serve.yaml",
        "max_model_len": "32768",  # the command line beats the YAML's 65536
        "tensor_parallel_size": "2",
        "served_model_name": "granite",
    }
    assert line(result, "arg.tensor_parallel_size") == 6
    assert problem_ids(result) == ["config-false-dropped"]
    assert result.problems[0].evidence[0].line == 5


def test_config_yaml_not_in_the_paste_is_said():
    result = parse("vllm serve --config ./serve.yaml\n", "cmd.txt")
    assert args(result) == {"config": "./serve.yaml"}
    assert any("not in the paste" in note for note in result.notes)


def test_cmd_exe_caret_continuation_keeps_windows_paths():
    result = parse_fixture("cmd-caret.txt")
    assert values(result)["launcher"] == "api_server_module"
    assert args(result) == {"model": "D:\\models\\phi-4-mini", "dtype": "float16", "port": "9000"}
    assert env(result) == {"CUDA_VISIBLE_DEVICES": "0"}
    assert result.problems == []


def test_flags_on_their_own_lines_without_backslashes_are_joined():
    result = parse("vllm serve Qwen/Qwen3-8B\n--tensor-parallel-size 2\n--max-model-len 4096\n---\n", "c.md")
    assert args(result) == {"model": "Qwen/Qwen3-8B", "tensor_parallel_size": "2", "max_model_len": "4096"}
    assert result.problems == []


def test_output_after_a_long_command_is_not_glued_onto_it():
    text = (
        "vllm serve m/n --port 8000 --max-model-len 4096 --gpu-memory-utilization 0.9 --seed 1\n"
        "Loading safetensors checkpoint shards: 100%\n"
    )
    assert args(parse(text, "c.txt"))["seed"] == "1"


def test_conda_activate_then_launch_on_one_line():
    result = parse(
        "conda activate vllm085 && python -m vllm.entrypoints.openai.api_server --model m/n\n", "c"
    )
    assert values(result)["launcher"] == "api_server_module"
    assert any("conda environment vllm085" in note for note in result.notes)


# --- docker / podman ------------------------------------------------------------------------


def test_docker_run_resolves_variables_passthrough_env_and_double_quoted_gpus():
    result = parse_fixture("docker-run-variables.sh")
    got = values(result)
    assert got["launcher"] == "docker_run"
    assert got["image.ref"].startswith("vllm/vllm-openai:v0.7.3@sha256:4f7e0a9c")
    assert got["image.digest"].startswith("sha256:4f7e0a9c")
    assert got["container.gpus"] == "device=1,2"
    assert got["container.shm_size"] == "32g"
    assert got["container.ipc"] == "host"
    assert got["container.network"] == "vllm-net"
    assert got["container.volumes"] == [
        "/srv/models:/models",
        "~/.cache/huggingface:/root/.cache/huggingface",
    ]
    assert got["container.env_files"] == ["./vllm.env"]
    assert args(result)["model"] == "mistralai/Mistral-Small-24B-Instruct-2501"
    assert "$MODEL from line 3" in result.knobs["arg.model"].note
    # -O3 on a v0.7 image is the compilation level, not v0.12's --optimization-level
    assert args(result)["compilation_config"] == '{"level": 3}'
    assert "optimization_level" not in args(result)
    # HF_TOKEN is passed with -e NAME (value from the export); NCCL_IB_DISABLE is not passed
    assert env(result) == {"HF_TOKEN": "hf_redacted", "VLLM_USE_V1": "0"}
    assert line(result, "env.HF_TOKEN") == 11
    assert line(result, "image.ref") == 13


def test_positional_model_on_an_api_server_image_is_a_problem():
    result = parse_fixture("docker-run-positional-old-image.txt")
    assert values(result)["container.runtime"] == "nvidia"
    assert args(result)["model"] == "microsoft/Phi-3-medium-4k-instruct"
    assert problem_ids(result) == ["positional-argument"]
    assert "api_server" in result.problems[0].message


def test_podman_with_cdi_device_and_positional_model_on_a_serve_image():
    result = parse_fixture("podman-run-cdi.txt")
    got = values(result)
    assert got["launcher"] == "podman_run"
    assert got["container.gpus"] == "nvidia.com/gpu=all"
    assert got["image.ref"] == "docker.io/vllm/vllm-openai:v0.11.2"
    assert args(result) == {
        "model": "/models/Qwen3-30B-A3B-Instruct-2507",
        "enable_expert_parallel": "true",
        "data_parallel_size": "2",
        "async_scheduling": "true",
    }
    assert result.problems == []


def test_powershell_backtick_continuation_and_env_passthrough():
    result = parse_fixture("powershell-docker.txt")
    got = values(result)
    assert got["image.ref"] == "vllm/vllm-openai:v0.8.2"
    assert got["container.gpus"] == "all"
    assert args(result) == {
        "model": "TheBloke/Mistral-7B-Instruct-v0.2-GPTQ",
        "quantization": "gptq",
        "max_model_len": "4096",
    }
    assert env(result) == {"HUGGING_FACE_HUB_TOKEN": "hf_redacted"}
    assert line(result, "arg.model") == 7


def test_docker_entrypoint_bash_c_reads_the_inner_vllm_serve():
    result = parse_fixture("docker-bash-c.sh")
    assert values(result)["launcher"] == "docker_run"
    assert args(result) == {
        "model": "Qwen/Qwen2.5-VL-7B-Instruct",
        "max_model_len": "16384",
        "limit_mm_per_prompt": "image=2",
    }
    assert env(result) == {"HF_HUB_ENABLE_HF_TRANSFER": "1", "VLLM_USE_V1": "1"}


def test_docker_e_name_without_a_value_in_the_paste_is_noted_not_invented():
    result = parse("docker run --gpus all -e HF_TOKEN vllm/vllm-openai:v0.8.0 --model x/y\n", "c.txt")
    assert env(result) == {}
    assert any("-e HF_TOKEN passes the host's HF_TOKEN" in note for note in result.notes)


def test_nvidia_visible_devices_selects_gpus_without_gpus_flag():
    text = "docker run --runtime=nvidia -e NVIDIA_VISIBLE_DEVICES=0,1 vllm/vllm-openai:v0.9.1 --model m/n -tp=2\n"
    result = parse(text, "c.txt")
    assert values(result)["container.gpus"] == "0,1"
    assert args(result)["tensor_parallel_size"] == "2"


def test_command_after_a_vllm_image_is_flagged():
    result = parse("docker run --gpus all vllm/vllm-openai:v0.8.5 vllm serve Qwen/Qwen3-8B\n", "c.txt")
    assert args(result) == {"model": "Qwen/Qwen3-8B"}
    assert problem_ids(result) == ["command-after-vllm-image"]


@pytest.mark.parametrize(
    "text",
    [
        "docker run --rm --gpus all nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi\n",
        "docker run --gpus all ghcr.io/huggingface/text-generation-inference:2.4 --model-id m/n --port 80\n",
        "docker build -t vllm-custom .\n",
    ],
)
def test_docker_commands_that_do_not_start_vllm(text):
    assert looks_like(text) is None
    assert "launcher" not in parse(text, "c.txt").knobs


def test_local_image_is_a_vllm_launch_when_its_arguments_are_vllm_flags():
    result = parse("docker run --gpus all registry.local/llm:3 --model m/n --max-model-len 4096\n", "c.txt")
    assert values(result)["image.ref"] == "registry.local/llm:3"
    assert args(result) == {"model": "m/n", "max_model_len": "4096"}


# --- compose / Kubernetes / supervisord -----------------------------------------------------


def test_compose_service_with_device_ids_folded_command_and_default_interpolation():
    result = parse_fixture("compose-device-ids.yaml")
    assert result.kind == "launch_command.compose"
    got = values(result)
    assert got["launcher"] == "compose"
    assert got["image.ref"] == "vllm/vllm-openai:v0.8.5.post1"
    assert got["container.gpus"] == "device=2,3"  # ids, in docker's spelling (not a count)
    assert got["container.runtime"] == "nvidia"
    assert got["container.ipc"] == "host"
    assert args(result) == {
        "model": "/models/Qwen2.5-72B-Instruct-AWQ",
        "tensor_parallel_size": "2",
        "max_model_len": "16384",
        "enable_auto_tool_choice": "true",
        "tool_call_parser": "hermes",
    }
    assert line(result, "arg.tensor_parallel_size") == 21
    assert line(result, "image.ref") == 7
    assert env(result) == {"HF_HUB_OFFLINE": "1", "VLLM_LOGGING_LEVEL": "INFO"}


def test_compose_map_environment_entrypoint_list_and_gpu_count():
    text = """\
vllm:
  image: "vllm/vllm-openai:v0.10.0"
  entrypoint: ["vllm", "serve"]
  command: ["Qwen/Qwen3-4B", "--max-num-seqs", "32"]
  environment:
    VLLM_USE_V1: 1
    HF_HUB_OFFLINE: true
  shm_size: "4gb"
  deploy:
    resources:
      reservations:
        devices:
          - capabilities: ["gpu"]
            count: 2
"""
    assert looks_like(text) == "compose"
    result = parse(text, "docker-compose.yml")
    got = values(result)
    assert got["container.gpus"] == "2"
    assert got["container.shm_size"] == "4gb"
    assert args(result) == {"model": "Qwen/Qwen3-4B", "max_num_seqs": "32"}
    assert env(result) == {"VLLM_USE_V1": "1", "HF_HUB_OFFLINE": "true"}
    assert line(result, "arg.max_num_seqs") == 4


def test_compose_cdi_devices_and_host_network():
    text = (
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.1\n    network_mode: host\n"
        "    devices:\n      - nvidia.com/gpu=all\n    command: ['google/gemma-3-4b-it']\n"
    )
    result = parse(text, "compose.yaml")
    assert values(result)["container.gpus"] == "nvidia.com/gpu=all"
    assert values(result)["container.network"] == "host"
    assert args(result) == {"model": "google/gemma-3-4b-it"}


def test_compose_pasted_in_a_blockquoted_fence_with_tabs():
    text = "> ```yaml\n> services:\n>   vllm:\n>   \timage: vllm/vllm-openai:latest\n>   \tcommand: --model a/b\n> ```\n"
    result = parse(text, "paste.md")
    assert values(result)["image.ref"] == "vllm/vllm-openai:latest"
    assert args(result) == {"model": "a/b"}
    assert line(result, "arg.model") == 5


def test_cut_compose_file_is_read_up_to_the_cut():
    text = 'services:\n  vllm:\n    image: vllm/vllm-openai:v0.9.0\n    command: --model m/n\n    environment: ["A=1"\n'
    result = parse(text, "c.yaml")
    assert values(result)["image.ref"] == "vllm/vllm-openai:v0.9.0"
    assert args(result) == {"model": "m/n"}
    assert any("YAML breaks" in note for note in result.notes)


def test_kubernetes_deployment_expands_container_env_and_reads_limits_and_shm():
    result = parse_fixture("k8s-deployment.yaml")
    assert result.kind == "launch_command.kubernetes"
    got = values(result)
    assert got["launcher"] == "kubernetes"
    assert got["image.ref"] == "vllm/vllm-openai:v0.10.2"
    assert got["container.gpus"] == "1"
    assert got["container.runtime"] == "nvidia"
    assert got["container.shm_size"] == "8Gi"
    assert args(result) == {
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "max_model_len": "8192",
        "gpu_memory_utilization": "0.9",
        "disable_log_requests": "true",
    }
    assert env(result) == {"MODEL_NAME": "meta-llama/Llama-3.1-8B-Instruct", "VLLM_PORT": "8000"}
    assert line(result, "arg.gpu_memory_utilization") == 23
    assert any("HF_TOKEN comes from" in note for note in result.notes)


def test_kubernetes_pod_with_sh_c_block_script():
    result = parse_fixture("k8s-pod-shell.yaml")
    got = values(result)
    assert got["container.gpus"] == "2"
    assert got["container.ipc"] == "host"
    assert args(result) == {
        "model": "openai/gpt-oss-20b",
        "async_scheduling": "true",
        "max_num_batched_tokens": "8192",
    }
    assert env(result) == {"NCCL_DEBUG": "INFO"}
    assert line(result, "env.NCCL_DEBUG") == 13
    assert line(result, "arg.model") == 14


def test_supervisord_reads_the_first_program_with_continuation_lines():
    result = parse_fixture("supervisord.ini")
    assert result.kind == "launch_command.supervisord"
    assert values(result)["launcher"] == "supervisord"
    assert args(result) == {
        "model": "NousResearch/Hermes-3-Llama-3.1-8B",
        "max_model_len": "16384",
        "enable_auto_tool_choice": "true",
        "tool_call_parser": "hermes",
    }
    assert env(result) == {
        "CUDA_VISIBLE_DEVICES": "0",
        "HF_HOME": "/srv/hf",
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1",
    }
    assert line(result, "arg.max_model_len") == 6
    assert any("[program:embed]" in note for note in result.notes)


# --- argument reading details ---------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["-O3", "-O 3", "-O=3", "--optimization-level 3"])
def test_optimization_level_spellings(spelling):
    result = parse(f"vllm serve m/n {spelling}\n", "c.txt")
    assert args(result) == {"model": "m/n", "optimization_level": "3"}


def test_ambiguous_prefix_is_a_problem():
    result = parse("vllm serve m/n --max-num 3\n", "c.txt")
    assert problem_ids(result) == ["ambiguous-flag"]
    assert "--max-num-seqs" in result.problems[0].message


def test_model_flag_on_vllm_serve_and_model_given_twice():
    assert args(parse("vllm serve --model m/n\n", "c.txt")) == {"model": "m/n"}
    twice = parse("vllm serve a/b --model c/d\n", "c.txt")
    assert problem_ids(twice) == ["model-given-twice"]


def test_booleans_negation_optional_value_and_lists():
    result = parse(
        "vllm serve m/n --no-trust-remote-code --enable-chunked-prefill False "
        "--served-model-name one two --disable-log-stats\n",
        "c.txt",
    )
    assert args(result) == {
        "model": "m/n",
        "trust_remote_code": "false",
        "enable_chunked_prefill": "False",
        "served_model_name": "one two",
        "disable_log_stats": "true",
    }


def test_full_json_and_dotted_keys_merge():
    result = parse(
        """vllm serve m/n --compilation-config '{"level": 3}' --compilation-config.cudagraph_mode FULL\n""",
        "c",
    )
    assert args(result)["compilation_config"] == '{"level": 3, "cudagraph_mode": "FULL"}'


def test_variables_defaults_unresolved_and_placeholders():
    result = parse(
        'vllm serve "${MODEL:-Qwen/Qwen3-1.7B}" --port $PORT --tokenizer <your tokenizer>\n', "c.txt"
    )
    assert args(result) == {"model": "Qwen/Qwen3-1.7B", "port": "$PORT", "tokenizer": "<your tokenizer>"}
    assert "not defined in the paste" in result.knobs["arg.port"].note


def test_unbalanced_quote_falls_back_to_a_tolerant_split():
    result = parse('vllm serve "Qwen/Qwen3-8B --max-model-len 4096\n', "c.txt")
    assert args(result) == {"model": "Qwen/Qwen3-8B", "max_model_len": "4096"}
    assert any("unbalanced double quote" in note for note in result.notes)


# --- sniffing and bad input -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("vllm-serve-continuations.sh", "shell"),
        ("docker-run-variables.sh", "shell"),
        ("powershell-docker.txt", "shell"),
        ("compose-device-ids.yaml", "compose"),
        ("k8s-deployment.yaml", "kubernetes"),
        ("k8s-pod-shell.yaml", "kubernetes"),
        ("supervisord.ini", "supervisord"),
    ],
)
def test_looks_like_names_the_shape(name, shape):
    assert looks_like((FIXTURES / name).read_text(encoding="utf-8")) == shape


VLLM_LOG = """\
$ vllm serve Qwen/Qwen3-8B --max-model-len 8192
INFO 05-02 10:11:12 [api_server.py:1043] vLLM API server version 0.9.2
INFO 05-02 10:11:12 [cli_args.py:325] non-default args: {'model': 'Qwen/Qwen3-8B', 'max_model_len': 8192}
INFO 05-02 10:11:20 [config.py:841] This model supports multiple tasks.
"""
OLD_LOG = "INFO 01-01 00:00:00 api_server.py:585] args: Namespace(host=None, port=8000, model='m')\n"
NVIDIA_SMI = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 570.86.10              Driver Version: 570.86.10      CUDA Version: 12.8     |
+-----------------------------------------------------------------------------------------+
"""
COLLECT_ENV = "Collecting environment information...\nPyTorch version: 2.6.0+cu124\nvLLM Version: 0.8.5\n"
INSPECT = '[\n  {\n    "Id": "4f2a",\n    "Config": {"Entrypoint": ["vllm", "serve"], "Cmd": ["--model", "m"]}\n  }\n]\n'


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\n",
        "\x00\x01\x02\xff binary",
        VLLM_LOG,
        OLD_LOG,
        NVIDIA_SMI,
        COLLECT_ENV,
        INSPECT,
        '{"model": "m", "messages": [{"role": "user", "content": "vllm serve"}]}',
        "I ran vllm serve with tp 2 and it crashed after loading weights.",
        "--model x --tensor-parallel-size 2",
    ],
)
def test_not_a_launch_command(text):
    assert looks_like(text) is None
    result = parse(text, "x.txt")
    assert "launcher" not in result.knobs
    assert result.notes  # says what it could not find


def test_crlf_and_byte_order_mark_from_a_windows_editor():
    result = parse("\ufeffexport HF_HOME=/hf\r\nvllm serve m/n \\\r\n  --port 8001\r\n", "start.sh")
    assert args(result) == {"model": "m/n", "port": "8001"}
    assert line(result, "arg.port") == 3
    assert env(result) == {"HF_HOME": "/hf"}


@pytest.mark.parametrize(
    "text",
    [
        "HF_TOKEN=hf_x\nVLLM_USE_V1=1\nCUDA_VISIBLE_DEVICES=0,1\n",
        "curl http://localhost:8000/v1/completions -H 'Content-Type: application/json' -d '{\"model\": \"m\"}'\n",
    ],
)
def test_env_files_and_requests_are_not_launch_commands(text):
    assert looks_like(text) is None


def test_parse_never_raises_on_shell_debris():
    rng = random.Random(7)
    pieces = [
        "vllm",
        "serve",
        "docker",
        "run",
        "-e",
        "A=",
        "'",
        '"',
        "\\",
        "`",
        "$(",
        "${",
        "}",
        "<",
        ">",
        "2>&1",
        "&&",
        "|",
        "#",
        "--model",
        "-O",
        "-tp",
        "\n",
        "^",
        "services:",
        "  image:",
        "[program:x]",
        "command=",
    ]
    for _ in range(300):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 40)))
        result = parse(text, "fuzz.txt")
        assert isinstance(result, ParseResult)
        assert not any("could not be read" in note for note in result.notes), text


# --- the flag table -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("--max_model_len", "--max-model-len"),
        ("-tp", "--tensor-parallel-size"),
        ("-pp", "--pipeline-parallel-size"),
        ("-dp", "--data-parallel-size"),
        ("-q", "--quantization"),
        ("-O", "--optimization-level"),
        ("-O3", "--optimization-level"),
        ("-cc.cudagraph_mode", "--compilation-config"),
        ("--max-model", "--max-model-len"),
        ("--gpu-memory", "--gpu-memory-utilization"),
        ("--no-enforce-eager", "--no-enforce-eager"),
        ("--compilation-config.level", "--compilation-config"),
        ("--kv-cache-memory=1000000", "--kv-cache-memory-bytes"),
        ("--max-num", None),  # ambiguous prefix
        ("--max-modle-len", None),
    ],
)
def test_canonical_flag(spelling, canonical):
    assert canonical_flag(spelling) == canonical


def test_suggest_flag():
    assert suggest_flag("--max-modle-len") == "--max-model-len"
    assert suggest_flag("--tensor-paralel-size") == "--tensor-parallel-size"
    assert suggest_flag("--enable-prefix-cache") == "--enable-prefix-caching"
    assert suggest_flag("--completely-unrelated-thing") is None


def test_a_script_shown_with_cat_at_a_prompt_is_read_when_the_commands_launch_nothing() -> None:
    name = "prompt-cat-script-function-docker-run.txt"
    result = parse((FIXTURES / name).read_text(encoding="utf-8"), name)
    got = values(result)
    assert got["launcher"] == "docker_run"
    assert got["image.ref"] == "vllm/vllm-openai:v0.8.4"
    assert got["container.gpus"] == "device=4,5"
    assert got["arg.model"] == "Qwen/Qwen2.5-Coder-32B-Instruct"
    assert line(result, "arg.model") == 14  # the paste's own line, not the script's
    assert {k: v for k, v in got.items() if k.startswith("env.")} == {
        "env.VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"
    }
    assert any("cat start_vllm.sh" in note for note in result.notes)


def test_a_file_shown_with_cat_that_is_no_script_is_not_read_as_commands() -> None:
    text = "$ cat notes.txt\nvllm serve would be nice here\n$ nvidia-smi -L\n"
    assert "launcher" not in parse(text, "paste.txt").knobs


def test_sniffing_blank_lines_is_linear() -> None:
    # Fuzz finding: line-start patterns such as `^\s*kind:` under re.M let `\s*` run across every
    # following blank line from every line start: 16,000 blank lines took over 10 s to sniff.
    import time

    from vllm_triage.parsers.launch.sniff import looks_like

    compose = "services:\n  vllm:\n    image: vllm/vllm-openai:v0.8.5\n    command: --model m\n"

    def cost(blank: int) -> float:
        started = time.process_time()
        assert looks_like("export A=1\n" + "\n" * blank + "kind: Pod\n") is None
        assert looks_like(compose + "\n" * blank) == "compose"
        return time.process_time() - started

    small, big = cost(4_000), cost(40_000)
    # 10 times the blank lines: linear is about 10 times the time, the quadratic scan about 100.
    assert big < 25 * small + 0.5
