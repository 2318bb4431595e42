"""`docker inspect --format '<template>'` pasted with its output: the template says which field
each printed value is, so the values are read back into the inspect fields they came from, each
on the line it was printed. Templates that do more than print fields, and output that does not fit
its template, are not read."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from vllm_triage.cli import cli
from vllm_triage.parsers import container_inspect
from vllm_triage.parsers.base import ParseResult


def values(result: ParseResult) -> dict:
    return {name: sourced.value for name, sourced in {**result.knobs, **result.facts}.items()}


def lines(result: ParseResult) -> dict:
    return {name: sourced.source.line for name, sourced in {**result.knobs, **result.facts}.items()}


ENV_LIST = """\
I checked the environment of the container:
$ docker inspect vllm-server --format '{{json .Config.Env}}'
["PATH=/usr/local/sbin:/usr/local/bin","VLLM_USE_V1=1","CUDA_VISIBLE_DEVICES=0,1","NCCL_P2P_DISABLE=1"]
"""


def test_env_list_printed_as_json_is_the_container_env() -> None:
    assert container_inspect.looks_like(ENV_LIST)
    result = container_inspect.parse(ENV_LIST, "env.txt")
    got = values(result)
    assert got["env.VLLM_USE_V1"] == "1"
    assert got["env.CUDA_VISIBLE_DEVICES"] == "0,1"
    assert got["env.NCCL_P2P_DISABLE"] == "1"
    assert lines(result)["env.NCCL_P2P_DISABLE"] == 3


def test_pretty_printed_json_keeps_each_value_on_its_own_line() -> None:
    text = """\
$ docker inspect vllm --format '{{json .Config.Env}}' | jq .
[
  "PATH=/usr/local/bin",
  "VLLM_ATTENTION_BACKEND=FLASHINFER"
]
"""
    result = container_inspect.parse(text, "env.txt")
    assert values(result)["env.VLLM_ATTENTION_BACKEND"] == "FLASHINFER"
    assert lines(result)["env.VLLM_ATTENTION_BACKEND"] == 4


def test_a_template_of_several_fields_and_an_image_inspect_with_a_continued_line() -> None:
    text = """\
$ docker inspect vllm-server -f 'shm={{.HostConfig.ShmSize}} ipc={{.HostConfig.IpcMode}}'
shm=17179869184 ipc=host
$ docker image inspect vllm/vllm-openai:v0.9.2 \\
    --format '{{json .Config.Entrypoint}}'
["python3","-m","vllm.entrypoints.openai.api_server"]
"""
    result = container_inspect.parse(text, "inspect.txt")
    got = values(result)
    assert got["container.shm_size"] == 17179869184
    assert got["container.ipc"] == "host"
    assert got["image.ref"] == "vllm/vllm-openai:v0.9.2"
    assert got["image.entrypoint"] == ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    assert lines(result)["container.ipc"] == 2
    assert lines(result)["image.entrypoint"] == 5


@pytest.mark.parametrize(
    ("template", "printed"),
    [
        ("{{json .Config.Env}}", '["HF_TOKEN={token}","VLLM_USE_V1=0"]'),
        ("{{.Config.Env}}", "[HF_TOKEN={token} VLLM_USE_V1=0]"),
        ("tok={{.Config.Env}}", "tok=[HF_TOKEN={token} VLLM_USE_V1=0]"),
    ],
)
def test_a_secret_in_a_formatted_env_never_reaches_the_fingerprint(tmp_path, template, printed) -> None:
    token = "hf_" + "Zq8" * 11
    path = tmp_path / "env.txt"
    path.write_text(
        f"$ docker inspect vllm --format '{template}'\n" + printed.format(token=token) + "\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(cli, ["fingerprint", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert token not in result.output
    assert "VLLM_USE_V1" in result.output


# ------------------------------------------------------------------------ must not be read


def test_a_template_with_range_or_index_is_not_read() -> None:
    text = """\
$ docker inspect vllm --format '{{.Name}} {{range .Mounts}}{{.Source}} {{end}}'
/vllm-server /data/models /dev/shm
"""
    result = container_inspect.parse(text, "range.txt")
    assert values(result) == {}
    assert any("does more than print fields" in note for note in result.notes)
    # no field action at all: not taken for inspect output
    assert not container_inspect.looks_like(
        "$ docker inspect vllm --format '{{index .Config.Labels \"maintainer\"}}'\nvllm-team\n"
    )


def test_output_that_does_not_fit_its_template_is_not_read() -> None:
    text = """\
$ docker inspect vllm -f 'shm={{.HostConfig.ShmSize}} ipc={{.HostConfig.IpcMode}}'
17179869184
$ docker inspect vllm --format '{{json .Config.Env}}'
[PATH=/usr/bin
"""
    result = container_inspect.parse(text, "unfit.txt")
    assert values(result) == {}
    assert any("does not fit" in note for note in result.notes)
    assert any("not the JSON" in note for note in result.notes)


def test_an_error_printed_instead_of_the_field_is_no_value() -> None:
    text = """\
$ docker inspect vllm-server --format '{{.HostConfig.ShmSize}}'
Error: No such object: vllm-server
$ docker inspect vllm --format '{{.Config.Imag}}'
template parsing error: template: :1:9: executing "" at <.Config.Imag>: map has no entry for key "Imag"
"""
    result = container_inspect.parse(text, "failed.txt")
    assert values(result) == {}
    assert sum("command failed" in note for note in result.notes) == 2


def test_a_command_without_a_field_action_or_a_launch_command_is_no_inspect() -> None:
    assert not container_inspect.looks_like("$ docker inspect vllm\nError: No such object: vllm\n")
    assert not container_inspect.looks_like(
        "docker run --gpus all vllm/vllm-openai:latest --model Qwen/Qwen2.5-7B-Instruct\n"
    )
    assert not container_inspect.looks_like("$ docker ps --format '{{.Names}}'\nvllm-server\n")


def test_a_prompted_session_of_format_commands_is_one_container() -> None:
    path = Path(__file__).parent.parent / "fixtures" / "inspect" / "format-fields.txt"
    result = container_inspect.parse(path.read_text(encoding="utf-8"), path.name)
    got = values(result)
    assert got["env.VLLM_WORKER_MULTIPROC_METHOD"] == "spawn"
    assert got["container.shm_size"] == 67108864
    assert got["container.ipc"] == "private"
    assert got["container.exit_code"] == 137
    assert lines(result)["container.exit_code"] == 6
    assert [problem.id for problem in result.problems] == ["container-oom-killed"]


def test_a_list_printed_without_json_is_read_as_go_prints_it() -> None:
    # `{{.Config.Env}}` prints Go's `[a b c]`; an env value holding a space stays one entry
    text = """\
$ docker inspect vllm --format '{{.Config.Env}}'
[PATH=/usr/bin VLLM_USE_V1=1 NCCL_DEBUG=INFO OPTS=--a --b]
$ docker inspect vllm --format '{{.Config.Cmd}}'
[--model Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 2]
"""
    result = container_inspect.parse(text, "go.txt")
    got = values(result)
    assert got["env.NCCL_DEBUG"] == "INFO"
    assert got["env.OPTS"] == "--a --b"
    assert got["container.cmd"] == ["--model", "Qwen/Qwen2.5-7B-Instruct", "--tensor-parallel-size", "2"]
    # must-not: a Go map (`map[k:v]`) is no list
    maps = container_inspect.parse(
        "$ docker inspect vllm --format '{{.Config.Labels}}'\nmap[maintainer:vllm-team]\n", "m.txt"
    )
    assert "container.cmd" not in values(maps)


def test_the_command_is_read_as_the_shell_reads_it() -> None:
    # `--format=…` in double quotes, `--type image` naming the image, a pipe after the command
    text = """\
$ docker inspect --type image --format="{{json .Config.Entrypoint}}" vllm/vllm-openai:v0.10.1 | jq -c .
["vllm","serve"]
"""
    got = values(container_inspect.parse(text, "t.txt"))
    assert got["image.ref"] == "vllm/vllm-openai:v0.10.1"
    assert got["image.entrypoint"] == ["vllm", "serve"]


def test_a_template_of_many_fields_on_a_long_line_that_does_not_fit_is_answered_at_once() -> None:
    # must-not hang: 8 fields split by `x`, a line of x's that never ends in the template's `y`
    # (a pattern of lazy groups built from the template backtracked for minutes on 300 x's)
    template = "x".join(f"{{{{.A{n}}}}}" for n in range(8)) + "y"
    text = f"docker inspect v --format '{template}'\n" + "x" * 3_000 + "\n" + "x" * 300_000 + "\n"
    result = container_inspect.parse(text, "long.txt")
    assert values(result) == {}
    assert any("does not fit" in note for note in result.notes)


# ------------------------------------------------------------------------ `| jq` paths


def test_a_jq_path_after_inspect_reads_like_the_format_template() -> None:
    text = """\
$ docker inspect vllm-server | jq '.[0].Config.Env'
[
  "PATH=/usr/local/bin:/usr/bin",
  "NCCL_P2P_DISABLE=1",
  "VLLM_USE_V1=1"
]
"""
    assert container_inspect.looks_like(text)
    result = container_inspect.parse(text, "env.txt")
    got = values(result)
    assert got["env.NCCL_P2P_DISABLE"] == "1"
    assert lines(result)["env.VLLM_USE_V1"] == 5


def test_an_inspect_target_with_a_tag_is_an_image() -> None:
    # a container's name holds no '/' or ':': `docker inspect vllm/vllm-openai:v0.8.5` is the image
    text = (
        "$ docker inspect vllm/vllm-openai:v0.8.5 | jq '.[0].Config.Env'\n[\n  \"CUDA_VERSION=12.4.0\"\n]\n"
    )
    got = values(container_inspect.parse(text, "env.txt"))
    assert got["image.ref"] == "vllm/vllm-openai:v0.8.5"
    assert "env.CUDA_VERSION" not in got  # the image's baked environment, not a container setting


def test_a_jq_path_to_one_value_is_read_and_a_filter_that_computes_is_not() -> None:
    picked = "$ docker inspect vllm-server | jq '.[0].HostConfig.ShmSize'\n17179869184\n"
    got = values(container_inspect.parse(picked, "shm.txt"))
    assert any(name.startswith("container.shm") for name in got), got
    compact = picked.replace("jq '", "jq -c '")
    assert any(name.startswith("container.shm") for name in values(container_inspect.parse(compact, "s.txt")))
    # must-not: a filter that computes (`| tostring`, `.[] | …`) does not print the field as inspect holds it
    for filter_ in (".[0].HostConfig.ShmSize | tostring", ".[] | .HostConfig.ShmSize"):
        text = f"$ docker inspect vllm-server | jq '{filter_}'\n17179869184\n"
        assert not any(
            name.startswith("container.shm") for name in values(container_inspect.parse(text, "s.txt"))
        )


def test_a_secret_in_a_jq_env_never_reaches_the_fingerprint(tmp_path) -> None:
    token = "hf_" + "Qx7" * 11
    path = tmp_path / "env.txt"
    path.write_text(
        f'$ docker inspect vllm | jq .[0].Config.Env\n[\n  "HF_TOKEN={token}"\n]\n', encoding="utf-8"
    )
    result = CliRunner().invoke(cli, ["fingerprint", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert token not in result.output and "HF_TOKEN" in result.output
