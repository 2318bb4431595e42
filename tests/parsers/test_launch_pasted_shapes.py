"""Launch commands in the shapes people paste them: a `ps` listing of the running server, a command
in a markdown code span, wrappers (setsid), a YAML document under a prompt or a sentence, a whole
command line in one exec-form item, RayLLM's engine_config, an env file shown in a README."""

from __future__ import annotations

from launch_helpers import family, line, value

from vllm_triage.parsers import env_file
from vllm_triage.parsers.launch import looks_like, parse


def test_ps_listing_of_a_running_server() -> None:
    text = (
        "root@gpu-7:~# ps -ef | grep vllm\n"
        "root      48213      1 99 09:12 ?        01:22:09 /opt/venv/bin/python3 /opt/venv/bin/vllm serve "
        "Qwen/Qwen3-32B --tensor-parallel-size 2 --max-model-len 32768\n"
        "root      49001  48110  0 10:30 pts/0    00:00:00 grep --color=auto vllm\n"
    )
    result = parse(text, "ps.txt")
    assert value(result, "launcher") == "vllm_serve"
    assert family(result, "arg.") == {
        "model": "Qwen/Qwen3-32B",
        "tensor_parallel_size": "2",
        "max_model_len": "32768",
    }


def test_ps_columns_cut_to_dots_under_a_pod_root_prompt() -> None:
    text = (
        "worker-0:~# kubectl exec vllm-0 -- ps -lefww\n"
        "....  /usr/bin/python3 -m vllm.entrypoints.openai.api_server --model /models/m --port 8080\n"
    )
    result = parse(text, "ps.txt")
    assert value(result, "launcher") == "api_server_module"
    assert value(result, "arg.port") == "8080"


def test_echo_of_a_command_is_no_launch() -> None:
    assert looks_like('echo "vllm serve Qwen/Qwen3-8B --port 8000"\necho vllm serve x\n') is None


def test_command_in_a_markdown_table_cell() -> None:
    text = (
        "| port | service | how it runs |\n|---|---|---|\n"
        "| 8100 | chat | `envs/llm/bin/vllm serve /data/Qwen3-8B --port 8100 --max-model-len 8192` |\n"
        "| 8101 | embed | `uvicorn app:app --port 8101` |\n"
    )
    result = parse(text, "notes.md")
    assert family(result, "arg.") == {"model": "/data/Qwen3-8B", "port": "8100", "max_model_len": "8192"}


def test_a_code_span_in_prose_gives_way_to_the_real_command() -> None:
    text = (
        "vllm serve org/real --port 9000\n\n"
        "Later you can also try `vllm serve org/other --port 9100` if memory allows.\n"
    )
    assert value(parse(text, "notes.md"), "arg.model") == "org/real"


def test_setsid_and_a_default_word_in_quotes() -> None:
    text = "setsid nohup vllm serve ${MODEL:-\"org/model\"} --port ${PORT:-'8000'} > log 2>&1 &\n"
    result = parse(text, "run.sh")
    assert value(result, "arg.model") == "org/model"
    assert value(result, "arg.port") == "8000"


def test_python_running_the_vllm_console_script() -> None:
    result = parse("/usr/bin/python3 /usr/local/bin/vllm serve org/m --port 1\n", "x.sh")
    assert value(result, "launcher") == "vllm_serve"


def test_compose_file_under_a_sentence() -> None:
    text = (
        "My compose file\n"
        "services:\n  llm:\n    image: vllm/vllm-openai:v0.9.1\n"
        "    command: --model /models/m --max-model-len 4096\n"
    )
    result = parse(text, "compose.txt")
    assert value(result, "launcher") == "compose"
    assert value(result, "arg.max_model_len") == "4096"


def test_whole_command_line_in_one_exec_form_item() -> None:
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n"
        "      - name: vllm\n        image: vllm/vllm-openai:v0.6.3\n        command:\n"
        '        - "python3 -m vllm.entrypoints.openai.api_server --model /m --tensor-parallel-size 2"\n'
    )
    result = parse(text, "deploy.yaml")
    assert family(result, "arg.") == {"model": "/m", "tensor_parallel_size": "2"}
    assert any("one program name" in note for note in result.notes)


def test_rayllm_engine_config_under_a_cat_prompt() -> None:
    text = (
        "ray@head:~/configs$ cat model.yaml\n"
        "applications:\n- name: llm\n  import_path: rayllm.backend:router_application\n  args:\n    models:\n"
        "    - engine_config:\n        model_id: chat\n        hf_model_id: org/base-7b\n"
        "        type: VLLMEngine\n        engine_kwargs:\n          max_num_seqs: 32\n"
    )
    assert looks_like(text) == "ray_serve_llm"
    result = parse(text, "model.yaml")
    assert value(result, "arg.model") == "org/base-7b"
    assert value(result, "arg.served_model_name") == "chat"
    assert value(result, "arg.max_num_seqs") == "32"


def test_env_file_shown_in_a_readme_block() -> None:
    text = (
        "To serve another model, set in `.env`:\n\n```bash\nVLLM_MODEL=org/m\nVLLM_MAX_MODEL_LEN=8192\n```\n\n"
        "then run `docker compose up -d` again, which recreates the service.\n"
    )
    assert env_file.looks_like(text)
    result = env_file.parse(text, "README.md")
    assert {k: v.value for k, v in result.knobs.items()} == {
        "env.VLLM_MODEL": "org/m",
        "env.VLLM_MAX_MODEL_LEN": "8192",
    }


def test_a_readme_with_a_command_block_is_no_env_file() -> None:
    text = "Run:\n\n```\nexport A=1\nvllm serve org/m\n```\n"
    assert not env_file.looks_like(text)


# --- Dockerfiles --------------------------------------------------------------------------------

DOCKERFILE = """\
FROM python:3.12 AS build
RUN pip wheel vllm
FROM vllm/vllm-openai:v0.10.1
ARG HF_REVISION=main
ENV HF_HOME=/data/hf \\
    VLLM_LOGGING_LEVEL=DEBUG
ENV NCCL_DEBUG INFO
EXPOSE 8000
CMD ["--model", "org/model-7b", "--max_model_len", "8192", \\
     "--enforce-eager"]
"""


def test_dockerfile_cmd_goes_to_the_base_image_entrypoint() -> None:
    assert looks_like(DOCKERFILE) == "dockerfile"
    result = parse(DOCKERFILE, "Dockerfile")
    assert value(result, "launcher") == "api_server_module"  # vllm-openai before v0.11
    assert value(result, "image.ref") == "vllm/vllm-openai:v0.10.1"
    assert family(result, "arg.") == {
        "model": "org/model-7b",
        "max_model_len": "8192",
        "enforce_eager": "true",
    }
    assert family(result, "env.") == {
        "HF_HOME": "/data/hf",
        "VLLM_LOGGING_LEVEL": "DEBUG",
        "NCCL_DEBUG": "INFO",
    }


def test_dockerfile_entrypoint_exec_and_shell_forms() -> None:
    exec_form = 'FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nENTRYPOINT ["vllm", "serve"]\nCMD ["org/m", "--port", "80"]\n'
    result = parse(exec_form, "Dockerfile")
    assert value(result, "launcher") == "vllm_serve"
    assert family(result, "arg.") == {"model": "org/m", "port": "80"}
    shell_form = (
        "FROM ubuntu:22.04\nCMD python3 -m vllm.entrypoints.openai.api_server --model org/m --port 81\n"
    )
    result = parse(shell_form, "Dockerfile")
    assert value(result, "launcher") == "api_server_module"
    assert value(result, "arg.port") == "81"


def test_a_dockerfile_that_only_installs_vllm_is_no_launch() -> None:
    assert looks_like('FROM python:3.12\nRUN pip install vllm\nCMD ["bash"]\n') is None


def test_a_prompt_masked_by_githubs_email_filter() -> None:
    # GitHub replaces an address-like `user@host` in a mailed reply with `***@***.***`
    text = "***@***.***:/workspace# vllm serve google/gemma-3-12b-it --max-model-len 8192\n"
    result = parse(text, "reply.txt")
    assert value(result, "launcher") == "vllm_serve"
    assert family(result, "arg.") == {"model": "google/gemma-3-12b-it", "max_model_len": "8192"}
    # its output under it is not a command
    output = text + "***@***.***:/workspace# cat notes\nvllm serve other/model --port 1\n"
    assert value(parse(output, "reply.txt"), "arg.model") == "google/gemma-3-12b-it"


def test_a_comment_after_the_continuation_backslash_is_an_aside_not_the_end_of_the_command():
    # bash would end the command at `\  # …` (an escaped space, then a comment); the writer meant
    # the backslash to continue it, so the rest of the flags and the image are still read.
    text = (
        "docker run --runtime nvidia \\\n"
        "    --gpus all \\  # every GPU\n"
        "    --ipc=host \\ #\n"
        "    --shm-size 8g \\        #共享内存\n"
        "    vllm/vllm-openai:v0.6.3 \\\n"
        '    --model Qwen/Qwen2.5-7B-Instruct-AWQ --quantization "awq"\n'
    )
    result = parse(text, "run.sh")
    assert value(result, "launcher") == "docker_run"
    assert value(result, "image.ref") == "vllm/vllm-openai:v0.6.3"
    assert value(result, "container.gpus") == "all"
    assert family(result, "arg.") == {"model": "Qwen/Qwen2.5-7B-Instruct-AWQ", "quantization": "awq"}
    assert any("comment after the continuation backslash dropped" in note for note in result.notes)


def test_a_quoted_backslash_before_a_hash_stays_in_its_string():
    text = "vllm serve m --chat-template-content-format 'a \\ #b' --port 8001\n"
    assert family(parse(text, "run.sh"), "arg.")["chat_template_content_format"] == "a \\ #b"


def test_lines_after_a_prompted_comment_are_commands_not_its_output():
    text = (
        "$ vllm serve facebook/opt-125m --port 9000\n\nOr with Docker:\n\n"
        "$ # start the container\n"
        "docker run --gpus all vllm/vllm-openai:v0.8.4 --model facebook/opt-1.3b\n"
    )
    result = parse(text, "readme.md")
    assert value(result, "launcher") == "docker_run"
    assert value(result, "arg.model") == "facebook/opt-1.3b"


def test_a_vllm_config_file_alone_gives_its_arguments() -> None:
    # `vllm serve --config vllm.yaml` with the file shown on its own: keys with _ or -, a comment.
    text = (
        "# VLLM_SERVER_DEV_MODE=1\nmodel: meta-llama/Llama-3.1-8B-Instruct\nport: 8001\n"
        "gpu_memory_utilization: 0.6\nmax-model-len: 1024\nenable-sleep-mode: true\n"
    )
    assert looks_like(text) == "vllm_config"
    result = parse(text, "vllm.yaml")
    args = family(result, "arg.")
    assert args["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert args["max_model_len"] == "1024" and args["enable_sleep_mode"] == "true"
    assert line(result, "arg.port") == 3
    assert "launcher" not in result.knobs  # the command that reads the file is not in the paste
    # must-not: a YAML whose keys are not vLLM's (an app's own settings)
    assert looks_like("model: gpt-4o\ntemperature: 0.2\nretries: 3\ntimeout_s: 30\n") is None


def test_a_backslash_newline_inside_double_quotes_joins_the_value() -> None:
    text = 'M="/hub/models--org--m/\\\nsnapshots/0e9e/"\nvllm serve "$M" --port 8000\n'
    assert value(parse(text, "run.sh"), "arg.model") == "/hub/models--org--m/snapshots/0e9e/"
    # outside quotes the continuation still breaks words as written
    spaced = "vllm serve org/m \\\n  --port 8000\n"
    assert family(parse(spaced, "run.sh"), "arg.")["port"] == "8000"


DOUBLE_SPACED = (
    "sudo docker run \\\n\n"
    "  --gpus device=3 \\\n\n"
    "  -e VLLM_USE_FLASHINFER_SAMPLER=1 \\\n\n"
    "  -p 8001:8000 --ipc=host \\\n\n"
    "  vllm/vllm-openai:v0.10.1 \\\n\n"
    "  --model Qwen/Qwen3-4B \\\n\n"
    "  --enforce-eager\n"
)


def test_double_spaced_paste_is_read_as_one_command() -> None:
    # Copied from a rendered page: a blank line after every continued line.
    assert looks_like(DOUBLE_SPACED) is not None
    result = parse(DOUBLE_SPACED, "cmd.txt")
    assert value(result, "launcher") == "docker_run"
    assert value(result, "image.ref") == "vllm/vllm-openai:v0.10.1"
    assert family(result, "arg.") == {"model": "Qwen/Qwen3-4B", "enforce_eager": "true"}
    assert value(result, "env.VLLM_USE_FLASHINFER_SAMPLER") == "1"
    assert line(result, "arg.model") == 11


def test_blank_line_after_a_backslash_still_ends_a_command_in_a_script() -> None:
    # Two commands a paragraph apart: the blank lines are the writer's, so bash's reading holds.
    text = "export HF_HOME=/data/hf\nvllm serve Qwen/Qwen3-4B \\\n\n  --port 9000\n\necho done\n"
    result = parse(text, "run.sh")
    assert value(result, "arg.model") == "Qwen/Qwen3-4B"
    assert "arg.port" not in result.knobs
