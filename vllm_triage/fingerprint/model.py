"""The Fingerprint of a run (DESIGN §4): knobs and facts with provenance, and findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vllm_triage.core.finding import Finding
from vllm_triage.core.provenance import Provenance, Sourced
from vllm_triage.fingerprint.secrets import conceal_entry, conceal_json, conceal_text, secret_values

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

    def secrets(self) -> set[str]:
        """The credentials read (every value any source gave a secret name), to keep out of output."""
        named = [(name, c.sourced.value) for name, cands in self.candidates.items() for c in cands]
        named += [(name, s.value) for values in (self.knobs, self.facts) for name, s in values.items()]
        return secret_values(named)

    def shown_notes(self) -> list[str]:
        """The notes as they may be printed: no credential in them."""
        secrets = self.secrets()
        return [conceal_text(note, secrets) for note in self.notes]

    def to_json(self) -> dict[str, Any]:
        """The printed form: a credential's value is concealed (fingerprint/secrets.py)."""
        secrets = self.secrets()
        return {
            "schema": SCHEMA,
            "knobs": {
                name: conceal_entry(name, value.to_json(), secrets)
                for name, value in sorted(self.knobs.items())
            },
            "facts": {
                name: conceal_entry(name, value.to_json(), secrets)
                for name, value in sorted(self.facts.items())
            },
            "findings": [conceal_json(finding.to_json(), secrets) for finding in self.findings],
        }
