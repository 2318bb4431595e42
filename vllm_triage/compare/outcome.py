"""The failure of a run (phase + normalised first-error signature) and what two of them say in
the method's terms: the same failure (a usable reproduction), a failure that moved or changed
type (go back to the last stable level), or a base that no longer fails (compare fingerprints
instead of declaring it fixed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vllm_triage.analysis.signature import signature, signature_hash, similarity
from vllm_triage.core.phases import phase_index

# Conclusions of a failure comparison (stable ids: the JSON contract uses them).
SAME = "same-failure"
MOVED = "moved-phase"
CHANGED = "changed-type"
NO_LONGER = "no-longer-fails"
NEW = "new-failure"
NONE = "no-failure"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Outcome:
    known: bool  # False when the input held no log
    failed: bool
    phase: str  # a phase name, "none", or "unknown"
    category: str | None = None
    rule: str | None = None
    message: str | None = None
    file: str | None = None
    line: int | None = None
    text: str | None = None
    ready: bool = False
    last_milestone: str | None = None
    first_missing: str | None = None

    @property
    def signature(self) -> str | None:
        return signature(self.category, self.message) if self.failed else None

    @property
    def signature_hash(self) -> str | None:
        sig = self.signature
        return signature_hash(sig) if sig else None

    def to_json(self) -> dict[str, Any]:
        return {
            "known": self.known,
            "failed": self.failed,
            "phase": self.phase,
            "ready": self.ready,
            "last_milestone": self.last_milestone,
            "first_missing_milestone": self.first_missing,
            "first_error": (
                {
                    "file": self.file,
                    "line": self.line,
                    "text": self.text,
                    "message": self.message,
                    "category": self.category,
                    "rule": self.rule,
                }
                if self.failed
                else None
            ),
            "signature": self.signature,
            "signature_hash": self.signature_hash,
        }

    def short(self) -> str:
        if not self.known:
            return "unknown (no log)"
        if not self.failed:
            return "no failure" + (" (server ready)" if self.ready else "")
        return f"{self.phase} — {self.category or 'error'}"


def outcome_of(triage: dict[str, Any] | None) -> Outcome:
    """The Outcome of a triage JSON (`vllm-triage.triage/1`); unknown when there is none."""
    if triage is None:
        return Outcome(known=False, failed=False, phase="unknown")
    first = triage.get("first_error")
    phase = str(triage.get("phase") or ("none" if first is None else "unknown"))
    common: dict[str, Any] = {
        "ready": bool(triage.get("ready")),
        "last_milestone": triage.get("last_milestone"),
        "first_missing": triage.get("first_missing_milestone"),
    }
    if not first:
        return Outcome(known=True, failed=False, phase="none", **common)
    return Outcome(
        known=True,
        failed=True,
        phase=phase,
        category=first.get("category"),
        rule=first.get("rule"),
        message=first.get("message") or first.get("text"),
        file=first.get("file"),
        line=first.get("line"),
        text=first.get("text"),
        **common,
    )


@dataclass(frozen=True)
class FailureComparison:
    conclusion: str
    similarity: float | None
    message: str
    advice: str

    def to_json(self) -> dict[str, Any]:
        return {
            "conclusion": self.conclusion,
            "similarity": None if self.similarity is None else round(self.similarity, 3),
            "message": self.message,
            "advice": self.advice,
        }


def compare_outcomes(
    a: Outcome,
    b: Outcome,
    threshold: float,
    changed: list[str],
    removed: list[str],
    labels: tuple[str, str] = ("A", "B"),
) -> FailureComparison:
    """`changed`: labels of the variables that changed from a to b; `removed`: those of them that b
    dropped or switched off (production parameters taken away)."""
    la, lb = labels
    moved_what = ", ".join(changed) if changed else "nothing recorded"
    if not a.known or not b.known:
        missing = " and ".join(label for label, o in ((la, a), (lb, b)) if not o.known)
        return FailureComparison(
            UNKNOWN,
            None,
            f"No log for {missing}: the failures cannot be compared.",
            "Add the server log (docker logs -t) to the bundle.",
        )
    if not a.failed and not b.failed:
        return FailureComparison(NONE, None, "Neither run failed.", "")
    if a.failed and not b.failed:
        advice = (
            "Compare the fingerprints instead of declaring it fixed: the failure went away with "
            f"{moved_what}."
        )
        if removed:
            advice += (
                f" It disappeared when production parameters were removed ({', '.join(removed)}): each names "
                "a variable to reintroduce separately, one per trial."
            )
        return FailureComparison(
            NO_LONGER, None, f"{la} failed in {a.phase} ({a.category}); {lb} does not fail.", advice
        )
    if not a.failed and b.failed:
        blame = (
            f"the one change ({changed[0]}) introduced it"
            if len(changed) == 1
            else "more than one variable changed, so it cannot be attributed"
            if changed
            else "nothing recorded changed: look at what the bundles do not capture"
        )
        return FailureComparison(
            NEW,
            None,
            f"{lb} fails in {b.phase} ({b.category}) where {la} did not: {blame}.",
            f"Go back to {la} (the last level that was stable) and reintroduce one variable at a time.",
        )
    score = similarity(a.signature or "", b.signature or "")
    if a.phase != b.phase:
        direction = (
            f"{lb} fails earlier: the change broke a lower layer"
            if phase_index(b.phase) < phase_index(a.phase)
            else f"{lb} gets further: {la}'s failure is passed and the next one shows"
        )
        return FailureComparison(
            MOVED,
            score,
            f"The failure moved from {a.phase} ({a.category}) to {b.phase} ({b.category}): {direction}.",
            "Go back to the last level that was stable and change one variable at a time; this pair is not a "
            "reproduction of one failure.",
        )
    if score >= threshold:
        unmoved = f" What changed ({moved_what}) did not move it." if changed else ""
        return FailureComparison(
            SAME,
            score,
            f"Same failure in the same phase ({a.phase}, {a.category}).{unmoved}",
            "The reproduction is usable: attach the launch command, the fingerprint and the request.",
        )
    return FailureComparison(
        CHANGED,
        score,
        f"Same phase ({a.phase}) but the failure changed type: {a.category} → {b.category}.",
        "Go back to the last level that was stable; two different failures are not a reproduction series.",
    )
