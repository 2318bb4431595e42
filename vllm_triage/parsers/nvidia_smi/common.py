"""What every nvidia-smi form reader shares: the output sink, the line view, value readers."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from vllm_triage.core.finding import Finding
from vllm_triage.core.provenance import Provenance
from vllm_triage.ingest import prefixes
from vllm_triage.parsers.base import ParseResult, PasteLine, clean_paste

VERSION = re.compile(r"^\d+\.\d+(?:\.\d+)?$")
BUS_ID = re.compile(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]")
GPU_UUID = re.compile(r"^GPU-[0-9a-fA-F]{8}-[0-9a-fA-F-]{4,}$")
# Jetson boards name the GPU by the SoC: 'Orin (nvgpu)', 'NVIDIA Thor', 'Xavier'.
GPU_NAME = re.compile(r"^(?:NVIDIA|Tesla|Quadro|GeForce|TITAN|GRID|Jetson|Orin|Thor|Xavier)\b")

# What nvidia-smi prints where it has no value: "N/A", "[N/A]" (csv), "Not Supported" (GB10 / DGX
# Spark and Jetson unified memory has no framebuffer to report), "[Not Supported]",
# "[Insufficient Permissions]", "Requested functionality has been deprecated" (580+ -q).
_UNAVAILABLE = re.compile(
    r"^\[?\s*(N/A|Not Supported|Not Available|Insufficient Permissions|Unknown Error|GPU is lost"
    r"|Requested functionality has been deprecated|Unknown)\s*\]?$",
    re.IGNORECASE,
)
_MIB = re.compile(r"\s*(\d+)\s*(?:MiB)?\s*")


def unavailable(value: str | None) -> str | None:
    """The reason nvidia-smi gave instead of a value ('Not Supported', 'N/A'), or None for a value."""
    if value is None:
        return None
    match = _UNAVAILABLE.match(value.strip())
    return match.group(1) if match else None


def int_or_none(value: str | None) -> int | None:
    """143771 from '143771 MiB', '143771MiB' or '143771'; None for N/A, [Not Supported], cut values."""
    if value is None:
        return None
    match = _MIB.fullmatch(value)
    return int(match.group(1)) if match else None


def lines_of(text: str) -> list[PasteLine]:
    """Paste debris removed, but prompt lines kept: `$ nvidia-smi --query-gpu=…` names the csv columns.
    Output that reached us through a container transport (`docker compose up`'s `svc_1  | `,
    `kubectl logs --prefix`, `docker logs -t` times) has that prefix taken off by the one prefix
    grammar, when most lines carry one: a lone `a | b` line of another paste keeps its text."""
    lines = clean_paste(text, keep_prompts=True)
    rests = [prefixes.strip_transport(line.text)[0] for line in lines]
    shown = [(line.text, rest) for line, rest in zip(lines, rests, strict=True) if line.text.strip()]
    carried = sum(1 for text, rest in shown if rest != text)
    if carried < 2 or 2 * carried < len(shown):
        return lines
    return [PasteLine(line.number, rest) for line, rest in zip(lines, rests, strict=True)]


@dataclass
class Out:
    """One form's findings; every fact name gets the scope prefix here, nowhere else."""

    result: ParseResult
    file: str
    scope: str

    def fact(self, name: str, value: Any, line: int | None, note: str | None = None) -> None:
        self.result.fact(f"{self.scope}.{name}", value, self.file, line, note)

    def has(self, name: str) -> bool:
        return f"{self.scope}.{name}" in self.result.facts

    def note(self, text: str) -> None:
        self.result.notes.append(text)

    def problem(self, id_: str, severity: str, message: str, line: int | None, advice: str = "") -> None:
        self.result.problems.append(Finding(id_, severity, message, [Provenance(self.file, line)], advice))


def first_line(items: Iterable[Any]) -> int | None:
    return next((item.line for item in items), None)


def mig_from_modes(out: Out, modes: list[tuple[str | None, int | None]], where: str) -> None:
    """mig_enabled from per-GPU MIG modes: any Enabled wins; all readable ones Disabled → False."""
    enabled = [line for mode, line in modes if mode and mode.lower() == "enabled"]
    disabled = [line for mode, line in modes if mode and mode.lower() == "disabled"]
    if enabled:
        out.fact("mig_enabled", True, enabled[0])
    elif disabled:
        unread = sum(1 for mode, _ in modes if not mode)
        note = f"MIG mode unreadable for {unread} GPU(s)" if unread else None
        out.fact("mig_enabled", False, disabled[0], note)
        if unread:
            out.note(f"{where}: MIG mode unreadable for {unread} GPU(s); the others show Disabled")
