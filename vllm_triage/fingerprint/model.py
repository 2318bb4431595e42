"""The Fingerprint of a run (DESIGN §4): knobs and facts with provenance, and findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vllm_triage.core.finding import Finding
from vllm_triage.core.provenance import Provenance, Sourced

SCHEMA = "vllm-triage.fingerprint/1"


@dataclass(frozen=True)
class Candidate:
    """One value read for a name, by one source (several sources may say different things)."""

    role: str  # the source's role: vllm_log, launch_command, container_inspect, …
    kind: str  # "knob" | "fact"
    sourced: Sourced


@dataclass
class Fingerprint:
    knobs: dict[str, Sourced] = field(default_factory=dict)
    facts: dict[str, Sourced] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # What was read: path, role, scope and the parser's kind, for the text report.
    inputs: list[dict[str, Any]] = field(default_factory=list)
    # Every value read for each name, the winner first: checks ask who said what (was an NCCL_
    # variable set by the launch command or only inherited?), and conflicts are found here.
    candidates: dict[str, list[Candidate]] = field(default_factory=dict)

    def get(self, name: str) -> Sourced | None:
        return self.knobs.get(name) or self.facts.get(name)

    def value(self, name: str, default: Any = None) -> Any:
        found = self.get(name)
        return found.value if found is not None else default

    def where(self, *names: str) -> list[Provenance]:
        """Provenance of each named value that is present, for a finding's evidence."""
        out: list[Provenance] = []
        for name in names:
            found = self.get(name)
            if found is not None and found.source not in out:
                out.append(found.source)
        return out

    def roles_of(self, name: str) -> set[str]:
        return {candidate.role for candidate in self.candidates.get(name, [])}

    def add_fact(self, name: str, value: Any, source: Provenance, note: str | None = None) -> None:
        """A derived fact; never overwrites one that was read."""
        if name not in self.facts and name not in self.knobs:
            self.facts[name] = Sourced(value, source, note)

    def to_json(self) -> dict[str, Any]:
        """The values as read, secrets included: every command redacts what it prints at its output
        boundary (bundle/redact/payload.py), so one secret gets one placeholder in all it prints."""
        return {
            "schema": SCHEMA,
            "knobs": {name: value.to_json() for name, value in sorted(self.knobs.items())},
            "facts": {name: value.to_json() for name, value in sorted(self.facts.items())},
            "findings": [finding.to_json() for finding in self.findings],
        }
