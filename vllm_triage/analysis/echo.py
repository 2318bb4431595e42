"""An exception printed twice: once as Python printed it, then echoed by a logger.

`logger.exception(e)` prints `str(e)` — the message without the exception's class — and then the
traceback: V0's MQLLMEngine logs `ERROR … engine.py:389] Repo id must be in the form …` after the
same `HFValidationError: Repo id must be in the form …` already reached the output bare (another
writer of the stream, or a paste that starts inside the first print). The two lines are one
exception. When the first one was judged survived (start-up lines of a process starting came
between them), the echo proves it was not: the failure it reported is the one that ended the run,
and its first print — the line naming the class — is the root (DESIGN §3).
"""

from __future__ import annotations

import re

from vllm_triage.analysis.fatality import Survival
from vllm_triage.analysis.root import Candidate

# `pkg.mod.ClassName: message` (the class may be dotted; builtins have no dots).
_EXCEPTION = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*: (?P<body>.+)$")
# A paste or a log shipper may cut long lines at a fixed width: a prefix this long still says
# which message it is.
MIN_PREFIX = 60


def _body(message: str) -> str | None:
    match = _EXCEPTION.match(message.strip())
    return match.group("body").strip() if match else None


def _same_text(echo: str, body: str) -> bool:
    if echo == body:
        return True
    shorter, longer = sorted((echo, body), key=len)
    return len(shorter) >= MIN_PREFIX and longer.startswith(shorter)


def echoed_survivor(chosen: Candidate, survived: list[tuple[Candidate, Survival]]) -> Candidate | None:
    """The exception line, judged survived, whose message `chosen` (a later line) repeats
    without the class: the earliest such line, or None. (The same line with its class again is
    not an echo: per-request errors repeat that way, each one answered.)"""
    echo = chosen.row.message.strip()
    if not echo:
        return None
    for candidate, _ in sorted(survived, key=lambda pair: pair[0].row.line):
        row = candidate.row
        if row.line >= chosen.row.line or not row.exc:
            continue
        body = _body(row.message)
        if body is not None and _same_text(echo, body):
            return candidate
    return None
