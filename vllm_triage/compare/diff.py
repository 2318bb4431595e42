"""`vllm-triage diff A B`: what changed between two runs, was it only one thing, and is it still
the same failure. The JSON contract is `vllm-triage.diff/1`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vllm_triage.compare.changes import Change, Comparison, compare_runs
from vllm_triage.compare.data import CompareData
from vllm_triage.compare.data import load as load_data
from vllm_triage.compare.outcome import FailureComparison, compare_outcomes, outcome_of
from vllm_triage.compare.run import Run
from vllm_triage.core.errors import ExitCode

SCHEMA = "vllm-triage.diff/1"

IDENTICAL = "identical"
ONE_VARIABLE = "one-variable"
CONFOUNDED = "confounded"


def verdict_of(comparison: Comparison) -> str:
    """Knob changes and kinds of drift each count as one variable: the method allows one."""
    if comparison.variables == 0:
        return IDENTICAL
    return ONE_VARIABLE if comparison.variables == 1 else CONFOUNDED


def exit_code_of(verdict: str) -> int:
    return ExitCode.CONFOUNDED if verdict == CONFOUNDED else ExitCode.OK


def retest_order(changes: list[Change], data: CompareData) -> list[dict[str, Any]]:
    """One change per trial, from the base-compatibility layer outward (changes are already sorted
    by layer): start from A and bring in B's value of one change at a time."""
    return [
        {
            "step": i,
            "change": c.id,
            "label": c.label,
            "layer": c.layer,
            "layer_label": data.layer_label(c.layer),
            "values": [k.shown() for k in c.knobs],
        }
        for i, c in enumerate(changes, 1)
    ]


@dataclass
class DiffResult:
    a: Run
    b: Run
    comparison: Comparison
    verdict: str
    failure: FailureComparison
    data: CompareData

    @property
    def exit_code(self) -> int:
        return exit_code_of(self.verdict)

    def to_json(self) -> dict[str, Any]:
        c = self.comparison
        return {
            "schema": SCHEMA,
            "a": {
                **self.a.summary(),
                "outcome": outcome_of(self.a.triage).to_json(),
                "signals": self.a.signals.to_json(),
            },
            "b": {
                **self.b.summary(),
                "outcome": outcome_of(self.b.triage).to_json(),
                "signals": self.b.signals.to_json(),
            },
            "verdict": self.verdict,
            "variables": c.variables,
            "exit_code": self.exit_code,
            "changes": [ch.to_json(self.data) for ch in c.changes],
            "drift": [d.to_json() for d in c.drift],
            "retest_order": retest_order(c.changes, self.data) if c.variables > 1 else [],
            "failure": self.failure.to_json(),
            "defaults": [d.to_json() for d in c.defaults],
            "not_compared": [n.to_json() for n in c.not_compared],
            "noise": [n.to_json() for n in c.noise],
            "unchanged": c.unchanged,
            "coverage": {
                "compared": c.compared,
                "not_compared": len(c.not_compared),
                "comparable": c.comparable,
            },
        }


def variable_labels(comparison: Comparison) -> list[str]:
    return [c.label for c in comparison.changes] + [f"drift ({d.id})" for d in comparison.drift]


def diff_runs(a: Run, b: Run, data: CompareData) -> DiffResult:
    comparison = compare_runs(a, b, data)
    failure = compare_outcomes(
        outcome_of(a.triage),
        outcome_of(b.triage),
        data.settings.same_failure_similarity,
        changed=variable_labels(comparison),
        removed=[c.label for c in comparison.changes if c.removed],
        labels=(a.label, b.label),
    )
    return DiffResult(a, b, comparison, verdict_of(comparison), failure, data)


def diff_paths(path_a: str, path_b: str, rule_dirs: list[str] | None = None) -> DiffResult:
    """The one call `vllm-triage diff` makes."""
    from vllm_triage.compare.load import load_run

    data = load_data(rule_dirs)
    run_a = load_run(path_a, rule_dirs)
    run_b = load_run(path_b, rule_dirs)
    if run_a.label == run_b.label:  # two bundles both named "bundle": say which is which
        run_a.label, run_b.label = f"A ({run_a.label})", f"B ({run_b.label})"
    return diff_runs(run_a, run_b, data)
