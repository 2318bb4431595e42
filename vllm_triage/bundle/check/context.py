"""What a check reads: one trial with its placeholders and scene, or the whole series of trials
with the comparison `series` makes of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vllm_triage.bundle.check.data import ChecklistData
from vllm_triage.bundle.check.placeholders import PlaceholderHit
from vllm_triage.bundle.collect.commands import Scene
from vllm_triage.bundle.trials import Trial
from vllm_triage.compare.data import CompareData
from vllm_triage.core.provenance import Provenance, Sourced
from vllm_triage.core.roles import Role
from vllm_triage.fingerprint.model import Candidate, Fingerprint
from vllm_triage.ingest.sources import Source


@dataclass
class TrialContext:
    trial: Trial
    data: ChecklistData
    hits: list[PlaceholderHit]
    scene: Scene
    index: int  # position in the series (0: the first trial, the base)

    @property
    def fp(self) -> Fingerprint:
        return self.trial.fingerprint

    def hits_for(self, *roles: Role) -> list[PlaceholderHit]:
        return [h for h in self.hits if h.role in roles]

    def usable(self, role: Role) -> list[Source]:
        """Sources of a role that hold no placeholder (a placeholder file is no artefact)."""
        spoiled = {h.file for h in self.hits if h.role == role}
        return [s for s in self.trial.of_role(role) if s.name not in spoiled]

    def read_by(self, name: str, *roles: Role) -> list[Candidate]:
        """The values read for a name by sources of the given roles, best first."""
        return [c for c in self.fp.candidates.get(name, []) if not roles or c.role in roles]

    def first_read(self, name: str, *roles: Role) -> Sourced | None:
        found = self.read_by(name, *roles)
        return found[0].sourced if found else None

    def names_read(self, prefix: str, *roles: Role) -> list[str]:
        return sorted(
            n
            for n, cands in self.fp.candidates.items()
            if n.startswith(prefix) and any(not roles or c.role in roles for c in cands)
        )

    @property
    def containerised(self) -> bool:
        return self.scene.kind in ("container", "pod")


@dataclass
class SeriesContext:
    trials: list[Trial]
    data: ChecklistData
    compare: CompareData
    series: Any  # vllm_triage.compare.series.SeriesResult, None for one trial
    scenes: list[Scene]

    @property
    def several(self) -> bool:
        return len(self.trials) > 1


def where(value: Sourced | Candidate | None) -> Provenance | None:
    if value is None:
        return None
    sourced = value.sourced if isinstance(value, Candidate) else value
    return sourced.source


def at(evidence: dict[str, Any] | None) -> Provenance | None:
    """A provenance from a JSON `{"file", "line"}` (triage, compare)."""
    if not evidence or not evidence.get("file"):
        return None
    return Provenance(str(evidence["file"]), evidence.get("line"))
