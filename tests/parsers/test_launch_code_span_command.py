"""A whole launch command pasted as one markdown code span: GitHub renders a single pair of
backticks as inline code, so a one-liner often arrives as `` `sudo docker run … --model m` ``.
The backticks are paste debris, not shell command substitution."""

from __future__ import annotations

from launch_helpers import family, value

from vllm_triage.parsers.launch import looks_like, parse
from vllm_triage.parsers.launch.paste import prepare_lines


def test_one_line_sudo_docker_run_in_backticks() -> None:
    text = (
        "`sudo docker run --rm -it --gpus '\"device=2,3\"' -p 8080:8000 --shm-size 16g "
        "vllm/vllm-openai:v0.6.1 --model TheBloke/Mixtral-8x7B-AWQ --tensor-parallel-size 2 -q awq`\n"
    )
    assert looks_like(text) == "shell"
    result = parse(text, "issue.txt")
    assert value(result, "launcher") == "docker_run"
    assert value(result, "image.ref") == "vllm/vllm-openai:v0.6.1"
    assert family(result, "arg.") == {
        "model": "TheBloke/Mixtral-8x7B-AWQ",
        "tensor_parallel_size": "2",
        "quantization": "awq",
    }


def test_span_in_a_paragraph_with_a_prompt_inside_and_double_backticks() -> None:
    for text in (
        "I start it with\n`$ vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 16384`\n",
        "`` vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 16384 ``\n",
        "  `vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 16384`  \n",
    ):
        result = parse(text, "issue.txt")
        assert value(result, "launcher") == "vllm_serve", text
        assert family(result, "arg.") == {"model": "Qwen/Qwen2.5-7B-Instruct", "max_model_len": "16384"}


def test_span_over_several_continued_lines() -> None:
    text = (
        "`docker run --runtime nvidia --gpus all \\\n"
        "  -v ~/.cache/huggingface:/root/.cache/huggingface \\\n"
        "  vllm/vllm-openai:latest --model google/gemma-2-9b-it --dtype bfloat16`\n"
    )
    result = parse(text, "issue.txt")
    assert value(result, "image.ref") == "vllm/vllm-openai:latest"
    assert family(result, "arg.") == {"model": "google/gemma-2-9b-it", "dtype": "bfloat16"}


def test_command_substitutions_at_both_ends_are_kept() -> None:
    # the opening backtick is closed again on the same line: substitutions, not a wrapped command
    for text in (
        "`which python3` -m vllm.entrypoints.openai.api_server --model `cat /etc/model-name`",
        "`dirname $0`/serve.sh --model `cat m.txt`",
    ):
        lines, _ = prepare_lines(text + "\n")
        assert [line.text for line in lines] == [text]


def test_powershell_continuations_are_not_a_span() -> None:
    text = (
        "docker run --gpus all `\n"
        "  -p 8000:8000 `\n"
        "  vllm/vllm-openai:v0.8.5 --model microsoft/phi-4 --max-model-len 4096\n"
    )
    result = parse(text, "run.ps1")
    assert family(result, "arg.") == {"model": "microsoft/phi-4", "max_model_len": "4096"}


def test_a_span_not_closed_in_its_paragraph_is_left_alone() -> None:
    text = "`vllm serve org/m \\\n  --port 8000\n\nthen it fails`\n"
    lines, _ = prepare_lines(text)
    assert lines[0].text == "`vllm serve org/m \\"
    assert lines[-1].text == "then it fails`"


def test_a_command_in_triple_backticks_on_one_line_is_a_code_span_not_a_fence():
    # CommonMark: a backtick fence's info string holds no backtick, so ```…``` on one line is inline code
    text = (
        "```docker run --entrypoint /bin/bash -p 8000:8000 vllm-cpu:dev -c "
        '"export VLLM_CPU_OMP_THREADS_BIND=0-15 && vllm serve facebook/opt-125m --dtype bfloat16"```\n'
    )
    result = parse(text, "issue.md")
    assert result.knobs["launcher"].value == "docker_run"
    assert result.knobs["image.ref"].value == "vllm-cpu:dev"
    assert result.knobs["arg.model"].value == "facebook/opt-125m"
    assert result.knobs["env.VLLM_CPU_OMP_THREADS_BIND"].value == "0-15"
