"""`rules check` beyond the triage rules: every other data family under rules/ (compatibility and
hygiene tables, recipes, compare data, redaction patterns, the known-issue catalogue, the
pre-filing checklist) is loaded by its own strict loader, and the redaction patterns run their
examples. Lives above the layers it checks, so the engine does not import them."""

from __future__ import annotations

from collections.abc import Callable

from vllm_triage.core.errors import TriageError
from vllm_triage.core.finding import Finding
from vllm_triage.engine.check import problem


def _loader_problems(family: str, load: Callable[[], object]) -> list[Finding]:
    try:
        load()
    except TriageError as exc:
        return [problem(family, None, exc.message)]
    except Exception as exc:  # a loader bug still names the family that failed
        return [problem(family, None, f"{type(exc).__name__}: {exc}")]
    return []


def check_data(extra_dirs: list[str] | None = None) -> list[Finding]:
    dirs = list(extra_dirs or [])
    problems: list[Finding] = []

    from vllm_triage.analysis import known_issues
    from vllm_triage.compare import data as compare_data
    from vllm_triage.fingerprint import data as fingerprint_data

    problems += _loader_problems("rules/compat, rules/recipes", lambda: fingerprint_data.load(dirs))
    problems += _loader_problems("rules/compare", lambda: compare_data.load(dirs))
    problems += _loader_problems("rules/known_issues", lambda: known_issues.load(tuple(dirs)))
    from vllm_triage.bundle.check.checklist import checklist_data

    # Built-in only: the checklist's items must match the checks in the code, so --rules cannot add any.
    problems += _loader_problems("rules/checklist.toml", checklist_data)
    try:
        from vllm_triage.bundle.redact import rules as redact_rules
        from vllm_triage.bundle.redact import rules_check as redact_check

        problems += [
            problem("rules/redact", None, line) for line in redact_check.check(redact_rules.load(dirs))
        ]
    except TriageError as exc:
        problems.append(problem("rules/redact", None, exc.message))
    return problems
