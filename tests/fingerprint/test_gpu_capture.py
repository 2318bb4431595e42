"""The real captures of an H200 host in ../shared/reference/gpu-capture/ (read only; skipped where
that folder is not present)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fingerprint_helpers import finding, run

CAPTURE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "gpu-capture"
pytestmark = pytest.mark.skipif(not CAPTURE.is_dir(), reason="../shared/reference/gpu-capture not present")


def test_h200_host_facts() -> None:
    found = run(CAPTURE / "nvidia-smi.txt")
    assert found.value("gpu.driver_version") == "580.159.04"
    assert found.value("gpu.cuda_version") == "13.0"
    assert found.value("gpu.gpu_count") == 2
    assert found.value("gpu.gpu_models") == ["NVIDIA H200", "NVIDIA H200"]
    assert found.value("gpu.gpu_memory_total_mib") == [143771, 143771]


def test_busy_gpu_0_is_occupied() -> None:
    found = run(CAPTURE / "nvidia-smi-busy.txt")
    assert found.value("gpu.gpu_memory_used_mib")[0] == 41487
    assert found.value("gpu.gpu_processes") == 1
    check = finding(found, "gpu-occupied")
    assert "GPU 0: 41487 MiB" in check.message and "1 process" in check.message
    assert "GPU 1" not in check.message


def test_whole_capture_folder() -> None:
    found = run(CAPTURE)
    assert found.value("gpu.driver_version") == "580.159.04"
    assert found.value("cuda.build") == "13.0"  # torch 2.11.0+cu130 from collect_env
    busy = [f for f in found.findings if f.id == "gpu-occupied" and "41487 MiB" in f.message]
    assert busy and any(Path(e.file).name == "nvidia-smi-busy.txt" for e in busy[0].evidence)
    assert "driver-too-old-for-cuda" not in [f.id for f in found.findings]
