"""The checklist's result types: a verdict per item (pass / fail / missing) with its evidence or
what to collect, and the whole checklist's JSON contract (`vllm-triage.check/1`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from vllm_triage.core.errors import ExitCode
from vllm_triage.core.provenance import Provenance

SCHEMA = "vllm-triage.check/1"
PASS = "pass"
FAIL = "fail"
MISSING = "missing"
# The worst status of several trials is the item's status: a wrong artefact outranks an absent one.
_SEVERITY = {PASS: 0, MISSING: 1, FAIL: 2}


@dataclass
class Verdict:
    """What one check concluded: `places` names which of the item's collect commands apply."""

    status: str
    message: str
    evidence: list[Provenance] = field(default_factory=list)
    places: tuple[str, ...] = ()


def _evidence(evidence: Sequence[Provenance | None]) -> list[Provenance]:
    """Known places, each once, in the order given."""
    return list(dict.fromkeys(e for e in evidence if e is not None))


def passed(message: str, *evidence: Provenance | None) -> Verdict:
    return Verdict(PASS, message, _evidence(evidence))


def failed(
    message: str, evidence: Sequence[Provenance | None] | None = None, places: tuple[str, ...] = ()
) -> Verdict:
    return Verdict(FAIL, message, _evidence(evidence or []), places)


def missing(
    message: str, places: tuple[str, ...], evidence: Sequence[Provenance | None] | None = None
) -> Verdict:
    return Verdict(MISSING, message, _evidence(evidence or []), places)


@dataclass
class Collect:
    place: str
    command: str

    def to_json(self) -> dict[str, str]:
        return {"place": self.place, "command": self.command}


@dataclass
class TrialVerdict:
    trial: str
    verdict: Verdict
    collect: list[Collect] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "trial": self.trial,
            "status": self.verdict.status,
            "message": self.verdict.message,
            "evidence": [e.to_json() for e in self.verdict.evidence],
            "collect": [c.to_json() for c in self.collect],
        }


@dataclass
class ItemResult:
    id: str
    title: str
    why: str
    required_by: str | None  # the diagnosis that added the item, if one did
    per_trial: list[TrialVerdict]

    @property
    def status(self) -> str:
        return max((t.verdict.status for t in self.per_trial), key=_SEVERITY.__getitem__, default=PASS)

    @property
    def worst(self) -> TrialVerdict:
        return max(self.per_trial, key=lambda t: _SEVERITY[t.verdict.status])

    def to_json(self) -> dict[str, Any]:
        worst = self.worst
        return {
            "id": self.id,
            "title": self.title,
            "status": self.status,
            "message": worst.verdict.message,
            "evidence": [e.to_json() for e in worst.verdict.evidence],
            "collect": [c.to_json() for c in worst.collect],
            "why": self.why,
            "required_by": self.required_by,
            "trials": [t.to_json() for t in self.per_trial] if len(self.per_trial) > 1 else [],
        }


@dataclass
class DiagnosisHit:
    id: str
    label: str
    trial: str
    category: str
    rule: str | None
    where: Provenance
    requires: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "label": self.label,
            "trial": self.trial,
            "category": self.category,
            "rule": self.rule,
            "evidence": self.where.to_json(),
            "requires": list(self.requires),
        }


@dataclass
class ChecklistResult:
    trials: list[dict[str, Any]]
    items: list[ItemResult]
    diagnoses: list[DiagnosisHit]
    placeholders: list[dict[str, Any]]
    collect_all: str | None
    notes: list[str] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        out = {PASS: 0, FAIL: 0, MISSING: 0}
        for item in self.items:
            out[item.status] += 1
        return out

    @property
    def complete(self) -> bool:
        return all(item.status == PASS for item in self.items)

    @property
    def exit_code(self) -> int:
        return ExitCode.OK if self.complete else ExitCode.INCOMPLETE

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "complete": self.complete,
            "exit_code": self.exit_code,
            "summary": self.counts,
            "trials": self.trials,
            "diagnoses": [d.to_json() for d in self.diagnoses],
            "items": [i.to_json() for i in self.items],
            "placeholders": self.placeholders,
            "collect_all": self.collect_all,
            "notes": self.notes,
        }
