"""The one Finding: what a parser reads off an artefact (nvidia-smi printing an NVML error), what
the fingerprint checks conclude, what the triage says about a log, and what `rules check` finds
wrong in a rule file. One shape, one JSON form."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vllm_triage.core.provenance import Provenance


@dataclass
class Finding:
    id: str
    severity: str  # error | warning | info
    message: str
    evidence: list[Provenance] = field(default_factory=list)
    advice: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "severity": self.severity,
            "message": self.message,
            "evidence": [e.to_json() for e in self.evidence],
            "advice": self.advice,
        }
