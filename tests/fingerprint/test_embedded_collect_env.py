"""An issue paste often puts the collect_env output above the log in one file: both are read."""

from __future__ import annotations

from pathlib import Path

from vllm_triage.pipeline import fingerprint

PASTE = """Collecting environment information...
PyTorch version: 2.5.1+cu124
Is debug build: False
CUDA used to build PyTorch: 12.4
OS: Ubuntu 22.04.4 LTS (x86_64)
Python version: 3.12.3 (main, Nov  6 2024, 18:32:19) [GCC 11.4.0] (64-bit runtime)
Nvidia driver version: 550.54.15
vLLM Version: 0.7.3

INFO 02-20 16:42:42 api_server.py:712] vLLM API server version 0.7.3
INFO 02-20 16:42:42 api_server.py:713] args: Namespace(model='Qwen/Qwen2.5-7B-Instruct', tensor_parallel_size=1)
INFO 02-20 16:42:50 llm_engine.py:234] Initializing a V0 LLM engine (v0.7.3) with config: model='Qwen/Qwen2.5-7B-Instruct'
INFO 02-20 16:42:51 cuda.py:230] Using Flash Attention backend.
INFO 02-20 16:42:52 model_runner.py:1110] Starting to load model Qwen/Qwen2.5-7B-Instruct...
ERROR 02-20 16:43:12 engine.py:389] CUDA error: no kernel image is available for execution on the device
ERROR 02-20 16:43:12 engine.py:389] Traceback (most recent call last):
ERROR 02-20 16:43:12 engine.py:389]   File "/usr/lib/python3/dist-packages/vllm/engine/multiprocessing/engine.py", line 380, in run_mp_engine
ERROR 02-20 16:43:12 engine.py:389] RuntimeError: CUDA error: no kernel image is available for execution on the device
"""


def test_collect_env_above_a_log_is_read_with_the_log(tmp_path: Path) -> None:
    path = tmp_path / "issue-paste.txt"
    path.write_text(PASTE, encoding="utf-8")
    found = fingerprint([str(path)])
    assert found.facts["torch.version"].value == "2.5.1+cu124"
    assert found.facts["cuda.build"].value == "12.4"
    assert found.facts["vllm.version"].value == "0.7.3"
    assert found.knobs["arg.model"].value == "Qwen/Qwen2.5-7B-Instruct"
    assert found.facts["torch.version"].source.line == 2
