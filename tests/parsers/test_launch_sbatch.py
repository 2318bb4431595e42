"""Slurm batch scripts: #SBATCH directives plus the srun / vllm line inside."""

from __future__ import annotations

from launch_helpers import family, line, read, value

from vllm_triage.parsers.launch import looks_like, parse


def test_sbatch_script_with_gres_nodes_exports_and_srun():
    result = read("sbatch-srun-vllm.sh")
    assert result.kind == "launch_command.sbatch"
    assert value(result, "launcher") == "slurm"
    assert "line 15: vllm serve started by Slurm (srun)" in result.notes
    assert family(result, "arg.") == {
        "model": "meta-llama/Llama-3.1-70B-Instruct",
        "tensor_parallel_size": "4",
        "max_model_len": "32768",
        "gpu_memory_utilization": "0.9",
        "port": "8123",
    }
    assert value(result, "container.gpus") == "4" and line(result, "container.gpus") == 6
    assert family(result, "slurm.")["gres"] == "gpu:h100:4"
    assert family(result, "slurm.")["nodes"] == "1"
    assert family(result, "env.") == {
        "HF_HOME": "/scratch/$USER/hf",
        "NCCL_DEBUG": "INFO",
        "VLLM_LOGGING_LEVEL": "DEBUG",  # from #SBATCH --export
    }
    assert "started through `srun`" in result.notes


def test_gpus_per_node_and_short_options_and_a_python_launch():
    text = (
        "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --gpus-per-node=a100:8\n#SBATCH -p batch\n"
        "srun python3 -m vllm.entrypoints.openai.api_server --model /models/dsv3 "
        "--tensor-parallel-size 8 --pipeline-parallel-size 2\n"
    )
    assert looks_like(text) == "sbatch"
    result = parse(text, "job.sbatch")
    assert value(result, "launcher") == "slurm"
    assert "line 5: python -m vllm.entrypoints.openai.api_server started by Slurm (srun)" in result.notes
    assert value(result, "container.gpus") == "8"
    assert family(result, "slurm.") == {"nodes": "2", "gpus_per_node": "a100:8", "partition": "batch"}
    assert family(result, "arg.")["pipeline_parallel_size"] == "2"


def test_a_batch_script_without_srun_is_started_by_slurm_too():
    text = "#!/bin/bash\n#SBATCH --gres=gpu:a6000:1\nsource venv/bin/activate\nvllm serve Qwen/Qwen3-4B --port 8001\n"
    result = parse(text, "job.sh")
    assert value(result, "launcher") == "slurm"
    assert "the job script starts vLLM as vllm_serve" in result.notes
    assert family(result, "arg.") == {"model": "Qwen/Qwen3-4B", "port": "8001"}


def test_a_batch_script_that_starts_no_vllm_is_not_a_launch():
    assert looks_like("#!/bin/bash\n#SBATCH --gres=gpu:1\nsrun python train.py --epochs 3\n") is None


def test_an_srun_line_without_a_batch_script_is_started_by_slurm():
    text = (
        "srun -p gpu --gres=gpu:2 -n1 --ntasks-per-node=1 --job-name=judge \\\n"
        "python -m vllm.entrypoints.openai.api_server --model /data/qwen-14b \\\n"
        "    --tensor-parallel-size 2 --port 9001\n"
    )
    result = parse(text, "run.sh")
    assert value(result, "launcher") == "slurm"
    assert family(result, "arg.") == {"model": "/data/qwen-14b", "tensor_parallel_size": "2", "port": "9001"}
    assert any(
        "python -m vllm.entrypoints.openai.api_server started by Slurm (srun)" in n for n in result.notes
    )


def test_a_container_run_by_a_batch_script_stays_a_container_launch():
    text = (
        "#!/bin/bash\n#SBATCH --gres=gpu:1\n"
        "docker run --gpus all vllm/vllm-openai:v0.9.0 --model Qwen/Qwen3-8B\n"
    )
    assert value(parse(text, "job.sh"), "launcher") == "docker_run"
