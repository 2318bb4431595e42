"""One wrapper list for every argv reader: the same command, pasted as a shell line or recorded
by `docker inspect` as Path+Args, gives the same vLLM arguments through every wrapper form."""

from __future__ import annotations

import json
import shlex

import pytest

from vllm_triage.parsers import container_inspect
from vllm_triage.parsers.launch import parse

CASES = [
    (
        "apptainer exec --nv --cleanenv -B /scratch/llm:/models --env HF_HUB_OFFLINE=1 vllm-v0.9.1.sif "
        "vllm serve /models/Mistral-Small-24B -tp 2",
        "vllm_serve",
        {"model": "/models/Mistral-Small-24B", "tensor_parallel_size": "2"},
        {"HF_HUB_OFFLINE": "1"},
    ),
    (
        "singularity run --nv --bind /data:/data img.sif python3 -m vllm.entrypoints.openai.api_server "
        "--model /data/phi-4 --port 9000",
        "api_server_module",
        {"model": "/data/phi-4", "port": "9000"},
        {},
    ),
    (
        "hf jobs run -d --flavor l4x1 --timeout 1h -e VLLM_USE_V1=1 vllm/vllm-openai:latest "
        "vllm serve google/gemma-3-12b-it --max-model-len 16384",
        "vllm_serve",
        {"model": "google/gemma-3-12b-it", "max_model_len": "16384"},
        {"VLLM_USE_V1": "1"},
    ),
    (
        "systemd-run --unit=vllm-qwen -p MemoryMax=64G --scope -E HF_HOME=/srv/hf "
        "python3 -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-8B -tp 2",
        "api_server_module",
        {"model": "Qwen/Qwen3-8B", "tensor_parallel_size": "2"},
        {"HF_HOME": "/srv/hf"},
    ),
    (
        "srun --gres=gpu:4 -N 1 --ntasks-per-node 1 vllm serve meta-llama/Llama-3.1-70B -tp 4 --max-model-len 8192",
        "slurm",
        {"model": "meta-llama/Llama-3.1-70B", "tensor_parallel_size": "4", "max_model_len": "8192"},
        {},
    ),
    (
        "nohup env -u CUDA_VISIBLE_DEVICES VLLM_LOGGING_LEVEL=DEBUG numactl --cpunodebind=0 --membind=0 "
        "taskset -c 0-15 timeout 3600 stdbuf -oL vllm serve ibm/granite-8b --max-num-seqs 64",
        "vllm_serve",
        {"model": "ibm/granite-8b", "max_num_seqs": "64"},
        {"VLLM_LOGGING_LEVEL": "DEBUG"},
    ),
    (
        "sudo -E -u svc uv run --with vllm conda run -n serve accelerate launch --num_processes 1 "
        "-m vllm.entrypoints.openai.api_server --model mistralai/Mistral-7B-v0.3 --dtype half",
        "api_server_module",
        {"model": "mistralai/Mistral-7B-v0.3", "dtype": "half"},
        {},
    ),
    (
        "exec python -m vllm.entrypoints.cli.main serve google/gemma-3-4b-it --tensor-parallel-size 1",
        "vllm_serve",
        {"model": "google/gemma-3-4b-it", "tensor_parallel_size": "1"},
        {},
    ),
    (
        "timeout -s KILL 1h dumb-init -- vllm serve Qwen/Qwen2.5-1.5B --max-model-len=4096",
        "vllm_serve",
        {"model": "Qwen/Qwen2.5-1.5B", "max_model_len": "4096"},
        {},
    ),
]


def _args(knobs: dict) -> dict:
    return {name[4:]: value.value for name, value in knobs.items() if name.startswith("arg.")}


@pytest.mark.parametrize("line, launcher, args, env", CASES, ids=[c[0].split()[0] for c in CASES])
def test_a_pasted_command_through_wrappers(line: str, launcher: str, args: dict, env: dict) -> None:
    result = parse(line + "\n", "run.sh")
    assert result.knobs["launcher"].value == launcher
    assert _args(result.knobs) == args
    assert {name[4:]: v.value for name, v in result.knobs.items() if name.startswith("env.")} == env


@pytest.mark.parametrize("line, launcher, args, env", CASES, ids=[c[0].split()[0] for c in CASES])
def test_the_same_argv_recorded_by_docker_inspect(line: str, launcher: str, args: dict, env: dict) -> None:
    argv = shlex.split(line)
    text = json.dumps({"Id": "b" * 64, "Path": argv[0], "Args": argv[1:], "State": {"Status": "exited"}})
    assert _args(container_inspect.parse(text, "inspect.json").knobs) == args


def test_sh_dash_c_with_a_double_dash_as_pods_write_it() -> None:
    text = json.dumps({"Path": "/bin/sh", "Args": ["-c", "--", "pip list | grep vllm; vllm serve m -tp 2"]})
    assert _args(container_inspect.parse(text, "inspect.json").knobs) == {
        "model": "m",
        "tensor_parallel_size": "2",
    }


def test_a_wrapper_alone_is_no_launch() -> None:
    assert parse("nohup python3 train.py --model m &\n", "x.sh").knobs == {}
    assert parse("systemd-run --scope nvidia-smi\n", "x.sh").knobs == {}


def test_argv_reader_docstring_example_runs():
    import doctest

    from vllm_triage.parsers.launch import argv

    outcome = doctest.testmod(argv)
    assert outcome.attempted >= 2 and outcome.failed == 0


def test_an_unknown_command_before_vllm_is_no_wrapper():
    # only documented runners are skipped: `echo vllm serve x` prints, it does not launch
    assert "launcher" not in parse("echo vllm serve Qwen/Qwen3-8B\n", "paste.txt").knobs
    assert "launcher" not in parse("apptainer build vllm.sif docker://vllm/vllm-openai\n", "p.txt").knobs
