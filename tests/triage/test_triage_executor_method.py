"""V0's executors name the worker method a failure came out of (multiproc_worker_utils.py: `Exception
in worker … while processing method X.`; the Ray wrapper in worker_base.py: `Error executing method
'X'. This might cause deadlock …`). A paste that keeps that line but not the worker's frames is
placed by the method: it is the start-up step that ran (vllm#14095, vllm#10151, vllm#17363)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage.conftest import TriageJson
from tests.triage.triage_helpers import write_log

MP = "(VllmWorkerProcess pid=6242) ERROR 10-15 14:51:47 multiproc_worker_utils.py:226]"
RAY = "(RayWorkerWrapper pid=28671, ip=10.1.2.3) ERROR 02-13 15:44:24 worker_base.py:574]"

# Before 0.6 the multiproc headline carried the error after the method name, on one line.
INLINE_OOM = (
    f"{MP} Exception in worker VllmWorkerProcess while processing method load_model: CUDA out of "
    "memory. Tried to allocate 32.00 MiB. GPU 0 has a total capacity of 23.68 GiB of which 29.81 MiB "
    "is free.\n"
    f'{MP}   File "/opt/venv/lib/python3.11/site-packages/vllm/executor/multiproc_worker_utils.py", '
    "line 223, in _run_worker_process\n"
    f"{MP}     output = executor(*args, **kwargs)\n"
)


def _ray(method: str, error: str) -> str:
    return (
        f"{RAY} Error executing method {method}. This might cause deadlock in distributed execution.\n"
        f"{RAY} Traceback (most recent call last):\n"
        f'{RAY}   File "/opt/venv/lib/python3.10/site-packages/torch/cuda/__init__.py", line 302, in _lazy_init\n'
        f"{RAY}     torch._C._cuda_init()\n"
        f"{RAY} {error}\n"
    )


def test_the_method_in_the_multiproc_headline_places_an_oom(tmp_path: Path, triage_json: TriageJson) -> None:
    data = triage_json(write_log(tmp_path, INLINE_OOM))
    assert data["phase"] == "weight_load"  # not the OOM rule's own engine_reserve
    assert "load_model()" in data["phase_reason"]
    assert "CUDA out of memory" in data["first_error"]["text"]


@pytest.mark.parametrize(
    ("method", "phase"),
    [
        ("'init_device'", "cuda_init"),
        ("'load_model'", "weight_load"),
        ("determine_num_available_blocks", "engine_reserve"),  # unquoted before 0.7
    ],
)
def test_the_ray_wrappers_method_is_the_step(
    tmp_path: Path, triage_json: TriageJson, method: str, phase: str
) -> None:
    data = triage_json(write_log(tmp_path, _ray(method, "RuntimeError: CUDA error: out of memory")))
    assert data["phase"] == phase
    assert data["first_error"]["message"] == "RuntimeError: CUDA error: out of memory"


def test_a_deeper_vllm_frame_says_more_than_the_method(tmp_path: Path, triage_json: TriageJson) -> None:
    """The method is the outermost step: the worker's own frames, when pasted, decide."""
    log = _ray("'determine_num_available_blocks'", "RuntimeError: CUDA error: out of memory").replace(
        f'{RAY}   File "/opt/venv/lib/python3.10/site-packages/torch/cuda/__init__.py"',
        f'{RAY}   File "/opt/venv/lib/python3.10/site-packages/vllm/worker/worker.py", line 190, '
        f"in load_model\n{RAY}     self.model_runner.load_model()\n"
        f'{RAY}   File "/opt/venv/lib/python3.10/site-packages/torch/cuda/__init__.py"',
    )
    assert triage_json(write_log(tmp_path, log))["phase"] == "weight_load"


def test_an_unknown_method_name_gives_no_verdict(tmp_path: Path, triage_json: TriageJson) -> None:
    data = triage_json(write_log(tmp_path, _ray("'frobnicate'", "RuntimeError: CUDA error: out of memory")))
    assert "frobnicate" not in data["phase_reason"]
