r"""nvidia-smi topo -m: the GPU/NIC link matrix.

>>> from vllm_triage.parsers.nvidia_smi import parse
>>> text = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV18\t0-31\nGPU1\tNV18\t X \t0-31\n"
>>> parse(text, "topo.txt", "host").facts["host.topology"].value["interconnect"]
'nvlink'
"""

from __future__ import annotations

import re

from vllm_triage.parsers.base import PasteLine
from vllm_triage.parsers.nvidia_smi.common import (
    Out,
)

TOPO_ROW = re.compile(r"^\s*(GPU\d+|NIC\d+|mlx\d+_\d+)\s+(?=X(?![A-Za-z])|NV\d+|SYS|NODE|PHB|PXB|PIX|SOC)")

_TOPO_DEVICE = re.compile(r"GPU\d+|NIC\d+|mlx\d+_\d+")
_TOPO_LINK = re.compile(r"X(?![A-Za-z])|NV\d+|SYS|NODE|PHB|PXB|PIX|SOC")


def read(lines: list[PasteLine], out: Out) -> None:
    header: tuple[list[str], int] | None = None
    rows: dict[str, tuple[list[str], int]] = {}
    for line in lines:
        text = line.text
        row = TOPO_ROW.match(text)
        if row:
            rows.setdefault(row.group(1), (_TOPO_LINK.findall(text[row.end() :]), line.number))
        elif header is None and not rows and re.search(r"\bGPU0\b|GPU0(?=GPU|NIC|\s|$)", text):
            # tabs lost in a paste can glue names together ('NIC8NIC9'): findall still splits them
            header = (_TOPO_DEVICE.findall(text.split("CPU Affinity")[0]), line.number)
    if header:
        devices, at = header
    elif rows:
        devices, at = list(rows), next(iter(rows.values()))[1]
        out.note("topo -m: the header row is not in the paste; devices taken from the row labels")
    else:
        return
    gpus = [device for device in devices if device.startswith("GPU")]
    out.fact("gpu_count", len(gpus), at)
    links = {
        gpu: {device: link for device, link in zip(devices, rows[gpu][0], strict=False) if device != gpu}
        for gpu in gpus
        if gpu in rows
    }
    missing = [gpu for gpu in gpus if gpu not in rows or len(rows[gpu][0]) < len(devices)]
    if missing:
        out.note(f"topo -m: rows cut or missing for {', '.join(missing)}")
    topology = {
        "devices": devices,
        "links": links,
        "interconnect": _interconnect(links, gpus),
        "nics": sum(1 for device in devices if not device.startswith("GPU")),
    }
    out.fact("topology", topology, at)


def _interconnect(links: dict[str, dict[str, str]], gpus: list[str]) -> str:
    """nvlink when every GPU pair is NV#, pcie when none is, mixed otherwise; single for one GPU."""
    pairs = [link for gpu, row in links.items() for peer, link in row.items() if peer in gpus and peer != gpu]
    if len(gpus) <= 1:
        return "single"
    if not pairs:
        return "unknown"
    nvlink = sum(1 for link in pairs if link.startswith("NV"))
    return "nvlink" if nvlink == len(pairs) else "pcie" if nvlink == 0 else "mixed"
