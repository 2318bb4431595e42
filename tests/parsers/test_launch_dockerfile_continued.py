"""A Dockerfile whose ENTRYPOINT/CMD is continued with `\\` over several lines is judged as docker
reads it, the lines joined: the word that names vLLM (or hands it --model) may sit on any of them."""

from __future__ import annotations

from launch_helpers import family, value

from vllm_triage.parsers.launch import looks_like, parse


def test_exec_form_cmd_with_the_model_on_a_continued_line() -> None:
    text = (
        "FROM vllm/vllm-openai:v0.9.2\n"
        "ENV VLLM_LOGGING_LEVEL=INFO\n"
        'CMD ["--host", "0.0.0.0", \\\n'
        '     "--model", "microsoft/Phi-3.5-mini-instruct",\\\n'
        '     "--max-model-len", "4096"]\n'
    )
    assert looks_like(text) == "dockerfile"
    result = parse(text, "Dockerfile")
    assert value(result, "launcher") == "api_server_module"  # vllm-openai before v0.11
    assert value(result, "image.ref") == "vllm/vllm-openai:v0.9.2"
    assert family(result, "arg.") == {
        "host": "0.0.0.0",
        "model": "microsoft/Phi-3.5-mini-instruct",
        "max_model_len": "4096",
    }


def test_entrypoint_naming_vllm_on_its_second_line() -> None:
    text = (
        "FROM nvidia/cuda:12.8.1-devel-ubuntu22.04\n"
        "RUN pip install vllm==0.10.0\n"
        'ENTRYPOINT ["python3", "-m", \\\n'
        '  "vllm.entrypoints.openai.api_server", \\\n'
        '  "--port", "8080"]\n'
    )
    assert looks_like(text) == "dockerfile"
    result = parse(text, "Dockerfile")
    assert value(result, "launcher") == "api_server_module"
    assert value(result, "arg.port") == "8080"


def test_a_continued_cmd_of_another_server_is_no_launch() -> None:
    # vLLM is installed by a continued RUN, and the continued CMD runs something else
    text = (
        "FROM python:3.11-slim\n"
        "RUN pip install --no-cache-dir \\\n"
        "    vllm fastapi\n"
        'CMD ["uvicorn", "gateway:app", \\\n'
        '     "--port", "9000"]\n'
    )
    assert looks_like(text) is None
