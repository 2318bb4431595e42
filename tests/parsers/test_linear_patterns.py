"""Fuzz findings (benchmarks/fuzz.py, seed 7): patterns that re-scanned a run of characters from
each of its positions. Each must stay linear: ten times the input costs about ten times the time."""

from __future__ import annotations

import time
from collections.abc import Callable

from vllm_triage.parsers import collect_env, request
from vllm_triage.parsers.launch import looks_like as launch_looks_like
from vllm_triage.parsers.nvidia_smi import parse as parse_smi


def _linear(run: Callable[[int], object]) -> None:
    def cost(n: int) -> float:
        started = time.process_time()
        run(n)
        return time.process_time() - started

    small, big = cost(3_000), cost(30_000)
    assert big < 25 * small + 0.5, (small, big)  # quadratic would be about 100 times


def test_a_prompt_made_of_user_at_host_repeats_is_linear() -> None:
    # `root@gpu-n` pasted over and over on one line: the prompt's user@host part was ambiguous.
    _linear(lambda n: request.parse("root@gpu-n" * n + "$ curl http://localhost:8000/v1/models\n", "r.txt"))


def test_a_package_line_with_a_long_whitespace_run_is_linear() -> None:
    text = "Versions of relevant libraries:\n[pip3] nvidia-nccl-cu12==2.26.2" + "\t" * 1 + "x"
    _linear(lambda n: collect_env.parse(text.replace("\t", "\t" * n), "env.txt"))


def test_query_and_table_cells_with_long_whitespace_runs_are_linear() -> None:
    _linear(lambda n: parse_smi("    Product Name" + " " * n + "x\n" + "|   0" + " " * n + "y\n", "smi.txt"))


def test_a_dockerfile_cmd_with_a_long_blank_run_is_linear() -> None:
    # `CMD[ \t]+.*vllm` could split the run between `+` and `.*` in every way when no vLLM follows
    _linear(lambda n: launch_looks_like("FROM python:3.12\nCMD" + " " * n + "x \\\n"))


def test_a_gpu_line_with_a_long_blank_run_before_more_text_is_linear() -> None:
    # seed 13: `GPU 5: NVIDIA H20` then 13,000 spaces then a pasted curl's tail, under the key
    head = "GPU models and configuration : \nGPU 0: NVIDIA H20\nGPU 5: NVIDIA H20"
    _linear(
        lambda n: collect_env.parse(
            head + " " * n + '9f8e7d6c5b4a" \\\n\nNvidia driver version : 570.1\n', "e.txt"
        )
    )


def test_gpu_models_keep_their_names_without_the_uuid() -> None:
    text = (
        "GPU models and configuration : \nGPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5f2c)\n"
        "GPU 1: NVIDIA H100 80GB HBM3   \n\nNvidia driver version : 570.124.06\n"
    )
    facts = collect_env.parse(text, "env.txt").facts
    models = next(v for k, v in facts.items() if k.endswith("gpu_models"))
    assert models.value == ["NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"]


def test_a_yaml_line_with_a_long_blank_run_and_a_tab_is_linear() -> None:
    # seed 1, index 91: a compose file whose line holds a run of blanks with a tab in it and no
    # comment after; the tab-before-comment pattern retried every position of the run.
    from vllm_triage.parsers.launch import parse

    head = 'version: "3.9"\nservices:\n  vllm:\n    image: vllm/vllm-openai\n    command: a'
    _linear(lambda n: parse(head + " " * n + "\t" + " " * n + "b # x\n", "compose.yml"))


def test_a_line_number_gutter_on_blank_or_quoted_runs_is_linear() -> None:
    from vllm_triage.ingest import gutter

    _linear(lambda n: gutter.learn([" " * n + "x", "> " * n + "y", ">" + " " * n + "z"] * 2))


def test_a_yaml_line_full_of_angle_brackets_is_linear() -> None:
    # the here-document opener (`cat <<EOF`) is looked for on every unindented line
    from vllm_triage.parsers.launch import parse

    head = "services:\n  vllm:\n    image: vllm/vllm-openai\nx"
    _linear(lambda n: parse(head + "<" * n + " <<- " + "'" * n + "\n", "compose.yml"))


def test_a_rocm_gpu_models_value_with_long_runs_is_linear() -> None:
    _linear(
        lambda n: collect_env.parse(
            "GPU models and configuration: " + "A " * n + "(gfx" + "9" * n + "\n", "e.txt"
        )
    )


def test_a_relayed_head_of_long_word_and_blank_runs_is_linear() -> None:
    # the relay head (prefixes.RELAY) is up to three words before a vLLM record: a line of many
    # words, tabs and pid-like text with no record after must not make it try every split
    from vllm_triage.ingest.prefixes import split_line

    _linear(lambda n: split_line("[a] " * n + "\t" * n + "(x pid=1" * n + " INFO 01-01 00:00:0"))
