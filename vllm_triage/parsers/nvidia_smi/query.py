"""nvidia-smi -q (and its -d subsets): `Key : value` lines, indented by section."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from vllm_triage.parsers.base import PasteLine
from vllm_triage.parsers.nvidia_smi.common import (
    BUS_ID,
    VERSION,
    Out,
    int_or_none,
    mig_from_modes,
)

Q_GPU = re.compile(r"^GPU\s+(" + BUS_ID.pattern + r")\s*$")
_Q_KEY = re.compile(r"^(\s*)([^:]*?\S)\s*:\s?(.*?)\s*$")


@dataclass
class QueryGpu:
    line: int
    name: str | None = None
    uuid: str | None = None
    mig_mode: str | None = None
    mig_line: int | None = None
    processes: list[dict[str, Any]] | None = None
    processes_line: int | None = None


def read(lines: list[PasteLine], out: Out) -> None:
    head: dict[str, tuple[str, int]] = {}
    gpus: list[QueryGpu] = []
    # Indentation says which section a key belongs to; when a paste lost it, the last header does.
    indented = any(line.text.startswith((" ", "\t")) and ":" in line.text for line in lines)
    stack: list[tuple[int, str]] = []
    for line in lines:
        text = line.text.rstrip()
        if not text.strip() or text.lstrip().startswith(("|", "+", "=", "<")):
            continue
        if Q_GPU.match(text.strip()):
            gpus.append(QueryGpu(line.number))
            stack = []
            continue
        indent = len(text) - len(text.lstrip())
        while stack and indented and stack[-1][0] >= indent:
            stack.pop()
        key = _Q_KEY.match(text)
        if not key:
            stack = stack if indented else []
            stack.append((indent, text.strip()))
            continue
        parent = stack[-1][1] if stack else None
        name, value = key.group(2).strip(), key.group(3)
        if not gpus:
            head.setdefault(name, (value, line.number))
        else:
            _query_key(gpus[-1], parent, name, value, line.number)
    emit(head, gpus, out, "-q")


def _query_key(gpu: QueryGpu, parent: str | None, name: str, value: str, number: int) -> None:
    if name == "Product Name":
        gpu.name = value
    elif name == "GPU UUID":
        gpu.uuid = value
    elif parent == "MIG Mode" and name == "Current":
        gpu.mig_mode, gpu.mig_line = value, number
    elif name == "Processes":  # "Processes : None" (the header form has no value and no colon)
        gpu.processes, gpu.processes_line = ([] if value in ("None", "") else None), number
    elif parent == "Processes" and name == "Process ID":
        if gpu.processes is None:
            gpu.processes = []
        gpu.processes_line = gpu.processes_line or number
        gpu.processes.append({"pid": int_or_none(value), "line": number})
    elif parent == "Processes" and gpu.processes:
        gpu.processes[-1][{"Type": "type", "Name": "name", "Used GPU Memory": "used"}.get(name, name)] = value


def emit(head: dict[str, tuple[str, int]], gpus: list[QueryGpu], out: Out, form: str) -> None:
    for key, fact in (("Driver Version", "driver_version"), ("CUDA Version", "cuda_version")):
        if key in head and VERSION.match(head[key][0]):
            out.fact(fact, head[key][0], head[key][1])
    attached = head.get("Attached GPUs")
    count = int_or_none(attached[0]) if attached else None
    if attached and count is not None:
        out.fact("gpu_count", count, attached[1])
    elif gpus:
        out.note(f"{form}: 'Attached GPUs' is not in the paste: gpu_count left out")
    if not gpus:
        return
    if count is not None and len(gpus) < count:
        out.note(f"{form}: {len(gpus)} of {count} attached GPUs are described (cut output or -i filter)")
    names = _prefix([gpu.name for gpu in gpus])
    if names:
        partial = (
            f"{len(names)} of {count or len(gpus)} GPUs described"
            if len(names) < (count or len(gpus))
            else None
        )
        out.fact("gpu_models", names, gpus[0].line, partial)
    uuids = _prefix([gpu.uuid for gpu in gpus])
    if uuids:
        out.fact("gpu_uuids", uuids, gpus[0].line)
    mig_from_modes(out, [(gpu.mig_mode, gpu.mig_line) for gpu in gpus if gpu.mig_mode], form)
    _emit_query_processes(gpus, out, form)


def _prefix(values: list[str | None]) -> list[str]:
    """The values up to the first missing one: a cut paste loses the last GPUs, not the first."""
    out: list[str] = []
    for value in values:
        if value is None:
            break
        out.append(value)
    return out


def _emit_query_processes(gpus: list[QueryGpu], out: Out, form: str) -> None:
    known = [gpu for gpu in gpus if gpu.processes is not None]
    if not known:
        return
    listed = [
        {
            "gpu": index,
            "pid": proc.get("pid"),
            "name": proc.get("name"),
            "used_mib": int_or_none(proc.get("used")),
            "type": proc.get("type"),
        }
        for index, gpu in enumerate(gpus)
        for proc in gpu.processes or []
    ]
    compute = [proc for proc in listed if "C" in (proc["type"] or "C")]
    note = None
    if len(known) < len(gpus):
        note = f"Processes read for {len(known)} of {len(gpus)} GPUs"
        out.note(f"{form}: {note}")
    first = next((gpu.processes_line for gpu in known if gpu.processes), known[0].processes_line)
    out.fact("gpu_processes", len(compute), first, note)
    out.fact("gpu_process_list", listed, first)
