r"""nvidia-smi --version and /proc/driver/nvidia/version.

>>> from vllm_triage.parsers.nvidia_smi import parse
>>> text = "NVIDIA-SMI version  : 610.43.02\nKMD version         : 610.43.02\nCUDA UMD version    : 13.3\n"
>>> facts = parse(text, "version.txt", "host").facts
>>> facts["host.driver_version"].value, facts["host.cuda_version"].value
('610.43.02', '13.3')
"""

from __future__ import annotations

import re

from vllm_triage.parsers.base import PasteLine
from vllm_triage.parsers.nvidia_smi.common import (
    VERSION,
    Out,
)

# 610+ prints `KMD version` (the kernel-mode driver) and `CUDA UMD version` (what the user-mode
# driver supports) where older drivers print `DRIVER version` and `CUDA Version`.
VERSION_LINE = re.compile(r"^(NVIDIA-SMI|NVML|DRIVER|KMD|CUDA UMD|CUDA) [Vv]ersion\s*:\s*(\S+)")
PROC_VERSION = re.compile(r"^NVRM version:\s*(.*)$")


def read(lines: list[PasteLine], out: Out) -> None:
    names = {
        "DRIVER": "driver_version",
        "KMD": "driver_version",
        "CUDA": "cuda_version",
        "CUDA UMD": "cuda_version",
        "NVML": "nvml_version",
    }
    for line in lines:
        match = VERSION_LINE.match(line.text.strip())
        if not match or match.group(1) not in names or not VERSION.match(match.group(2)):
            continue
        if not out.has(names[match.group(1)]):  # KMD and DRIVER name the same value
            out.fact(names[match.group(1)], match.group(2), line.number)


_NVRM = re.compile(r"Kernel Module(?:\s+for\s+\w+)?\s+(\d+\.\d+(?:\.\d+)?)")


def read_proc(lines: list[PasteLine], out: Out) -> None:
    for line in lines:
        match = PROC_VERSION.match(line.text.strip())
        if not match:
            continue
        version = _NVRM.search(match.group(1))
        if version:
            out.fact("driver_version", version.group(1), line.number, "loaded kernel module")
            # Blackwell and newer GPUs need the open kernel module; say which one is loaded.
            module = "open" if "Open Kernel Module" in match.group(1) else "proprietary"
            out.fact("driver_kernel_module", module, line.number)
        return
