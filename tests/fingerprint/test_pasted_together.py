"""One file holding two artefacts, as an issue body does: the launch command and the nvidia-smi
screen. Whichever the file is sniffed as, both are read."""

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
