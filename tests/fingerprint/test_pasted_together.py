"""One file holding two artefacts, as an issue body does: the launch command and the nvidia-smi
screen, or the command and the server log it printed. Whichever the file is sniffed as, both are
read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fingerprint_helpers import run

SCREEN = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 570.124.06             Driver Version: 570.124.06     CUDA Version: 12.8     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA L40S                    On  |   00000000:41:00.0 Off |                    0 |
| N/A   34C    P8             33W /  350W |       1MiB /  46068MiB |      0%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+
"""
COMMAND = "CUDA_VISIBLE_DEVICES=0 vllm serve Qwen/Qwen3-8B --max-model-len 16384 --port 8001\n"


def test_command_then_screen(scratch: Callable[..., Path]) -> None:
    folder = scratch(
        None, {"issue.md": "I start the server with\n\n" + COMMAND + "\nand nvidia-smi says\n\n" + SCREEN}
    )
    found = run(folder / "issue.md")
    assert found.value("launcher") == "vllm_serve"
    assert found.value("arg.model") == "Qwen/Qwen3-8B"
    assert found.value("env.CUDA_VISIBLE_DEVICES") == "0"
    assert found.value("gpu.driver_version") == "570.124.06"
    assert found.value("gpu.gpu_models") == ["NVIDIA L40S"]


def test_screen_then_command(scratch: Callable[..., Path]) -> None:
    folder = scratch(None, {"issue.md": SCREEN + "\nlaunched with:\n" + COMMAND})
    found = run(folder / "issue.md")
    assert found.value("gpu.gpu_count") == 1
    assert found.value("arg.max_model_len") == "16384"


def test_a_screen_alone_gets_no_launch(scratch: Callable[..., Path]) -> None:
    folder = scratch(None, {"smi.txt": SCREEN})
    found = run(folder / "smi.txt")
    assert found.value("launcher") is None
    assert found.value("gpu.gpu_count") == 1


# A server log as `vllm serve` prints it (v0.8-style logger prefix), under the command that started it.
LOG = """\
INFO 05-12 09:41:07 [__init__.py:239] Automatically detected platform cuda.
INFO 05-12 09:41:09 [api_server.py:1043] vLLM API server version 0.8.5.post1
INFO 05-12 09:41:09 [api_server.py:1044] args: Namespace(subparser='serve', model_tag='Qwen/Qwen3-8B', \
host=None, port=8001, model='Qwen/Qwen3-8B', max_model_len=16384, tensor_parallel_size=1)
ERROR 05-12 09:41:31 [core.py:396] EngineCore failed to start.
"""


def test_prompted_command_then_its_log(scratch: Callable[..., Path]) -> None:
    for prompt in ("root@6f2c1d:/workspace# ", "***@***.***:/app# ", "$ ", ""):
        folder = scratch(
            None, {"issue.txt": prompt + "vllm serve Qwen/Qwen3-8B --max-model-len 16384 --port 8001\n" + LOG}
        )
        found = run(folder / "issue.txt")
        assert found.value("launcher") == "vllm_serve", prompt
        assert found.value("vllm.version") == "0.8.5.post1"
        assert found.value("arg.max_model_len") == 16384  # the log's value wins


def test_docker_run_then_its_log_gives_the_image(scratch: Callable[..., Path]) -> None:
    command = (
        "$ docker run --gpus all -p 8001:8001 vllm/vllm-openai:v0.8.5.post1 \\\n"
        "    --model Qwen/Qwen3-8B --max-model-len 16384 --port 8001\n"
    )
    folder = scratch(None, {"issue.txt": command + LOG})
    found = run(folder / "issue.txt")
    assert found.value("launcher") == "docker_run"
    assert found.value("image.ref") == "vllm/vllm-openai:v0.8.5.post1"
    assert found.value("arg.port") == 8001


def test_no_launch_read_from_prose_or_from_below_the_first_log_line(scratch: Callable[..., Path]) -> None:
    for text in (
        "The server crashed at start-up, log below.\n" + LOG,
        LOG + "$ vllm serve Qwen/Qwen3-8B --port 8001\n",  # a later command is not this log's launch
    ):
        folder = scratch(None, {"issue.txt": text})
        found = run(folder / "issue.txt")
        assert found.value("launcher") is None, text
        assert found.value("vllm.version") == "0.8.5.post1"
