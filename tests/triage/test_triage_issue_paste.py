"""An issue paste: collect_env output, then a short log. The file is sniffed as collect_env, yet
triage finds the log in it; and a CUDA error after only the args line is placed in cuda_init (the
engine banner is simply not in the paste), not in config."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from vllm_triage.cli import cli

PASTE = """Your current environment
Collecting environment information...
PyTorch version: 2.6.0+cu124
Is debug build: False
CUDA used to build PyTorch: 12.4
OS: Ubuntu 22.04.5 LTS (x86_64)
Python version: 3.12.9 (main, Feb  5 2025, 08:49:00) [GCC 11.4.0] (64-bit runtime)
Nvidia driver version: 570.86.15
vLLM Version: 0.8.3

🐛 Describe the bug
INFO 04-02 09:12:40 [api_server.py:1034] vLLM API server version 0.8.3
INFO 04-02 09:12:40 [api_server.py:1035] args: Namespace(model='Qwen/Qwen2.5-7B-Instruct', max_model_len=8192)
ERROR 04-02 09:13:02 [core.py:386] EngineCore hit an exception: Traceback (most recent call last):
ERROR 04-02 09:13:02 [core.py:386]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 377, in run_engine_core
ERROR 04-02 09:13:02 [core.py:386] RuntimeError: CUDA error: no kernel image is available for execution on the device
"""


def test_log_inside_a_collect_env_paste_is_triaged(tmp_path: Path) -> None:
    path = tmp_path / "issue.txt"
    path.write_text(PASTE, encoding="utf-8")
    result = CliRunner().invoke(cli, ["triage", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    import json

    data = json.loads(result.output)
    assert data["phase"] == "cuda_init"
    assert data["first_error"]["line"] == 16
    assert data["first_error"]["rule"] == "cuda.no_kernel_image"
    assert data["vllm_version"] == "0.8.3"


SHIPPED = """[vllm]: INFO 07-28 23:29:20 llm_engine.py:176] Initializing an LLM engine (v0.5.3.post1) with config: model='mistralai/Mistral-Large-Instruct-2407'
[vllm]: (VllmWorkerProcess pid=89) INFO 07-28 23:29:30 multiproc_worker_utils.py:215] Worker ready; awaiting tasks
[vllm]: (VllmWorkerProcess pid=89) ERROR 07-28 23:29:37 multiproc_worker_utils.py:226] Exception in worker VllmWorkerProcess while processing method init_device: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details), Traceback (most recent call last):
[vllm]: (VllmWorkerProcess pid=89) ERROR 07-28 23:29:37 multiproc_worker_utils.py:226]   File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py", line 132, in init_device
[vllm]: (VllmWorkerProcess pid=89) ERROR 07-28 23:29:37 multiproc_worker_utils.py:226]     init_worker_distributed_environment(self.parallel_config, self.rank,
[vllm]: (VllmWorkerProcess pid=89) ERROR 07-28 23:29:37 multiproc_worker_utils.py:226] RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)
[vllm]: ERROR 07-28 23:29:38 engine.py:160] RuntimeError: Engine process failed to start. See stack trace for the root cause.
"""


def test_shipper_tag_and_v0_worker_exception_line(tmp_path: Path) -> None:
    """A log shipper's `[vllm]: ` tag is stripped like any transport prefix, and V0's worker line
    that quotes the error (`Exception in worker … while processing method init_device: NCCL
    error: …`) opens the block, whose exception line is the first error (DESIGN §3)."""
    import json

    path = tmp_path / "deploy.log"
    path.write_text(SHIPPED, encoding="utf-8")
    result = CliRunner().invoke(cli, ["triage", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    first = data["first_error"]
    assert first["line"] == 6
    assert first["block"]["start"] == 3
    assert first["process"] == "VllmWorkerProcess"
    assert first["rule"] == "cuda.nccl_error"
    assert data["phase"] == "cuda_init"
    assert [c["line"] for c in data["consequences"]] == [7]


TEARDOWN = """(VllmWorker rank=1 pid=2445156) ERROR 05-10 11:02:03 [multiproc_executor.py:435] WorkerProc failed to start.
(VllmWorker rank=1 pid=2445156) ERROR 05-10 11:02:03 [multiproc_executor.py:435] Traceback (most recent call last):
(VllmWorker rank=1 pid=2445156) ERROR 05-10 11:02:03 [multiproc_executor.py:435]   File "/opt/venv/lib/python3.10/site-packages/vllm/v1/worker/gpu_worker.py", line 180, in load_model
(VllmWorker rank=1 pid=2445156) ERROR 05-10 11:02:03 [multiproc_executor.py:435] ValueError: could not broadcast input array from shape (4096,) into shape (2048,)
(VllmWorker rank=1 pid=2445156) Traceback (most recent call last):
(VllmWorker rank=1 pid=2445156)   File "/opt/venv/lib/python3.10/site-packages/vllm/v1/executor/multiproc_executor.py", line 381, in shutdown
(VllmWorker rank=1 pid=2445156)     destroy_model_parallel()
(VllmWorker rank=1 pid=2445156)   File "/opt/venv/lib/python3.10/site-packages/vllm/distributed/parallel_state.py", line 1085, in destroy_model_parallel
(VllmWorker rank=1 pid=2445156)     _TP.destroy()
(VllmWorker rank=1 pid=2445156)   File "/opt/venv/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 2168, in destroy_process_group
(VllmWorker rank=1 pid=2445156)     _shutdown_backend(pg)
(VllmWorker rank=1 pid=2445156) torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, unhandled cuda error
"""


def test_an_error_raised_while_tearing_down_is_a_consequence(tmp_path: Path) -> None:
    """An NCCL error raised inside destroy_process_group() happens because the process is already
    going down: the root is the worker's load_model error before it."""
    import json

    path = tmp_path / "worker.log"
    path.write_text(TEARDOWN, encoding="utf-8")
    data = json.loads(CliRunner().invoke(cli, ["triage", str(path), "--format", "json"]).output)
    assert data["first_error"]["line"] == 4
    assert data["phase"] == "weight_load"
    assert 12 in [c["line"] for c in data["consequences"]]

    alone = tmp_path / "teardown-only.log"
    alone.write_text("".join(TEARDOWN.splitlines(keepends=True)[4:]), encoding="utf-8")
    data = json.loads(CliRunner().invoke(cli, ["triage", str(alone), "--format", "json"]).output)
    assert data["first_error"]["kind"] == "consequence_only"
