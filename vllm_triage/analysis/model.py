"""The result types of the analysis, independent of how they are rendered."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vllm_triage.core.finding import Finding


@dataclass
class Row:
    """One retained LogFrame row, as the analysis reads it."""

    file: str
    line: int
    raw: str
    message: str
    level: str | None
    process: str | None
    pid: int | None
    rank: int | None
    source: str | None
    vllm_ts: str | None
    transport_ts: str | None
    marker: str | None
    cls: str | None
    exc: bool
    tb: bool
    service: str | None = None  # the docker compose service in front of the line (analysis/servers.py)

    @property
    def stream(self) -> tuple[str | None, int | None, int | None]:
        """Lines of one process belong together: its name and pid, and the torch rank of lines
        that carry only `[rankN]:` (c10d logging and per-rank tracebacks have no vLLM prefix)."""
        return (self.process, self.pid, self.rank)

    @property
    def timestamp(self) -> str | None:
        return self.transport_ts or self.vllm_ts


@dataclass
class Milestone:
    name: str
    phase: str
    rule: str
    file: str
    line: int
    text: str
    stream: tuple[str | None, int | None, int | None] = (None, None, None)  # the process that printed it

    def to_json(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "marker": self.name,
            "rule": self.rule,
            "file": self.file,
            "line": self.line,
        }


@dataclass
class ErrorBlock:
    row: Row
    start: int
    end: int
    lines: list[str]  # the block's raw lines, for display
    rule: str | None
    category: str
    phase: str
    explain: str
    advice: str
    kind: str  # root | died | consequence_only | plain_error | warning | hang
    component: str | None = None  # the package the innermost frame belongs to (analysis/callpath.py)
    rows: list[Row] = field(default_factory=list)  # the block's parsed rows, for display

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.row.file,
            "line": self.row.line,
            "text": self.row.raw,
            "message": self.row.message.strip(),  # a runtime prints some lines indented under its prefix
            "block": {"start": self.start, "end": self.end},
            "rule": self.rule,
            "category": self.category,
            "process": self.row.process,
            "pid": self.row.pid,
            "rank": self.row.rank,
            "timestamp": self.row.timestamp,
            "level": self.row.level,
            "kind": self.kind,
            "component": self.component,
            "explain": self.explain,
            "advice": self.advice,
        }


@dataclass
class Consequence:
    row: Row
    rule: str
    count: int = 1

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.row.file,
            "line": self.row.line,
            "text": self.row.raw,
            "rule": self.rule,
            "count": self.count,
        }


@dataclass
class LogAnalysis:
    """What one log file says."""

    file: str
    lines: int
    phase: str
    milestones: list[Milestone]
    first_missing: str | None
    first_error: ErrorBlock | None
    consequences: list[Consequence]
    findings: list[Finding]
    ready: bool
    phase_reason: str
    phase_confidence: str = "low"  # high | medium | low (see analysis/phase.py)
    phase_alternative: str | None = None  # a second phase a careful reader could defend
