r"""nvidia-smi -q (and its -d subsets): `Key : value` lines, indented by section.

A paste may be a piece from the middle (no `==NVSMI LOG==`, no `Attached GPUs`, no `GPU 0000…`
line): the keys it holds are read all the same. A GPU-level key (`Product Name`, `GPU UUID`, `FB
Memory Usage`) before any GPU header opens an implicit GPU; the count is then left out, because
a fragment does not say how many GPUs there are.

>>> from vllm_triage.parsers.nvidia_smi import parse
>>> text = (
...     "    Product Name                          : NVIDIA H100 80GB HBM3\n"
...     "    FB Memory Usage\n"
...     "        Total                             : 81559 MiB\n"
...     "        Used                              : 73412 MiB\n"
... )
>>> facts = parse(text, "q.txt", "host").facts
>>> facts["host.gpu_models"].value, facts["host.gpu_memory_total_mib"].value, "host.gpu_count" in facts
(['NVIDIA H100 80GB HBM3'], [81559], False)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from vllm_triage.parsers.base import PasteLine
from vllm_triage.parsers.nvidia_smi.common import (
    BUS_ID,
    Out,
    int_or_none,
    mig_from_modes,
    unavailable,
)

Q_GPU = re.compile(r"^GPU\s+(" + BUS_ID.pattern + r")\s*$")
# Greedy parts that end on a non-blank: linear on long whitespace runs (lazy `.*?` before `\s*$`
# re-scans a run from each of its characters).
_Q_KEY = re.compile(r"^(\s*)([^:]*[^:\s])\s*:\s?((?:.*\S)?)\s*$")
# 13.0 or 580.159.04, also when a note follows ('13.3 [Deprecated …]'); never a version inside a note
_LEADING_VERSION = re.compile(r"^(\d+\.\d+(?:\.\d+)?)(?:\s|$)")

# Keys only the GPU sections of -q print: one of them before any `GPU 0000…` line is a fragment.
GPU_KEYS = frozenset(
    (
        "Product Name", "Product Brand", "Product Architecture", "GPU UUID", "Persistence Mode",
        "Minor Number", "VBIOS Version", "MultiGPU Board", "Board ID", "GPU Part Number", "Compute Mode",
        "Display Mode", "Display Active", "Accounting Mode", "Bus Id", "Performance State",
        "Addressing Mode", "Serial Number", "Module ID", "GPU PDI", "Process ID", "Used GPU Memory",
    )
)  # fmt: skip
# Section headers (no colon) that only -q prints.
SECTIONS = frozenset(
    (
        "FB Memory Usage", "BAR1 Memory Usage", "Conf Compute Protected Memory Usage", "MIG Mode",
        "Driver Model", "GPU Operation Mode", "GPU Virtualization Mode", "Inforom Version",
        "Clocks Event Reasons", "Clocks Throttle Reasons", "Ecc Mode", "ECC Errors", "Retired Pages",
        "Remapped Rows", "Power Readings", "GPU Power Readings", "Max Clocks", "Applications Clocks",
        "Default Applications Clocks", "Supported Clocks", "Utilization", "PCI", "Temperature",
        "GPU Reset Status", "Capabilities", "Fabric", "Processes",
    )
)  # fmt: skip
HEAD_KEYS = frozenset({"Driver Version", "KMD Version", "CUDA Version", "CUDA UMD Version", "Attached GPUs"})
_MEMORY_SECTION = "FB Memory Usage"
# A fragment's GPUs are listed in the order shown; which nvidia-smi index each has is not in it.
_UNPLACED = "from a fragment: in the order shown, their GPU indexes are not in the paste"


@dataclass
class QueryGpu:
    line: int
    implicit: bool = False  # opened by a key of a fragment, not by a `GPU 0000…` header
    name: str | None = None
    uuid: str | None = None
    mig_mode: str | None = None
    mig_line: int | None = None
    processes: list[dict[str, Any]] | None = None
    processes_line: int | None = None
    total: int | None = None
    used: int | None = None
    memory_reason: str | None = None  # 'Not Supported', 'N/A': what FB Memory Usage shows instead
    memory_line: int | None = None


def read(lines: list[PasteLine], out: Out) -> None:
    head: dict[str, tuple[str, int]] = {}
    gpus: list[QueryGpu] = []
    # Indentation says which section a key belongs to; when a paste lost it, the last header does.
    indented = any(line.text.startswith((" ", "\t")) and ":" in line.text for line in lines)
    stack: list[tuple[int, str]] = []
    for line in lines:
        text = line.text.rstrip()
        if not text.strip() or text.lstrip().startswith(("|", "+", "=", "<", "$", "#")):
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
            if text.strip() == _MEMORY_SECTION:
                _gpu_for(gpus, _MEMORY_SECTION, line.number)
            continue
        parent = stack[-1][1] if stack else None
        name, value = key.group(2).strip(), key.group(3)
        if name in HEAD_KEYS and parent is None and (not gpus or gpus[-1].implicit):
            head.setdefault(name, (value, line.number))
            continue
        if not gpus and not (name in GPU_KEYS or parent in SECTIONS or name == "Processes"):
            head.setdefault(name, (value, line.number))
            continue
        _query_key(_gpu_for(gpus, name, line.number), parent, name, value, line.number)
    emit(head, gpus, out, "-q")


def _gpu_for(gpus: list[QueryGpu], name: str, number: int) -> QueryGpu:
    """The GPU a key belongs to; in a fragment with no GPU headers, a repeated GPU-level key starts
    the next."""
    current = gpus[-1] if gpus else None
    repeated = current is not None and current.implicit and _already(current, name)
    if current is None or repeated:
        current = QueryGpu(number, implicit=True)
        gpus.append(current)
    return current


def _already(gpu: QueryGpu, name: str) -> bool:
    return (
        (name == "Product Name" and gpu.name is not None)
        or (name == "GPU UUID" and gpu.uuid is not None)
        or (name == _MEMORY_SECTION and gpu.memory_line is not None)
    )


def _query_key(gpu: QueryGpu, parent: str | None, name: str, value: str, number: int) -> None:
    if name == "Product Name":
        gpu.name = value
    elif name == "GPU UUID":
        gpu.uuid = value
    elif parent == "MIG Mode" and name == "Current":
        gpu.mig_mode, gpu.mig_line = value, number
    elif parent == _MEMORY_SECTION and name in ("Total", "Used"):
        memory(gpu, name.lower(), value, number)
    elif name == "Processes":  # "Processes : None" (the header form has no value and no colon)
        gpu.processes, gpu.processes_line = ([] if value in ("None", "") else None), number
    elif parent == "Processes" and name == "Process ID":
        if gpu.processes is None:
            gpu.processes = []
        gpu.processes_line = gpu.processes_line or number
        gpu.processes.append({"pid": int_or_none(value), "line": number})
    elif parent == "Processes" and gpu.processes:
        gpu.processes[-1][{"Type": "type", "Name": "name", "Used GPU Memory": "used"}.get(name, name)] = value


def memory(gpu: QueryGpu, which: str, value: str, number: int) -> None:
    """FB memory Total/Used: a number of MiB, or the word nvidia-smi printed instead (GB10: N/A)."""
    gpu.memory_line = gpu.memory_line or number
    number_mib = int_or_none(value)
    if number_mib is None:
        gpu.memory_reason = gpu.memory_reason or unavailable(value) or value.strip() or None
    setattr(gpu, which, number_mib)


def _version(head: dict[str, tuple[str, int]], *keys: str) -> tuple[str, int] | None:
    """The first key holding a version: 610+ prints `KMD Version` / `CUDA UMD Version` and may keep
    the old names with a deprecation note instead of a value."""
    for key in keys:
        if key in head:
            match = _LEADING_VERSION.match(head[key][0].strip())
            if match:
                return match.group(1), head[key][1]
    return None


def emit(head: dict[str, tuple[str, int]], gpus: list[QueryGpu], out: Out, form: str) -> None:
    for keys, fact in (
        (("KMD Version", "Driver Version"), "driver_version"),
        (("CUDA UMD Version", "CUDA Version"), "cuda_version"),
    ):
        found = _version(head, *keys)
        if found:
            out.fact(fact, found[0], found[1])
    attached = head.get("Attached GPUs")
    count = int_or_none(attached[0]) if attached else None
    fragment = any(gpu.implicit for gpu in gpus)
    if attached and count is not None:
        out.fact("gpu_count", count, attached[1])
    elif fragment:
        out.note(f"{form}: a fragment without its GPU headers: gpu_count left out, its keys read")
    elif gpus:
        out.note(f"{form}: 'Attached GPUs' is not in the paste: gpu_count left out")
    if not gpus:
        return
    if count is not None and len(gpus) < count:
        out.note(f"{form}: {len(gpus)} of {count} attached GPUs are described (cut output or -i filter)")
    described = count or len(gpus)
    names = _prefix([gpu.name for gpu in gpus])
    if names:
        partial = f"{len(names)} of {described} GPUs described" if len(names) < described else None
        out.fact("gpu_models", names, gpus[0].line, _UNPLACED if fragment else partial)
    uuids = _prefix([gpu.uuid for gpu in gpus])
    if uuids:
        out.fact("gpu_uuids", uuids, gpus[0].line, _UNPLACED if fragment else None)
    mig_from_modes(out, [(gpu.mig_mode, gpu.mig_line) for gpu in gpus if gpu.mig_mode], form)
    _emit_memory(gpus, out, form, described, fragment)
    _emit_query_processes(gpus, out, form)


def _emit_memory(gpus: list[QueryGpu], out: Out, form: str, described: int, fragment: bool) -> None:
    """FB Memory Usage per GPU, the same NVML reading the table shows; only when every GPU shows it."""
    seen = [gpu for gpu in gpus if gpu.memory_line is not None]
    if not seen:
        return
    reported = [(index, gpu.memory_reason) for index, gpu in enumerate(gpus) if gpu.memory_reason]
    if reported:
        shown = ", ".join(f"GPU {index}: {reason}" for index, reason in reported)
        out.note(f"{form}: FB Memory Usage shows no figure ({shown}): unified memory or no NVML support")
    if len(seen) < len(gpus) or len(gpus) < described:
        out.note(f"{form}: FB Memory Usage read for {len(seen)} of {described} GPUs: memory facts left out")
        return
    line = seen[0].memory_line
    for name, values in (
        ("gpu_memory_used_mib", [gpu.used for gpu in gpus]),
        ("gpu_memory_total_mib", [gpu.total for gpu in gpus]),
    ):
        if all(value is None for value in values):
            continue
        missing = [index for index, value in enumerate(values) if value is None]
        note = _UNPLACED if fragment else f"no figure for GPU(s) {missing}" if missing else None
        out.fact(name, values, line, note)


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
            "gpu": None if gpu.implicit else index,  # a fragment does not say which GPU it is
            "pid": proc.get("pid"),
            "name": proc.get("name"),
            "used_mib": int_or_none(proc.get("used")),
            "type": proc.get("type"),
        }
        for index, gpu in enumerate(gpus)
        for proc in gpu.processes or []
    ]
    compute = [proc for proc in listed if "C" in str(proc["type"] or "C")]
    note = None
    if len(known) < len(gpus):
        note = f"Processes read for {len(known)} of {len(gpus)} GPUs"
        out.note(f"{form}: {note}")
    first = next((gpu.processes_line for gpu in known if gpu.processes), known[0].processes_line)
    out.fact("gpu_processes", len(compute), first, note)
    out.fact("gpu_process_list", listed, first)
