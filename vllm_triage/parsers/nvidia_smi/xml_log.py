"""nvidia-smi -q -x: the same facts as -q, from the XML log."""

from __future__ import annotations

import bisect
import re
from typing import Any

from vllm_triage.parsers.base import PasteLine
from vllm_triage.parsers.nvidia_smi.common import (
    Out,
    int_or_none,
)
from vllm_triage.parsers.nvidia_smi.query import QueryGpu, emit

_XML_TAG = re.compile(r"<(/?)([A-Za-z_][\w.-]*)([^>]*)>([^<]*)")


def read(lines: list[PasteLine], out: Out) -> None:
    joined = "\n".join(line.text for line in lines)
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line.text) + 1)
    head: dict[str, tuple[str, int]] = {}
    gpus: list[QueryGpu] = []
    stack: list[list[Any]] = []  # [tag, text, line, has_child]
    for match in _XML_TAG.finditer(joined):
        closing, tag, attrs, text = match.groups()
        number = lines[bisect.bisect_right(starts, match.start()) - 1].number
        if not closing:
            if stack:
                stack[-1][3] = True
            if tag == "gpu":
                gpus.append(QueryGpu(number))
            elif tag == "processes" and gpus:
                gpus[-1].processes, gpus[-1].processes_line = [], number
            elif tag == "process_info" and gpus and gpus[-1].processes is not None:
                gpus[-1].processes.append({"line": number})
            if attrs.rstrip().endswith("/"):
                continue
            stack.append([tag, text.strip(), number, False])
            continue
        while stack and stack[-1][0] != tag:
            stack.pop()
        if not stack:
            continue
        _, value, at, has_child = stack.pop()
        if not has_child:
            _xml_leaf(head, gpus, stack[-1][0] if stack else None, tag, value, at)
    emit(head, gpus, out, "-q -x")


_XML_HEAD = {
    "driver_version": "Driver Version",
    "cuda_version": "CUDA Version",
    "attached_gpus": "Attached GPUs",
}
_XML_PROCESS = {"pid": "pid", "type": "type", "process_name": "name", "used_memory": "used"}


def _xml_leaf(
    head: dict, gpus: list[QueryGpu], parent: str | None, tag: str, value: str, number: int
) -> None:
    if parent == "nvidia_smi_log" and tag in _XML_HEAD:
        head.setdefault(_XML_HEAD[tag], (value, number))
    elif not gpus:
        return
    elif parent == "gpu" and tag == "product_name":
        gpus[-1].name = value
    elif parent == "gpu" and tag == "uuid":
        gpus[-1].uuid = value
    elif parent == "mig_mode" and tag == "current_mig":
        gpus[-1].mig_mode, gpus[-1].mig_line = value, number
    elif parent == "process_info" and tag in _XML_PROCESS and gpus[-1].processes:
        entry = gpus[-1].processes[-1]
        entry[_XML_PROCESS[tag]] = int_or_none(value) if tag == "pid" else value
