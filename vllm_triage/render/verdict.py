"""The verdict of a triage in words, shared by the text, Markdown and HTML renderings so all three
say the same thing in the same order: the headline, the decisive fix, then the findings by severity.

Why a module of its own: the headline is the one line a person reads; it has to be right for a
failure, a hang, a healthy run and a partial paste alike, and the three renderings must not drift.
"""

from __future__ import annotations

from typing import Any

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
# Findings that repeat the headline (the root cause's own explanation and advice).
_ROOT_FINDING_PREFIX = "root-cause."


def _lower_first(text: str) -> str:
    """`The KV cache …` → `the KV cache …`, `A file …` → `a file …`; `CUDA error …` and
    `ValueError: …` stay as they are."""
    word = text.split(" ", 1)[0]
    if word[:1].isupper() and (len(word) == 1 or word[1:].islower()):
        return text[0].lower() + text[1:]
    return text


_ABBREVIATIONS = ("e.g", "i.e", "etc", "vs", "cf", "approx")


def first_sentence(text: str) -> str:
    """Up to the first full stop that ends a sentence (a headline is one sentence; the rest is
    shown under the error): not the one of `e.g.`, nor one inside brackets."""
    start = 0
    while (cut := text.find(". ", start)) != -1:
        head = text[:cut]
        closed = head.count("(") == head.count(")") and head.count("[") == head.count("]")
        if closed and not head.lower().endswith(_ABBREVIATIONS):
            return head
        start = cut + 2
    return text.rstrip(".")


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def served(data: dict[str, Any]) -> str | None:
    """`served 40,112 requests (3 failed)` from the request counts, when they were read."""
    req = data.get("requests")
    if not req:
        return None
    answered = (req.get("ok") or 0) + (req.get("failed") or 0)
    total = max(answered, req.get("received") or 0)
    if total == 0:
        return "no request was seen in the log"
    text = f"served {_count(total, 'request')}"
    if req.get("failed"):
        text += f" ({req['failed']:,} answered with an error status)"
    return text


def headline(data: dict[str, Any]) -> str:
    """The verdict in one sentence."""
    fe = data.get("first_error")
    phase = data.get("phase")
    if fe:
        kind = fe.get("kind")
        if kind == "hang":
            return f"hung in {phase}: {data.get('phase_reason')}"
        what = fe.get("explain") or fe.get("message") or fe.get("category") or "an error"
        what = _lower_first(first_sentence(what.strip()) if fe.get("explain") else what.strip())
        if kind == "consequence_only":
            return f"failed in {phase}: {what} (only its consequences are in the log; the cause is not)"
        if kind == "warning":
            return f"warning in {phase}: {what}"
        return f"failed in {phase}: {what}"
    if not data.get("milestones"):
        return "no failure found, and no start-up milestone either: is this the whole log?"
    if data.get("ready"):
        told = served(data)
        if told is None:
            return "no failure: the server started and was ready"
        if told.startswith("no request"):
            return f"no failure: ready; {told}"
        return f"no failure: ready and {told}"
    return f"no failure: {data.get('phase_reason') or 'no error found'}"


def decisive_fix(data: dict[str, Any]) -> str | None:
    """The one thing to do first: the root cause's advice, else the known issue's workaround, else
    the advice of the most severe finding."""
    fe = data.get("first_error")
    if fe and fe.get("advice"):
        return str(fe["advice"])
    known = data.get("known_issue")
    if known and known.get("workaround"):
        return str(known["workaround"])
    # Else an error finding's advice (the environment contradicts itself), else the method's next
    # step for the phase; never a warning's: pinning a revision does not fix a crash.
    findings = sorted_findings(data, keep_root=True)
    for finding in findings:
        if finding.get("advice") and finding.get("severity") == "error":
            return str(finding["advice"])
    if fe:
        for finding in findings:
            if finding.get("advice") and finding.get("id") == "next-step":
                return str(finding["advice"])
    return None


def sorted_findings(data: dict[str, Any], keep_root: bool = False) -> list[dict[str, Any]]:
    """Findings error > warning > info, in the analysis's order within a severity; without the
    root cause's own finding (the headline and the fix already say it) unless `keep_root`."""
    fe = data.get("first_error") or {}
    out = []
    for finding in data.get("findings") or []:
        repeats = (
            finding.get("id", "").startswith(_ROOT_FINDING_PREFIX)
            and finding.get("advice") == fe.get("advice")
            and finding.get("message") == fe.get("explain")
        )
        if keep_root or not repeats:
            out.append(finding)
    return sorted(out, key=lambda f: SEVERITY_ORDER.get(f.get("severity", "info"), 3))


def milestone_summary(data: dict[str, Any]) -> str:
    """`reached … → kv_cache; never reached: cuda_graphs`, or what a partial paste has."""
    names = [m["marker"] for m in data.get("milestones") or []]
    if not names:
        return "no start-up milestone in the input (a partial log or a paste of the error only)"
    text = "reached " + " → ".join(names)
    missing = data.get("first_missing_milestone")
    if missing and data.get("first_error"):
        text += f"; never reached: {missing}"
    return text


def phase_line(data: dict[str, Any]) -> str:
    """`phase engine_reserve: <why>`, with how sure that is when it is not certain, and the phase
    it may be instead (phase_confidence / phase_alternative, when the analysis gives them)."""
    text = f"phase {data.get('phase')}: {data.get('phase_reason')}"
    confidence = data.get("phase_confidence")
    alternative = data.get("phase_alternative")
    if confidence and confidence != "high":
        text += f" ({confidence} confidence" + (f"; else {alternative})" if alternative else ")")
    elif alternative:
        text += f" (else {alternative})"
    return text
