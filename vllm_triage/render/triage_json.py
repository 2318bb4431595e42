"""The triage JSON contract (DESIGN §4): schema vllm-triage.triage/1."""

from __future__ import annotations

from typing import Any

from vllm_triage import __version__
from vllm_triage.analysis.model import Row
from vllm_triage.analysis.triage import TriageResult

SCHEMA = "vllm-triage.triage/1"


def _row_json(row: Row) -> dict[str, Any]:
    """A line as the parser split it: a renderer shows the prefix once and the messages under it
    (it must not parse the raw line again)."""
    return {
        "line": row.line,
        "process": row.process,
        "pid": row.pid,
        "rank": row.rank,
        "level": row.level,
        "source": row.source,
        "timestamp": row.timestamp,
        "message": row.message,
    }


def triage_to_json(result: TriageResult, requests: dict[str, int] | None = None) -> dict[str, Any]:
    """`requests`: what the server answered ({"ok", "failed", "received"}), when it was read."""
    chosen = result.chosen
    first_error = chosen.first_error.to_json() if chosen and chosen.first_error else None
    if first_error is not None:
        first_error["block_lines"] = chosen.first_error.lines
        first_error["block_rows"] = [_row_json(r) for r in chosen.first_error.rows]
    findings = [f.to_json() for f in (chosen.findings if chosen else [])]
    findings += [f.to_json() for f in result.findings]
    consequences = []
    for c in chosen.consequences if chosen else []:
        entry = c.to_json()
        entry.update(message=c.row.message, process=c.row.process, level=c.row.level)
        consequences.append(entry)
    return {
        "schema": SCHEMA,
        "tool_version": __version__,
        "inputs": result.inputs,
        "phase": result.phase,
        "phase_reason": chosen.phase_reason if chosen else "no vLLM log",
        "phase_confidence": chosen.phase_confidence if chosen else "low",
        "phase_alternative": chosen.phase_alternative if chosen else None,
        "milestones": [m.to_json() for m in chosen.milestones] if chosen else [],
        "last_milestone": chosen.milestones[-1].name if chosen and chosen.milestones else None,
        "first_missing_milestone": chosen.first_missing if chosen else None,
        "ready": chosen.ready if chosen else False,
        "requests": requests,
        "first_error": first_error,
        "vllm_version": result.vllm_version,
        "known_issue": result.known_issue,
        "consequences": consequences,
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
