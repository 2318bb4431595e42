"""An error quoted ahead of the log it came from (DESIGN §3: the root is an error the process did
not survive; order in a paste is not always time order).

Issue reports often open with the error line on its own and then paste "the full log", cut before
the traceback: `ValueError: Bfloat16 is only supported on GPUs … --dtype=half`, a blank line,
`detail log:`, then the start-up lines up to the engine banner. The fatality judge reads the
start-up lines after the error as the process going on past it; but a bare line with no logger
prefix, above every start-up line, cannot be placed in that process's time, and when that log then
stops without any error, the quoted line is the only cause in the input. It stands for the root
instead of a hang.
"""

from __future__ import annotations

from vllm_triage.analysis.blocks import StreamIndex, frames_above
from vllm_triage.analysis.fatality import FatalityJudge, Survival
from vllm_triage.analysis.model import Row
from vllm_triage.analysis.root import Candidate


def _unprefixed(row: Row) -> bool:
    """No logger prefix, timestamp or process tag: nothing ties the line to a moment of the log."""
    untagged = row.stream == (None, None, None)
    return untagged and row.level is None and row.source is None and row.timestamp is None


def quoted_ahead(
    survived: list[tuple[Candidate, Survival]], index: StreamIndex, judge: FatalityJudge
) -> Candidate | None:
    """The error quoted above a pasted log that then stops with no error, if there is one.

    Asked only when no root is left (the run would be called a hang). Only a line a rule knows the
    cause of qualifies (a generic exception line printed at import, such as protobuf's lone
    `AttributeError`, is no quote of the failure), standing alone (no traceback above it), with no
    start-up milestone before it, and judged survived only because start-up lines follow it: a
    server that became ready or served went on past it whatever the paste order."""
    if judge.ready_line is not None or not judge.markers:
        return None
    first_marker = judge.markers[0].row.line
    startup = {m.row.line for m in judge.markers if not m.serving}
    for candidate, survival in survived:
        row = candidate.row
        if candidate.kind != "rule" or candidate.rule is None or candidate.rule.kind != "error":
            continue
        if row.line >= first_marker or not _unprefixed(row) or row.tb:
            continue
        if survival.line not in startup or frames_above(index, row):
            continue
        return candidate
    return None
