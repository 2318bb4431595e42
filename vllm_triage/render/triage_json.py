"""The triage JSON contract (DESIGN §4): schema vllm-triage.triage/1."""

from __future__ import annotations

from typing import Any

from vllm_triage.analysis.triage import TriageResult

SCHEMA = "vllm-triage.triage/1"


def triage_to_json(result: TriageResult) -> dict[str, Any]:
    chosen = result.chosen
    first_error = chosen.first_error.to_json() if chosen and chosen.first_error else None
    if first_error is not None:
        first_error["block_lines"] = chosen.first_error.lines
    findings = [f.to_json() for f in (chosen.findings if chosen else [])]
    findings += [f.to_json() for f in result.findings]
    return {
        "schema": SCHEMA,
        "inputs": result.inputs,
        "phase": result.phase,
        "phase_reason": chosen.phase_reason if chosen else "no vLLM log",
        "phase_confidence": chosen.phase_confidence if chosen else "low",
        "phase_alternative": chosen.phase_alternative if chosen else None,
        "milestones": [m.to_json() for m in chosen.milestones] if chosen else [],
        "last_milestone": chosen.milestones[-1].name if chosen and chosen.milestones else None,
        "first_missing_milestone": chosen.first_missing if chosen else None,
        "ready": chosen.ready if chosen else False,
        "first_error": first_error,
        "vllm_version": result.vllm_version,
        "known_issue": result.known_issue,
        "consequences": [c.to_json() for c in chosen.consequences] if chosen else [],
        "findings": findings,
        "logs": [
            {
                "file": a.file,
                "lines": a.lines,
                "phase": a.phase,
                "first_error_line": a.first_error.row.line if a.first_error else None,
            }
            for a in result.analyses
        ],
    }
