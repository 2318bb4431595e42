"""systemd service units: `ExecStart=` read as the launch, `Environment=` as its environment."""

from __future__ import annotations

from launch_helpers import family, line, read, value

from vllm_triage.parsers.launch import parse
from vllm_triage.parsers.launch.sniff import looks_like


def test_a_unit_gives_the_execstart_launch_with_its_environment_and_continuations() -> None:
    result = read("systemd-vllm-unit-env-continuation.service")
    assert value(result, "launcher") == "api_server_module"
    # ${MODEL_DIR} comes from Environment=, as systemd substitutes it
    assert value(result, "arg.model") == "/srv/llm/models/Qwen2.5-32B-Instruct-AWQ"
    assert line(result, "arg.model") == 18
    args = family(result, "arg.")
    assert args["tensor_parallel_size"] == "2" and args["max_model_len"] == "16384" and args["port"] == "8011"
    env = family(result, "env.")
    assert env["HF_HOME"] == "/srv/llm/hf" and env["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert env["VLLM_LOGGING_LEVEL"] == "DEBUG"
    assert "VLLM_USE_V1" not in env  # a ';' comment line is no setting
    assert any("EnvironmentFile" in note for note in result.notes)
    assert any("systemd unit runs" in note for note in result.notes)


def test_an_empty_environment_line_resets_what_came_before() -> None:
    text = (
        "[Service]\nEnvironment=A=1 B=2\nEnvironment=\nEnvironment=C=3\n"
        "ExecStart=/usr/local/bin/vllm serve Qwen/Qwen3-8B --port 8000\n"
    )
    result = parse(text, "u.service")
    assert value(result, "launcher") == "vllm_serve" and value(result, "arg.model") == "Qwen/Qwen3-8B"
    assert family(result, "env.") == {"C": "3"}


def test_execstart_outside_the_service_section_or_without_vllm_is_no_launch() -> None:
    other = (
        "[Service]\nExecStart=/usr/bin/python3 -m http.server 8000\n[Install]\nWantedBy=multi-user.target\n"
    )
    assert looks_like(other) is None
    wrong_section = "[Unit]\nDescription=vllm\nExecStart=/usr/bin/vllm serve m\n"
    assert parse(wrong_section, "u.service").knobs.get("launcher") is None


def test_a_unit_running_docker_reads_the_container_launch() -> None:
    text = (
        "[Service]\nRestart=always\n"
        "ExecStartPre=-/usr/bin/docker rm -f vllm\n"
        "ExecStart=/usr/bin/docker run --rm --name vllm --gpus all -p 8000:8000 "
        "vllm/vllm-openai:v0.9.2 --model mistralai/Mistral-7B-Instruct-v0.3\n"
        "ExecStop=/usr/bin/docker stop vllm\n"
    )
    result = parse(text, "vllm.service")
    assert value(result, "launcher") == "docker_run"
    assert value(result, "image.ref") == "vllm/vllm-openai:v0.9.2"
    assert value(result, "arg.model") == "mistralai/Mistral-7B-Instruct-v0.3"
    assert value(result, "container.gpus") == "all"


def test_a_unit_that_starts_vllm_through_a_script_gives_its_environment() -> None:
    text = (
        "[Unit]\nDescription=vLLM - Qwen3 inference server\n\n[Service]\nType=simple\n"
        "ExecStart=/home/ops/llm-serve/start-vllm.sh\nRestart=on-failure\n"
        "Environment=HF_HOME=/srv/hf\nEnvironment=VLLM_WORKER_MULTIPROC_METHOD=spawn\n"
        "Environment=HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEF12\n\n[Install]\nWantedBy=default.target\n"
    )
    assert looks_like(text) == "systemd"
    result = parse(text, "vllm.service")
    env = family(result, "env.")
    assert env["HF_HOME"] == "/srv/hf" and env["VLLM_WORKER_MULTIPROC_METHOD"] == "spawn"
    assert line(result, "env.HF_HOME") == 8
    assert "launcher" not in result.knobs  # the command is in the script, not in the paste
    assert any("start-vllm.sh" in note and "not in the paste" in note for note in result.notes)


def test_a_script_unit_with_no_environment_reads_nothing() -> None:
    text = "[Unit]\nDescription=vLLM server\n[Service]\nExecStart=/opt/start-vllm.sh\n"
    result = parse(text, "vllm.service")
    assert not result.knobs
    assert any("no ExecStart=" in note for note in result.notes)
