"""docker/podman inspect JSON (whole, jq pieces, elided, blockquoted, truncated) → image, launch
and container knobs, state facts and the exit-137 problems; each with the line it was read at."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_triage.parsers import container_inspect
from vllm_triage.parsers.base import ParseResult

FIXTURES = Path(__file__).parent.parent / "fixtures" / "inspect"


def read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def parse(name: str) -> ParseResult:
    return container_inspect.parse(read(name), name)


def values(result: ParseResult) -> dict:
    return {name: sourced.value for name, sourced in {**result.knobs, **result.facts}.items()}


def source_line(name: str, result: ParseResult, key: str) -> str:
    """The text of the original file's line a value was read at."""
    found = result.knobs.get(key) or result.facts.get(key)
    assert found is not None, key
    return read(name).splitlines()[found.source.line - 1]


def problem_ids(result: ParseResult) -> list[str]:
    return [problem.id for problem in result.problems]


# ------------------------------------------------------------------------------ full containers

OOM = "docker-inspect-vllm-serve-oom-killed.json"
KILLED = "docker-container-inspect-object-2space-api-server-killed.json"
PODMAN = "podman-inspect-cdi-api-server-exit1.json"


def test_docker_inspect_array_reads_image_and_container_settings() -> None:
    result = parse(OOM)
    got = values(result)
    assert result.kind == container_inspect.KIND_CONTAINER
    assert got["image.ref"] == "vllm/vllm-openai:v0.11.0"
    assert got["image.id"] == "sha256:3f2a91c0d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1"
    assert got["container.gpus"] == "all"  # DeviceRequests Count -1
    assert '"Count": -1' in source_line(OOM, result, "container.gpus")
    assert got["container.runtime"] == "runc"
    assert got["container.shm_size"] == 17179869184
    assert got["container.ipc"] == "private"
    assert got["container.network"] == "host"
    assert got["container.privileged"] is False
    assert "container.cap_add" not in got  # CapAdd null
    assert got["container.mounts"] == ["/mnt/models/hf:/root/.cache/huggingface"]
    assert got["container.entrypoint"] == ["vllm", "serve"]
    assert got["container.cmd"][0] == "Qwen/Qwen3-32B"
    assert got["container.name"] == "qwen3-32b"
    assert got["container.status"] == "exited"
    assert got["container.created"] == "2025-10-20T08:14:02.118402917Z"
    assert got["container.started_at"] == "2025-10-20T08:14:02.694018331Z"


def test_provenance_is_the_line_in_the_pasted_file() -> None:
    result = parse(OOM)
    assert '"Image": "vllm/vllm-openai:v0.11.0"' in source_line(OOM, result, "image.ref")
    assert '"Image": "sha256:' in source_line(OOM, result, "image.id")
    assert '"ExitCode": 137' in source_line(OOM, result, "container.exit_code")
    assert '"CUDA_VERSION=12.8.1"' in source_line(OOM, result, "env.CUDA_VERSION")


def test_env_knobs_and_image_facts_from_config_env() -> None:
    got = values(parse(OOM))
    assert got["env.HF_HUB_OFFLINE"] == "1"
    assert got["env.VLLM_LOGGING_LEVEL"] == "DEBUG"
    assert got["env.NVIDIA_VISIBLE_DEVICES"] == "all"
    assert got["image.cuda_version"] == "12.8.1"
    assert got["image.nvidia_require_cuda"].startswith("cuda>=12.8 brand=tesla")
    assert got["image.nccl_version"] == "2.25.1-1"
    assert got["image.vllm_usage_source"] == "production-docker-image"


def test_vllm_serve_arguments_from_path_and_args() -> None:
    got = values(parse(OOM))
    assert got["arg.model"] == "Qwen/Qwen3-32B"
    assert got["arg.tensor_parallel_size"] == "4"
    assert got["arg.max_model_len"] == "32768"
    assert got["arg.enable_prefix_caching"] == "true"
    assert got["arg.gpu_memory_utilization"] == "0.92"


def test_exit_137_with_oom_killed_is_a_container_oom_problem() -> None:
    result = parse(OOM)
    assert values(result)["container.exit_code"] == 137
    assert values(result)["container.oom_killed"] is True
    assert problem_ids(result) == ["container-oom-killed"]
    problem = result.problems[0]
    assert problem.severity == "error"
    lines = read(OOM).splitlines()
    assert {lines[e.line - 1].strip() for e in problem.evidence} == {'"ExitCode": 137,', '"OOMKilled": true,'}


def test_object_2space_with_prompt_and_device_ids() -> None:
    result = parse(KILLED)
    got = values(result)
    assert got["image.ref"] == "vllm/vllm-openai:v0.8.5.post1"
    assert got["container.gpus"] == "2,3"
    assert got["container.gpu_request"] == {"driver": "nvidia", "count": 0, "device_ids": ["2", "3"]}
    assert got["container.runtime"] == "nvidia"
    assert got["container.shm_size"] == 64 * 2**20
    assert got["container.ipc"] == "shareable"
    assert got["container.cap_add"] == ["IPC_LOCK", "SYS_NICE"]
    # a named volume is written by its name on the command line, not its /var/lib/docker path
    assert got["container.mounts"] == ["hf-cache:/root/.cache/huggingface"]
    assert got["container.entrypoint"] == ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    assert got["env.CUDA_VISIBLE_DEVICES"] == "0,1"


def test_api_server_arguments_use_long_underscore_names() -> None:
    got = values(parse(KILLED))
    assert got["arg.model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert got["arg.served_model_name"] == "llama"
    assert got["arg.max_model_len"] == "16384"
    assert got["arg.enable_prefix_caching"] == "false"  # --no-enable-prefix-caching
    assert got["arg.tensor_parallel_size"] == "2"  # -tp


def test_exit_137_without_oom_killed_is_a_kill_from_outside() -> None:
    result = parse(KILLED)
    assert values(result)["container.oom_killed"] is False
    assert problem_ids(result) == ["container-killed"]


def test_podman_inspect_fields() -> None:
    result = parse(PODMAN)
    got = values(result)
    assert got["image.ref"] == "docker.io/vllm/vllm-openai:v0.10.1.1"
    # podman prints the bare hex ID; it is spelled like Docker's so runs compare
    assert got["image.id"] == "sha256:c1d2e3f4a5b60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
    assert got["image.digest"] == "sha256:5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"
    assert got["container.entrypoint"] == ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    assert got["container.gpus"] == "all"  # --device nvidia.com/gpu=all in CreateCommand
    assert got["container.mounts"] == ["/home/ops/models:/models"]
    assert got["container.runtime"] == "oci"
    assert got["container.name"] == "mistral"
    assert got["container.exit_code"] == 1
    assert got["arg.tokenizer_mode"] == "mistral"
    assert got["arg.enforce_eager"] == "true"
    assert result.problems == []


def test_image_inspect_gives_id_tag_digest_and_image_facts() -> None:
    result = parse("docker-image-inspect-repodigests.json")
    got = values(result)
    assert result.kind == container_inspect.KIND_IMAGE
    assert got["image.id"] == "sha256:7d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e"
    assert got["image.ref"] == "vllm/vllm-openai:v0.10.1.1"
    # the digest of the repository the reference names, not the first one listed
    assert got["image.digest"] == "sha256:e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6"
    assert got["image.cuda_version"] == "12.8.1"
    assert got["image.entrypoint"] == ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    # an image's defaults are not a container's settings
    assert not any(name.startswith(("env.", "container.", "arg.")) for name in got)


# ------------------------------------------------------------------------------------ jq pieces


def test_jq_device_requests_piece() -> None:
    result = parse("jq-devicerequests-device-ids.json")
    assert result.kind == container_inspect.KIND_PIECE
    assert values(result)["container.gpus"] == "4,5,6,7"
    assert '"DeviceIDs": [' in source_line("jq-devicerequests-device-ids.json", result, "container.gpus")


def test_jq_object_piece_with_digest_reference() -> None:
    got = values(parse("jq-image-env-piece.json"))
    assert got["image.ref"].startswith("vllm/vllm-openai@sha256:0d1c2b3a")
    assert got["image.digest"] == "sha256:0d1c2b3a49586f7e8d9c0b1a2f3e4d5c6b7a8998f0e1d2c3b4a5968778695a4b"
    assert got["env.VLLM_ATTENTION_BACKEND"] == "FLASHINFER"
    assert got["image.vllm_build_commit"] == "b8b302cde434df8c9289a2b465406b47ebab1c2d"
    assert got["image.cuda_version"] == "12.9.1"
    assert got["container.exit_code"] == 1
    assert got["container.status"] == "exited"


@pytest.mark.parametrize(
    "text, gpus",
    [
        ('[{"Driver": "", "Count": -1, "DeviceIDs": null, "Capabilities": [["gpu"]]}]', "all"),
        ('[{"Driver": "nvidia", "Count": 2, "DeviceIDs": [], "Capabilities": [["gpu"]]}]', "2"),
        (
            '[{"Driver": "", "Count": 0, "DeviceIDs": ["GPU-3f1c"], "Capabilities": [["gpu", "utility"]]}]',
            "GPU-3f1c",
        ),
    ],
)
def test_device_request_shapes(text: str, gpus: str) -> None:
    assert values(container_inspect.parse(text, "dr.json"))["container.gpus"] == gpus


def test_runtime_nvidia_without_device_requests_selects_by_visible_devices() -> None:
    text = json.dumps(
        {
            "HostConfig": {"Runtime": "nvidia", "DeviceRequests": None},
            "Config": {"Env": ["NVIDIA_VISIBLE_DEVICES=2,3"]},
        },
        indent=2,
    )
    result = container_inspect.parse(text, "piece.json")
    assert result.knobs["container.gpus"].value == "2,3"
    assert "NVIDIA_VISIBLE_DEVICES" in result.knobs["container.gpus"].note


def test_running_container_reports_no_exit_code() -> None:
    text = '{"State": {"Status": "running", "Running": true, "OOMKilled": false, "ExitCode": 0}}'
    got = values(container_inspect.parse(text, "state.json"))
    assert got["container.status"] == "running"
    assert "container.exit_code" not in got


def test_several_containers_read_the_first_and_say_so() -> None:
    one = json.loads(read(OOM))[0]
    other = dict(one, Id="f" * 64, Name="/other")
    result = container_inspect.parse(json.dumps([one, other], indent=4), "two.json")
    assert result.knobs["image.ref"].value == "vllm/vllm-openai:v0.11.0"
    assert result.facts["container.name"].value == "qwen3-32b"
    assert "2 containers in this output: only the first one is read" in result.notes


# --------------------------------------------------------------------------- damaged pastes


def test_elided_middle_in_a_blockquoted_markdown_paste() -> None:
    name = "docker-inspect-elided-middle-blockquoted.md"
    result = parse(name)
    got = values(result)
    assert got["image.ref"] == "vllm/vllm-openai:v0.7.3"
    assert got["image.id"].startswith("sha256:aa11bb22")
    assert got["container.ipc"] == "host"
    assert got["container.shm_size"] == 67108864
    assert got["container.exit_code"] == 139
    assert got["arg.model"] == "/models/DeepSeek-R1-Distill-Qwen-32B"
    assert not any(name.startswith("env.") for name in got)  # "Env": [ ... ]
    assert any(note.startswith("parts elided by the user (line 13,") for note in result.notes)
    assert '"ShmSize": 67108864' in source_line(name, result, "container.shm_size")


def test_truncated_mid_string_reads_what_is_there() -> None:
    result = parse("docker-inspect-truncated-mid-string.json")
    got = values(result)
    assert got["image.id"] == "sha256:feedfacecafebeef0011223344556677889900aabbccddeeff00112233445566"
    assert got["container.status"] == "restarting"
    assert got["container.exit_code"] == 1
    # tini -- bash -c "pip install … && vllm serve …": the vLLM command inside the script
    assert got["arg.model"] == "google/gemma-3-27b-it"
    assert got["arg.max_model_len"] == "8192"
    assert got["arg.limit_mm_per_prompt"] == '{"image": 2}'
    assert got["arg.port"] == "9000"
    assert "the JSON is cut short: read as far as it goes" in result.notes


# ----------------------------------------------------------------------------------- read_json


def test_read_json_matches_json_loads_on_valid_input() -> None:
    text = read(OOM)
    reading = container_inspect.read_json(text)
    assert [node.plain() for node in reading.values] == [json.loads(text)]
    assert not reading.truncated and not reading.elided


def test_read_json_closes_what_a_cut_paste_left_open() -> None:
    reading = container_inspect.read_json('[\n  {"Id": "abc",\n   "Args": ["--model", "fac')
    assert reading.truncated
    assert reading.values[0].plain() == [{"Id": "abc", "Args": ["--model", "fac"]}]


def test_read_json_reads_a_fragment_that_starts_inside_an_object() -> None:
    text = '      "digest": "sha256:1",\n      "size": 3\n    }\n  },\n  {\n    "Id": "x",\n    "Image": "sha256:2"\n  }\n]'
    reading = container_inspect.read_json(text)
    assert [node.plain() for node in reading.values] == [
        {"digest": "sha256:1", "size": 3},
        {"Id": "x", "Image": "sha256:2"},
    ]
    assert reading.values[1].get("Image").line == 7


def test_read_json_tolerates_trailing_commas_and_comments() -> None:
    reading = container_inspect.read_json('{"a": [1, 2,], // two\n "b": {"c": true,},}')
    assert reading.values[0].plain() == {"a": [1, 2], "b": {"c": True}}


# ---------------------------------------------------------------------------------- looks_like


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir()))
def test_claims_every_inspect_fixture(name: str) -> None:
    assert container_inspect.looks_like(read(name))


OPENAI_BODY = json.dumps(
    {
        "model": "Qwen/Qwen3-8B",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 64,
        "stream": True,
    },
    indent=2,
)
KUBERNETES_POD = json.dumps(
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "spec": {
            "containers": [
                {
                    "name": "vllm",
                    "image": "vllm/vllm-openai:v0.9.1",
                    "args": ["--model", "x"],
                    "env": [{"name": "HF_TOKEN", "value": "x"}],
                }
            ]
        },
    },
    indent=2,
)
VLLM_LOG = (
    "INFO 05-01 10:00:03 [api_server.py:1044] args: Namespace(model='Qwen/Qwen2.5-7B-Instruct')\n"
    "ERROR 05-01 10:01:12 [core.py:396] EngineCore failed to start.\n"
)
NVIDIA_SMI = "| NVIDIA-SMI 570.133.20             Driver Version: 570.133.20     CUDA Version: 12.8     |\n"
LAUNCH = "docker run --gpus all --ipc=host vllm/vllm-openai:v0.9.1 --model Qwen/Qwen3-8B\n"
CONFIG_JSON = '{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "model_type": "llama"}'


@pytest.mark.parametrize("text", [OPENAI_BODY, KUBERNETES_POD, VLLM_LOG, NVIDIA_SMI, LAUNCH, CONFIG_JSON, ""])
def test_does_not_claim_other_formats(text: str) -> None:
    assert not container_inspect.looks_like(text)


# ----------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00\x01\xff binary \x00{",
        bytes(range(256)).decode("latin-1"),
        "[",
        "}}}]]]",
        '{"State": {"ExitCode": "137", "OOMKilled": "yes"}}',
        '{"HostConfig": {"ShmSize": "64m", "DeviceRequests": [{"Count": "all"}]}}',
        '{"Config": {"Env": "PATH=/bin", "Entrypoint": 5, "Cmd": {"a": 1}}}',
        "[" * 5000 + "]" * 5000,
        '"unterminated \\',
        OPENAI_BODY,
    ],
)
def test_odd_input_never_raises(text: str) -> None:
    result = container_inspect.parse(text, "odd.json")
    assert isinstance(result, ParseResult)
    assert result.problems == []


def test_wrong_format_is_reported_as_a_note() -> None:
    result = container_inspect.parse(OPENAI_BODY, "request.json")
    assert result.kind == container_inspect.KIND_UNKNOWN
    assert result.knobs == {} and result.facts == {}
    assert result.notes == ["no docker/podman inspect fields found"]


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["tini", "--", "vllm", "serve", "m", "--port", "8001"], {"arg.model": "m", "arg.port": "8001"}),
        (
            ["python3", "-u", "-m", "vllm.entrypoints.openai.api_server", "--model=m", "--trust-remote-code"],
            {"arg.model": "m", "arg.trust_remote_code": "true"},
        ),
        (
            ["/bin/bash", "-c", "export HF_HOME=/data; vllm serve m --max-model-len=4096 | tee /log"],
            {"arg.model": "m", "arg.max_model_len": "4096"},
        ),
        (["python3", "server.py", "--model", "m"], {}),
        (["nvidia-smi"], {}),
    ],
)
def test_vllm_arguments_only_when_the_entrypoint_is_vllm(argv: list[str], expected: dict) -> None:
    text = json.dumps({"Id": "a" * 64, "Path": argv[0], "Args": argv[1:], "State": {"Status": "exited"}})
    got = values(container_inspect.parse(text, "argv.json"))
    assert {name: value for name, value in got.items() if name.startswith("arg.")} == expected


def test_a_device_request_list_under_the_jq_command_and_a_sentence():
    text = (
        "$ docker inspect vllm-qwen | jq '.[0].HostConfig.DeviceRequests'\n"
        "the container has this:\n"
        '[\n  {\n    "Driver": "",\n    "Count": 0,\n    "DeviceIDs": ["0", "2"],\n'
        '    "Capabilities": [["gpu"]],\n    "Options": {}\n  }\n]\n'
    )
    assert container_inspect.looks_like(text)
    result = container_inspect.parse(text, "inspect.txt")
    assert result.knobs["container.gpus"].value == "0,2"
    assert result.knobs["container.gpus"].source.line == 7  # the DeviceIDs line


def _request(uuid: str) -> str:
    return (
        '{"Driver": "nvidia", "Count": 0, "DeviceIDs": ["' + uuid + '"], '
        '"Capabilities": [["gpu"]], "Options": null}'
    )


A, C = "GPU-1b2c3d4e-0000-1111-2222-333344445555", "GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff"


def test_one_device_request_per_gpu_selects_them_all() -> None:
    # A container created through the Docker API: one DeviceRequests entry per GPU UUID.
    text = '[{"Id": "' + "e" * 64 + '", "HostConfig": {"DeviceRequests": [' + _request(A) + ", "
    text += _request(C) + "]}}]"
    assert values(container_inspect.parse(text, "inspect.json"))["container.gpus"] == f"{A},{C}"


def test_device_requests_under_an_elided_parent_are_still_read() -> None:
    # The user cut the middle with a row of dots: HostConfig's opening line is gone, so its
    # DeviceRequests land inside the still-open State object.
    text = (
        '[\n  {\n    "Id": "' + "e" * 64 + '",\n    "Path": "python3",\n    "State": {\n'
        '      "Status": "running",\n\n.......................\n\n'
        '      "DeviceRequests": [\n        ' + _request(A) + "\n      ],\n"
    )
    result = container_inspect.parse(text, "inspect.json")
    assert values(result)["container.gpus"] == A
    assert values(result)["container.status"] == "running"


def test_a_request_without_devices_or_count_selects_nothing() -> None:
    # must-not: Count 0 and no DeviceIDs is no GPU selection
    request = '{"Driver": "nvidia", "Count": 0, "DeviceIDs": null, "Capabilities": [["gpu"]]}'
    text = '[{"Id": "' + "e" * 64 + '", "HostConfig": {"DeviceRequests": [' + request + "]}}]"
    assert "container.gpus" not in values(container_inspect.parse(text, "inspect.json"))
