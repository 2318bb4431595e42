"""env files and `env` output → knobs env.<NAME> with the line they were set on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_triage.parsers import env_file

FIXTURES = Path(__file__).parent.parent / "fixtures" / "env"


def read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def values(result) -> dict:
    return {name: sourced.value for name, sourced in result.knobs.items()}


# ------------------------------------------------------------------------------------ looks_like


@pytest.mark.parametrize(
    "name",
    [
        "vllm_service.env",
        "docker.env",
        "printenv_container.txt",
        "export_p.txt",
        "pasted_env_grep.md",
        "crlf.env",
    ],
)
def test_claims_env_files_and_env_output(name: str) -> None:
    assert env_file.looks_like(read(name))


@pytest.mark.parametrize(
    "name",
    [
        "launch_with_env_prefix.sh",
        "exports_then_command.sh",
        "one_line_prefix.txt",
        "compose_environment.yaml",
    ],
)
def test_does_not_claim_launch_commands_or_yaml(name: str) -> None:
    assert not env_file.looks_like(read(name))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\n",
        "(APIServer pid=1) INFO 03-02 10:11:12 [utils.py:326] non-default args: {'model': 'x'}\n",
        "INFO 08-06 12:34:56 api_server.py:528] vLLM API server version 0.6.3\n",
        json.dumps({"model": "m", "messages": []}),
        '[{"Id": "abc", "Config": {"Env": ["A=1"]}}]',
        "NCCL_DEBUG=INFO torchrun --nproc-per-node 2 bench.py\n",
        'MODEL="Qwen/Qwen3-8B" ./serve.sh --port 8000\n',
        "\x00\x01\x02binary\xff" * 20,
        "+-----------------------------------------------------------------------------------------+\n"
        "| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: 13.0     |\n",
    ],
)
def test_does_not_claim_other_formats(text: str) -> None:
    assert not env_file.looks_like(text)


# ----------------------------------------------------------------------------------------- parse


def test_shell_style_env_file() -> None:
    result = env_file.parse(read("vllm_service.env"), "vllm_service.env")
    got = values(result)
    assert result.kind == env_file.KIND_FILE
    assert got["env.HF_HOME"] == "/mnt/cache/huggingface"
    assert got["env.VLLM_LOGGING_LEVEL"] == "DEBUG"  # inline comment dropped
    assert got["env.CUDA_VISIBLE_DEVICES"] == "0,1,2,3"  # single quotes stripped
    assert got["env.NCCL_SOCKET_IFNAME"] == "eth0"
    assert got["env.PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert got["env.HTTP_PROXY"] == ""  # `KEY=` is an empty value, not a missing one
    assert got["env.VLLM_WORKER_MULTIPROC_METHOD"] == "spawn"
    assert got["env.VLLM_EXTRA_NOTE"] == "first line\nsecond line"


def test_provenance_is_the_assignment_line() -> None:
    result = env_file.parse(read("vllm_service.env"), "vllm_service.env")
    assert result.knobs["env.HF_HOME"].source.file == "vllm_service.env"
    assert result.knobs["env.HF_HOME"].source.line == 4
    assert result.knobs["env.VLLM_EXTRA_NOTE"].source.line == 12
    assert result.knobs["env.HTTP_PROXY"].source.line == 14


def test_last_assignment_wins_and_is_noted() -> None:
    result = env_file.parse(read("vllm_service.env"), "vllm_service.env")
    assert result.knobs["env.NCCL_DEBUG"].value == "WARN"
    assert result.knobs["env.NCCL_DEBUG"].source.line == 18
    assert any("NCCL_DEBUG" in note and "lines 8 and 18" in note for note in result.notes)


def test_secret_values_are_recorded_but_never_in_notes() -> None:
    text = read("vllm_service.env") + "\nHF_TOKEN=hf_SECONDfakeTOKEN\n"
    result = env_file.parse(text, "vllm_service.env")
    assert result.knobs["env.HF_TOKEN"].value == "hf_SECONDfakeTOKEN"
    assert result.knobs["env.VLLM_API_KEY"].value == "sk-local-FAKE-4f9a"
    assert "redact" in (result.knobs["env.HF_TOKEN"].note or "")
    joined = "\n".join(result.notes)
    for secret in ("hf_FAKEexampleTOKEN0123456789", "hf_SECONDfakeTOKEN", "sk-local-FAKE-4f9a"):
        assert secret not in joined
    assert "HF_TOKEN" in joined  # the duplicate is reported by name only


def test_docker_env_file_pass_through_and_literal_quotes_note() -> None:
    result = env_file.parse(read("docker.env"), "docker.env")
    got = values(result)
    assert got["env.VLLM_USE_V1"] == "1"
    assert got["env.VLLM_ATTENTION_BACKEND"] == "FLASHINFER"
    assert got["env.HUGGING_FACE_HUB_TOKEN"] is None
    assert result.knobs["env.HUGGING_FACE_HUB_TOKEN"].source.line == 4
    assert any("HUGGING_FACE_HUB_TOKEN" in n and "host" in n for n in result.notes)
    assert got["env.TRANSFORMERS_OFFLINE"] == "1"
    assert any("--env-file" in n and "quotes" in n for n in result.notes)


def test_env_output_keeps_raw_values_and_multiline_values() -> None:
    result = env_file.parse(read("printenv_container.txt"), "env.txt")
    got = values(result)
    assert result.kind == env_file.KIND_OUTPUT
    assert got["env.NVIDIA_REQUIRE_CUDA"].startswith("cuda>=12.8 brand=unknown,driver>=470")
    assert got["env.LESSOPEN"] == "| /usr/bin/lesspipe %s"
    assert got["env.MOTD"] == "Welcome to the inference node.\nMaintenance window: Sundays."
    assert got["env._"] == "/usr/bin/env"
    assert result.knobs["env.HOME"].source.line == 13
    assert not any("not a NAME=value" in n for n in result.notes)


def test_export_p_output() -> None:
    result = env_file.parse(read("export_p.txt"), "export.txt")
    got = values(result)
    assert got["env.CUDA_HOME"] == "/usr/local/cuda"
    assert got["env.VLLM_HOST_IP"] == "10.20.0.14"
    assert got["env.NCCL_IB_DISABLE"] == "1"


def test_pasted_env_with_prompt_quote_and_fence() -> None:
    result = env_file.parse(read("pasted_env_grep.md"), "paste.md")
    got = values(result)
    assert got == {
        "env.VLLM_USAGE_SOURCE": "production-docker-image",
        "env.NCCL_CUMEM_ENABLE": "0",
        "env.CUDA_VISIBLE_DEVICES": "1",
        "env.VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    }
    assert result.knobs["env.CUDA_VISIBLE_DEVICES"].source.line == 7


def test_crlf_line_endings() -> None:
    result = env_file.parse(read("crlf.env"), "crlf.env")
    assert values(result) == {"env.HF_HOME": "/data/hf", "env.VLLM_PORT": "8001"}


def test_escaped_double_quotes() -> None:
    result = env_file.parse('VLLM_LOGGING_PREFIX="[node \\"a\\"] "\n', "x.env")
    assert result.knobs["env.VLLM_LOGGING_PREFIX"].value == '[node "a"] '


@pytest.mark.parametrize(
    "text",
    ["", "\x00\x01\x02\xff" * 50, "{not: json", "just some prose\nwith no assignments\n", "'unterminated=\n"],
)
def test_bad_input_gives_notes_not_exceptions(text: str) -> None:
    result = env_file.parse(text, "bad.env")
    assert result.knobs == {}
    assert result.notes


def test_unterminated_quote_reads_to_the_end() -> None:
    result = env_file.parse('A=1\nB="never closed\nC=3\n', "x.env")
    assert result.knobs["env.A"].value == "1"
    assert result.knobs["env.B"].value == "never closed\nC=3"


def test_inline_comment_cut_in_linear_time() -> None:
    # Fuzz finding: the unquoted value was split on `\s+#`, which rescans a run of whitespace
    # from every one of its characters: 110 KB of tabs in one value took over 10 s.
    import time

    result = env_file.parse("NCCL_DEBUG=INFO   # for the repro\nA=x#y\nB=1\t#two\n", "vllm.env")
    assert {k: v.value for k, v in result.knobs.items()} == {
        "env.NCCL_DEBUG": "INFO",
        "env.A": "x#y",
        "env.B": "1",
    }
    started = time.process_time()
    long_value = env_file.parse("VLLM_LOGGING_LEVEL=DEBUG" + "\t" * 200_000 + "x\n", "vllm.env")
    assert long_value.knobs["env.VLLM_LOGGING_LEVEL"].value.endswith("x")
    assert time.process_time() - started < 2.0


def test_unclosed_quote_over_many_lines_is_linear() -> None:
    # Fuzz finding: a quoted value was rescanned from its start for every line added to it, so a
    # quote never closed in a long file took over 10 s.
    import time

    text = 'A="one\nline \\"two\\"\nend" \nB=2\nD="never\nE=5\n'
    assert {k: v.value for k, v in env_file.parse(text, "x.env").knobs.items()} == {
        "env.A": 'one\nline "two"\nend',
        "env.B": "2",
        "env.D": "never\nE=5",
    }
    started = time.process_time()
    assert (
        env_file.parse('VLLM_X="open\n' + "x\n" * 30_000, "x.env")
        .knobs["env.VLLM_X"]
        .value.startswith("open")
    )
    assert time.process_time() - started < 2.0
