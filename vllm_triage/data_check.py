"""`rules check` beyond the triage rules: every other data family under rules/ (compatibility and
hygiene tables, recipes, compare data, redaction patterns, the known-issue catalogue, the
pre-filing checklist) is loaded by its own strict loader, and the redaction patterns run their
examples. Lives above the layers it checks, so the engine does not import them."""

from __future__ import annotations

from collections.abc import Callable

from vllm_triage.engine.check import Problem
from vllm_triage.errors import TriageError


def _loader_problems(family: str, load: Callable[[], object]) -> list[Problem]:
    try:
        load()
    except TriageError as exc:
        return [Problem(family, None, exc.message)]
    except Exception as exc:  # a loader bug still names the family that failed
        return [Problem(family, None, f"{type(exc).__name__}: {exc}")]
    return []


def check_data(extra_dirs: list[str] | None = None) -> list[Problem]:
    dirs = list(extra_dirs or [])
    problems: list[Problem] = []

    from vllm_triage.compare import data as compare_data
    from vllm_triage.fingerprint import data as fingerprint_data
    from vllm_triage.fleet import known_issues

    problems += _loader_problems("rules/compat, rules/recipes", lambda: fingerprint_data.load(dirs))
    problems += _loader_problems("rules/compare", lambda: compare_data.load(dirs))
    problems += _loader_problems("rules/known_issues", lambda: known_issues.load(tuple(dirs)))
    from vllm_triage.bundle.checklist import checklist_data

    # Built-in only: the checklist's items must match the checks in the code, so --rules cannot add any.
    problems += _loader_problems("rules/checklist.toml", checklist_data)
    try:
        from vllm_triage.bundle import redact_check, redact_rules

        problems += [
            Problem("rules/redact", None, line) for line in redact_check.check(redact_rules.load(dirs))
        ]
    except TriageError as exc:
        problems.append(Problem("rules/redact", None, exc.message))
    return problems
