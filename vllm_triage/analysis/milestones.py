"""Milestones reached: the first line of each startup step, and the step that never came."""

from __future__ import annotations

from vllm_triage.analysis.model import Milestone, Row
from vllm_triage.engine.rules import Rule


def milestones_reached(rows: list[Row], rules: dict[str, Rule]) -> list[Milestone]:
    """The first occurrence of every milestone, in line order (shutdown excluded). A marker with
    `again` marks that milestone too when the process that printed it prints it a second time."""
    seen: dict[str, Milestone] = {}
    for row in rows:
        if not row.marker:
            continue
        rule = rules[row.marker]
        if rule.shutdown:
            continue
        first = seen.get(rule.milestone)
        if first is None:
            seen[rule.milestone] = Milestone(
                rule.milestone, rule.phase, rule.id, row.file, row.line, row.raw, row.stream
            )
        elif rule.again and rule.again not in seen and first.stream == row.stream and first.file == row.file:
            phase = next(
                (r.phase for r in rules.values() if r.kind == "marker" and r.milestone == rule.again), None
            )
            if phase is not None:
                seen[rule.again] = Milestone(
                    rule.again, phase, rule.id, row.file, row.line, row.raw, row.stream
                )
    return sorted(seen.values(), key=lambda m: m.line)


def first_missing(reached: list[Milestone], order: list[str]) -> str | None:
    """The step after the furthest milestone reached, in vLLM's canonical startup order."""
    if not reached:
        return order[0] if order else None
    furthest = max((order.index(m.name) for m in reached if m.name in order), default=-1)
    return order[furthest + 1] if furthest + 1 < len(order) else None


def shutdown_line(rows: list[Row], rules: dict[str, Rule]) -> int | None:
    for row in rows:
        if row.marker and rules[row.marker].shutdown:
            return row.line
    return None
