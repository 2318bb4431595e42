"""nvidia-smi -L: one `GPU n: name (UUID: …)` line per GPU, MIG children indented under it.

>>> from vllm_triage.parsers.nvidia_smi import parse
>>> text = "GPU 0: NVIDIA H200 (UUID: GPU-1a52814d-8bff-4cda-5481-96ecb0001119)"
>>> facts = parse(text, "L.txt", "host").facts
>>> facts["host.gpu_count"].value, facts["host.gpu_models"].value
(1, ['NVIDIA H200'])
"""

from __future__ import annotations

import re
from typing import Any

from vllm_triage.parsers.base import PasteLine
from vllm_triage.parsers.nvidia_smi.common import (
    Out,
)

LIST_GPU = re.compile(r"^GPU (\d+): (.*)$")
LIST_MIG = re.compile(r"^\s*MIG\s+(\S+)\s+Device\s+(\d+):\s*\(UUID:\s*([^)\s]+)\)?")

_LIST_NAME = re.compile(r"^(.*?)\s*\(UUID:\s*([^)\s]+)\)?\s*$")


def read(lines: list[PasteLine], out: Out) -> None:
    gpus: list[tuple[str, str | None, int]] = []
    mig: list[dict[str, Any]] = []
    mig_line: int | None = None
    for line in lines:
        gpu = LIST_GPU.match(line.text.strip())
        if gpu:
            named = _LIST_NAME.match(gpu.group(2))
            if named:
                gpus.append((named.group(1), named.group(2), line.number))
            else:
                gpus.append((gpu.group(2).strip(), None, line.number))
                out.note(f"line {line.number}: no UUID on this -L line; it may be cut")
            continue
        child = LIST_MIG.match(line.text)
        if child and gpus:
            mig.append(
                {
                    "gpu": len(gpus) - 1,
                    "profile": child.group(1),
                    "device": int(child.group(2)),
                    "uuid": child.group(3),
                }
            )
            mig_line = mig_line or line.number
    if not gpus:
        return
    first = gpus[0][2]
    out.fact("gpu_count", len(gpus), first)
    out.fact("gpu_models", [name for name, _, _ in gpus], first)
    uuids = [uuid for _, uuid, _ in gpus]
    if any(uuids):
        out.fact("gpu_uuids", uuids, first)
    # MIG children prove MIG is on; their absence proves nothing (MIG on, no instances created).
    if mig:
        out.fact("mig_enabled", True, mig_line)
        out.fact("mig_devices", mig, mig_line)
