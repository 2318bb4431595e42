"""What the hostile-input tests share: a small vLLM log of our own, and the real program in a
child process (where a regression would hang, a timeout turns it into a failure)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

# A start-up that dies of CUDA OOM while profiling: enough for triage to name a root error.
LOG_LINES = [
    "INFO 01-02 03:04:05 [__init__.py:241] Automatically detected platform cuda.",
    "(APIServer pid=7) INFO 01-02 03:04:07 [api_server.py:1805] vLLM API server version 0.10.1",
    "(EngineCore_0 pid=9) INFO 01-02 03:04:20 [gpu_model_runner.py:1953] Model loading took 14.99 GiB",
    "(EngineCore_0 pid=9) ERROR 01-02 03:04:31 [core.py:700] EngineCore failed to start.",
    "(EngineCore_0 pid=9) ERROR 01-02 03:04:31 [core.py:700] Traceback (most recent call last):",
    '(EngineCore_0 pid=9) ERROR 01-02 03:04:31 [core.py:700]   File "/usr/lib/python3/core.py", line 691, in run',
    "(EngineCore_0 pid=9) ERROR 01-02 03:04:31 [core.py:700]     engine_core = EngineCoreProc(*args, **kwargs)",
    "(EngineCore_0 pid=9) ERROR 01-02 03:04:31 [core.py:700] torch.OutOfMemoryError: CUDA out of memory. "
    "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.02 GiB is free.",
]
LOG = ("\n".join(LOG_LINES) + "\n").encode()
NVIDIA_SMI_L = b"GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0a1b2c3d-1111-2222-3333-444455556666)\n"

RunCli = Callable[..., Result]


def run_process(
    *args: str | Path, stdin: bytes | None = None, timeout: float = 60
) -> subprocess.CompletedProcess:
    """The real program in a child process: a hang becomes a test failure, not a stuck suite; a
    JSON payload it prints is validated against its published schema."""
    from schema_check import validate_output

    done = subprocess.run(
        [sys.executable, "-m", "vllm_triage", *(str(a) for a in args)],
        input=stdin,
        capture_output=True,
        timeout=timeout,
    )
    validate_output(done.stdout, f"stdout of `python -m vllm_triage {' '.join(map(str, args))[:120]}`")
    return done


def bundle(folder: Path, extra: dict[str, bytes] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vllm.log").write_bytes(LOG)
    for name, data in (extra or {}).items():
        (folder / name).write_bytes(data)
    return folder
