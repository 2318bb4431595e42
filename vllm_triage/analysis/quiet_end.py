"""A failure with no error of its own: the engine died without a traceback (only other processes'
consequences follow), or the log stops mid-start-up (a hang). Either way the failure is in the step
after the last milestone reached (DESIGN §3)."""

from __future__ import annotations

from vllm_triage.analysis.fatality import FatalityJudge
from vllm_triage.analysis.model import ErrorBlock, Milestone, Row
from vllm_triage.analysis.phase import PhaseDecision
from vllm_triage.analysis.root import Candidate
from vllm_triage.core.phases import NO_FAILURE
from vllm_triage.engine.rules import Rule


def died_silently(
    chosen: Candidate, milestones: list[Milestone], judge: FatalityJudge, stalled: bool = False
) -> tuple[ErrorBlock, PhaseDecision] | None:
    """Only consequences, during start-up: the process that failed printed nothing about it.

    The engine was killed from outside (OOM killer, a container limit) or crashed in native code;
    what is left is other processes noticing it was gone. As for a hang, the failure is in the step
    after the last milestone the engine reached (DESIGN §3), and the block points at that line.
    """
    before = [m for m in milestones if m.line < chosen.row.line]
    row = judge.last_startup_line(chosen.row.line)
    if not before or row is None:
        return None
    last = max(before, key=lambda m: m.line)
    row = judge.last_word_after(row, chosen.row.line)
    block = ErrorBlock(
        row=row,
        start=row.line,
        end=row.line,
        lines=[row.raw],
        rows=[row],
        rule=last.rule,
        category="process_died_without_traceback",
        phase=last.phase,
        explain=(
            f"The engine stopped after {last.name} (line {last.line}) without printing an error; the "
            f"later errors (line {chosen.row.line}: {chosen.row.message[:100]}) only report that it was gone."
        ),
        advice=(
            "It was killed from outside or crashed in native code: check the container's exit code (137 = "
            "SIGKILL), `dmesg` / the orchestrator's events for the OOM killer and the container "
            "memory limit, "
            "and the kernel log for Xid errors."
        ),
        kind="died",
    )
    if stalled:
        # Still alive, waiting (the API server polling the engine, a broadcast nobody picks up):
        # a hang in the step after the last milestone, with the waiting lines as its symptom.
        block.category, block.kind, block.explain, block.advice = "hang", "hang", "", ""
    reason = (
        f"only consequences follow milestone {last.name} (line {last.line}): the step after it never finished"
    )
    return block, PhaseDecision(last.phase, reason, "medium")


def hang(
    milestones: list[Milestone],
    judge: FatalityJudge,
    ready_line: int | None,
    stop: int | None,
    rules: dict[str, Rule],
    order: list[str],
) -> tuple[ErrorBlock | None, PhaseDecision]:
    """No error: a log that stops mid-startup (or is stopped by a signal there) is a hang; so is a
    serving engine whose last stats heartbeats show running requests and no progress."""
    if ready_line is not None:
        return _stalled_serving(judge)
    if not milestones:
        return None, PhaseDecision(NO_FAILURE, "no error found", "high")
    startup_done = any(rules[m.rule].startup_done for m in milestones)
    if startup_done and stop is None:
        stuck = judge.offline_progress_stuck()
        if stuck is not None:
            # An offline run (LLM.generate: no API server, so no "ready") whose log ends on its
            # progress bar short of the total: the first batch never finished (vllm#16301, #1673).
            bar, done, total = stuck
            where = judge.last_startup_line() or bar
            reason = (
                f"start-up completed, then the log ends on the offline progress bar at {done}/{total} "
                f"(line {bar.line}): generation never finished"
            )
            block = _hang_block(where, where.marker or milestones[-1].rule, "request")
            return block, PhaseDecision("request", reason, "medium")
        return None, PhaseDecision(NO_FAILURE, "start-up completed with no error", "high")
    # The furthest step reached in vLLM's order (what first_missing names), not the last line: a
    # step's line printed late (V1 logs the attention backend inside load_model) is no step back.
    last = max(milestones, key=lambda m: (order.index(m.name) if m.name in order else -1, m.line))
    row = judge.last_startup_line(stop) or judge.last_startup_line()
    assert row is not None  # milestones were reached, so a milestone line exists
    phase = "engine_reserve" if startup_done else step_after(last, row, rules)
    milestone_row = row
    row = judge.last_word_after(row, stop)
    block = _hang_block(row, row.marker or last.rule, phase)
    reason = f"log stops after milestone {last.name} without an error"
    if phase != last.phase and not startup_done:
        reason += (
            f"; its line (line {milestone_row.line}) ends that step, "
            f"and the next one ({phase}) never reported"
        )
    if row is not milestone_row:
        reason += f"; the last line it logged is line {row.line}"
    return block, PhaseDecision(phase, reason, "medium")


def _stalled_serving(judge: FatalityJudge) -> tuple[ErrorBlock | None, PhaseDecision]:
    stalled = judge.stalled_serving()
    if stalled is None:
        return None, PhaseDecision(NO_FAILURE, "no error found", "high")
    row, beats, running = stalled
    block = _hang_block(row, row.marker or "", "request")
    reason = (
        f"the engine stopped making progress while serving: from line {row.line}, {beats} stats "
        f"heartbeats to the end of the log report up to {running} running requests and 0 tokens/s"
    )
    return block, PhaseDecision("request", reason, "medium")


def _hang_block(row: Row, rule: str, phase: str) -> ErrorBlock:
    """A hang's block: the one line where the process stood when it went quiet."""
    return ErrorBlock(
        row=row,
        start=row.line,
        end=row.line,
        lines=[row.raw],
        rule=rule,
        category="hang",
        phase=phase,
        explain="",
        advice="",
        kind="hang",
    )


def step_after(last: Milestone, row: Row, rules: dict[str, Rule]) -> str:
    """The phase of the step running once `row`, the last start-up line printed, was printed.

    A marker's phase is the step in progress after it; a line that closes its step (the rank
    assignment that ends distributed init, the parsed arguments) names the step that follows in
    its rule's `step_after`. Only when that line is of the furthest step reached: a step's line
    printed late (another process, V1's attention backend inside load_model) is no step back.
    """
    rule = rules.get(row.marker) if row.marker else None
    if rule is None or rule.milestone != last.name:
        return last.phase
    return str(rule.extra.get("step_after", last.phase))
