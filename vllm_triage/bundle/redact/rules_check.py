"""Check the redaction rules the way `rules check` checks the engine's: every example behaves,
every pattern stays fast on hostile input. Run by tests/bundle; callable by `rules check`."""

from __future__ import annotations

from typing import Any

from vllm_triage.bundle.redact import detect
from vllm_triage.bundle.redact.rules import RedactRules

HOSTILE_INPUTS = (
    "a" * 20000 + "!",
    "=" * 20000,
    "a=" * 10000,
    "-" * 20000 + "BEGIN",
    "-----BEGIN PRIVATE KEY-----" * 500,
    "x:" * 10000 + "\n",
    "a." * 10000 + "internal",
    "1." * 10000,
    "f:" * 10000,
    '"' * 20000,
)
HOSTILE_TIMEOUT_S = 0.5


def check(rules: RedactRules) -> list[str]:
    """Problems, one line each, naming the file and rule; empty when everything behaves."""
    problems: list[str] = []
    classifier = detect.Classifier(rules)
    for rule in rules.secrets:
        where = f"{rule.file}: secret {rule.id}"
        for example in rule.must_match:
            if not detect.secret_finds(detect.Scope(example), rules, [rule], classifier, HOSTILE_TIMEOUT_S):
                problems.append(f"{where}: must_match example finds nothing: {example!r}")
        for example in rule.must_not_match:
            if detect.secret_finds(detect.Scope(example), rules, [rule], classifier, HOSTILE_TIMEOUT_S):
                problems.append(f"{where}: must_not_match example is redacted: {example!r}")
        problems.extend(_hostile(where, rule.compiled))
        if rule.continuation_compiled is not None:
            problems.extend(_hostile(f"{where} (continuation)", rule.continuation_compiled))
    for mask in rules.masks:
        where = f"{mask.file}: mask {mask.id}"
        for example in mask.must_match:
            if not detect.mask_finds(detect.Scope(example), [mask], HOSTILE_TIMEOUT_S):
                problems.append(f"{where}: must_match example finds nothing: {example!r}")
        for example in mask.must_not_match:
            if detect.mask_finds(detect.Scope(example), [mask], HOSTILE_TIMEOUT_S):
                problems.append(f"{where}: must_not_match example is masked: {example!r}")
        problems.extend(_hostile(where, mask.compiled))
    for name in rules.names.must_match:
        if rules.names.secret_kind(name) is None:
            problems.append(f"[secret_names]: {name!r} should hold a secret")
    for name in rules.names.must_not_match:
        if rules.names.secret_kind(name) is not None:
            problems.append(f"[secret_names]: {name!r} should not hold a secret")
    must, must_not = rules.trivial_examples
    for value in must:
        if not rules.is_trivial(value):
            problems.append(f"[trivial_values]: {value!r} should be trivial")
    for value in must_not:
        if rules.is_trivial(value):
            problems.append(f"[trivial_values]: {value!r} should not be trivial")
    return problems


def _hostile(where: str, compiled: Any) -> list[str]:
    for text in HOSTILE_INPUTS:
        try:
            for _ in compiled.finditer(text, timeout=HOSTILE_TIMEOUT_S):
                pass
        except TimeoutError:
            return [f"{where}: pattern takes more than {HOSTILE_TIMEOUT_S} s on hostile input {text[:12]!r}…"]
    return []
