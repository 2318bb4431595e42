"""The headline and the fix as sentences: what they say for the cases the samples do not cover."""

from __future__ import annotations

from typing import Any

from vllm_triage.render.verdict import decisive_fix, first_sentence, headline, milestone_summary


def _triage(**kw: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "phase": "engine_reserve",
        "phase_reason": "the traceback passes through _dummy_run()",
        "milestones": [{"marker": "weights_loaded"}],
        "first_missing_milestone": "kv_cache",
        "ready": False,
        "requests": None,
        "first_error": {
            "kind": "root",
            "message": "zmq.error.ZMQError: Operation not supported",
            "explain": "",
            "advice": "",
        },
        "known_issue": None,
        "findings": [],
    }
    data.update(kw)
    return data


WARNING = {
    "id": "model-mutable-reference",
    "severity": "warning",
    "message": "m",
    "advice": "Pin it with --revision",
}
NEXT = {"id": "next-step", "severity": "info", "message": "m", "advice": "Change one setting per trial"}
ERROR = {"id": "driver-too-old-for-cuda", "severity": "error", "message": "m", "advice": "Upgrade the driver"}


def test_a_warning_s_advice_is_never_the_fix_of_a_crash() -> None:
    assert decisive_fix(_triage(findings=[WARNING, NEXT])) == "Change one setting per trial"
    assert decisive_fix(_triage(findings=[WARNING])) is None
    assert decisive_fix(_triage(findings=[WARNING, NEXT, ERROR])) == "Upgrade the driver"


def test_the_rule_s_advice_and_then_the_known_issue_come_first() -> None:
    fe = {"kind": "root", "message": "x", "explain": "y", "advice": "Lower --max-model-len"}
    assert decisive_fix(_triage(first_error=fe, findings=[ERROR])) == "Lower --max-model-len"
    known = {"id": "k", "title": "t", "workaround": "Use the -cu129 image"}
    assert decisive_fix(_triage(known_issue=known, findings=[ERROR])) == "Use the -cu129 image"


def test_headline_without_an_explanation_quotes_the_error() -> None:
    assert headline(_triage()) == "failed in engine_reserve: zmq.error.ZMQError: Operation not supported"


def test_headline_of_a_hang_and_of_consequences_only() -> None:
    hang = _triage(
        first_error={"kind": "hang"}, phase_reason="log stops after milestone kv_cache without an error"
    )
    assert headline(hang) == "hung in engine_reserve: log stops after milestone kv_cache without an error"
    only = _triage(first_error={"kind": "consequence_only", "explain": "The engine core died."})
    assert headline(only).startswith("failed in engine_reserve: the engine core died (only its consequences")


def test_healthy_runs_say_what_they_served() -> None:
    ready = _triage(first_error=None, ready=True, milestones=[{"marker": "ready"}])
    assert headline({**ready, "requests": {"ok": 40112, "failed": 0, "received": 0}}) == (
        "no failure: ready and served 40,112 requests"
    )
    assert headline({**ready, "requests": {"ok": 0, "failed": 0, "received": 0}}) == (
        "no failure: ready; no request was seen in the log"
    )
    assert headline({**ready, "requests": None}) == "no failure: the server started and was ready"


def test_first_sentence_keeps_abbreviations_and_brackets_whole() -> None:
    text = "The build has no kernels for this GPU (e.g. a new sm_120 card). Use a newer image."
    assert first_sentence(text) == "The build has no kernels for this GPU (e.g. a new sm_120 card)"
    assert first_sentence("One. Two.") == "One"
    assert first_sentence("No stop at all") == "No stop at all"


def test_a_paste_with_no_milestone_says_so_and_names_no_missing_step() -> None:
    paste = _triage(milestones=[], first_missing_milestone="platform")
    assert "platform" not in milestone_summary(paste)
    assert headline(_triage(first_error=None, milestones=[])).startswith("no failure found, and no start-up")


def test_the_phase_line_says_how_sure_it_is() -> None:
    from vllm_triage.render.verdict import phase_line

    sure = _triage(phase_confidence="high", phase_alternative=None)
    assert phase_line(sure) == "phase engine_reserve: the traceback passes through _dummy_run()"
    unsure = _triage(phase_confidence="low", phase_alternative="cuda_init")
    assert phase_line(unsure).endswith("(low confidence; else cuda_init)")
    assert phase_line(_triage(phase_confidence="medium")).endswith("(medium confidence)")
