"""Errors a process went past, beyond the fatality judge's milestones and answers (DESIGN §3:
the root is an error the process did not survive). Each helper reads only the candidates and
the lines around them; `analysis/triage.py` applies them in order."""

from __future__ import annotations

import re

from vllm_triage.analysis.blocks import StreamIndex, frames_above, headline_of
from vllm_triage.analysis.fatality import Survival
from vllm_triage.analysis.model import Row
from vllm_triage.analysis.root import Candidate

_REQUEST_HANDLER = re.compile(r"(?P<file>serving_\w+\.py):\d+$")


def answered_by_handler(candidate: Candidate) -> Survival | None:
    """vllm/entrypoints/openai/serving_*.py catch what one request raised, log it and answer that
    request with an error response: the server goes on. (A dead engine's errors logged there
    match consequence rules and are judged as such.) A device fault is not one request's: the
    handler relays the engine's exception (V0's AsyncLLMEngine hands what killed its loop to every
    request stream: vllm#13100's OOM under "Error in chat completion stream generator."), so only
    what the server did next can show it survived."""
    row = candidate.row
    if candidate.rule is not None and candidate.rule.extra.get("device_fault"):
        return None
    match = _REQUEST_HANDLER.search(row.source or "")
    if match is None:
        return None
    reason = (
        f"logged by the request handler {match.group('file')}, which answers that request with an error "
        "and goes on"
    )
    return Survival(row.line, reason)


# uvicorn's run_asgi (protocols/http/httptools_impl.py and h11_impl.py) catches what the app raised
# for one request, logs `Exception in ASGI application` with its traceback (or an `Exception Group
# Traceback` from starlette's middleware), answers 500 if nothing was sent yet, and serves the next
# request: vllm#5881, vllm#9096, vllm#11629 (500 after an image request), vllm#15164 (after a 400).
_ASGI_HEADLINE = "Exception in ASGI application"


def asgi_request_error(index: StreamIndex, row: Row, died: bool) -> Survival | None:
    """uvicorn's report of one request's exception (its headline, or the traceback's exception
    line under it): the server went on, unless the engine died right after. (A dead engine's
    EngineDeadError under the headline is a consequence and never reaches here.)"""
    if died:
        return None
    headline = row if row.message.strip() == _ASGI_HEADLINE else headline_of(index, row)
    if headline is None or headline.message.strip() != _ASGI_HEADLINE:
        return None
    reason = f"uvicorn reported one request's exception (line {headline.line}), answered it and went on"
    return Survival(row.line, reason)


def answers_to_survived_requests(
    consequences: list[Candidate], survived: list[tuple[Candidate, Survival]], index: StreamIndex
) -> list[Candidate]:
    """`consequences` without the 5xx access lines that answered a request whose exception
    uvicorn reported and went past: starlette's ServerErrorMiddleware sends the 500 (uvicorn logs
    its access line) and re-raises, so the line sits right above `Exception in ASGI application`
    (vllm#13978, vllm#11629, vllm#5881). It says no more than that request's error did."""
    headlines: set[int] = set()
    for candidate, _ in survived:
        row = candidate.row
        headline = row if row.message.strip() == _ASGI_HEADLINE else headline_of(index, row)
        if headline is not None and headline.message.strip() == _ASGI_HEADLINE:
            headlines.add(headline.line)
    if not headlines:
        return consequences
    return [
        c
        for c in consequences
        if not (
            c.rule is not None
            and c.rule.extra.get("http_answer")
            and any(r.line in headlines for r in index.neighbours(c.row, 1, _ANSWER_TO_HEADLINE_ROWS))
        )
    ]


_ANSWER_TO_HEADLINE_ROWS = 3


# Exceptions vLLM raises only for one request, which a server answers with a 4xx:
# vllm/exceptions.py (0.11+) "VLLMValidationError(VLLMClientError): vLLM-specific validation error
# for request validation failures" (VLLMClientError's subclasses are "caused by the client request
# (4xx)"), and vllm/entrypoints/chat_utils.py / renderers ChatTemplateResolutionError, raised by
# safe_apply_chat_template when a conversation is rendered and the tokenizer has no template.
_CLIENT_ERROR = re.compile(
    r"^(?:vllm\.[\w.]+\.)?(?:VLLM(?:Validation|NotFound|Client)Error|ChatTemplateResolutionError)\b"
)


def client_error_survived(row: Row, ready_line: int | None, lone: bool, died: bool) -> Survival | None:
    """An exception vLLM's own classes mark as one request's fault, in a server: raised after the
    server was ready, or logged as a lone line (no traceback: the handler caught it) with nothing
    dying after it. Then the server answered that request with a 4xx and went on. Uncaught in an
    offline caller it prints a traceback and ends that caller: still a root."""
    if not _CLIENT_ERROR.match(row.message.strip()):
        return None
    if ready_line is not None and row.line > ready_line:
        reason = "a client error by vLLM's own classes (answered with a 4xx) after the server was ready"
        return Survival(row.line, reason)
    if lone and not died:
        reason = "a client error by vLLM's own classes, logged alone (caught, answered with a 4xx)"
        return Survival(row.line, reason)
    return None


def lone_lines_gone_past(
    roots: list[Candidate], index: StreamIndex, survived: list[tuple[Candidate, Survival]]
) -> list[Candidate]:
    """Drop lone exception lines (no traceback above them) the same stream went past.

    Python prints an uncaught exception with its traceback; an exception line standing alone was
    reported by code that caught it (protobuf's `AttributeError: 'MessageFactory' object has no
    attribute 'GetPrototype'` at import, printed once per module). When the same stream later
    prints a full traceback of another error, the process did not die of the lone line."""
    has_frames = [bool(frames_above(index, c.row)) for c in roots]
    # Walking back: per stream, the nearest later traceback errors with distinct messages (two
    # are enough to find one that differs from any message).
    later: dict[tuple[str | None, int | None, int | None], list[Candidate]] = {}
    verdicts: list[Candidate | None] = [None] * len(roots)
    for i in range(len(roots) - 1, -1, -1):
        candidate = roots[i]
        stream = candidate.row.stream
        message = candidate.row.message.strip()
        if candidate.kind == "exception" and not has_frames[i]:
            verdicts[i] = next((o for o in later.get(stream, []) if o.row.message.strip() != message), None)
        if has_frames[i]:
            seen = later.setdefault(stream, [])
            if seen and seen[0].row.message.strip() == message:
                seen[0] = candidate  # the nearer of the two
            else:
                seen.insert(0, candidate)
                del seen[2:]
    kept: list[Candidate] = []
    for candidate, after in zip(roots, verdicts, strict=True):
        if after is not None:
            reason = (
                "a lone exception line; the process went on and failed with a traceback at line "
                f"{after.row.line}"
            )
            survived.append((candidate, Survival(after.row.line, reason)))
            continue
        kept.append(candidate)
    return kept


def warnings_gone_past(roots: list[Candidate]) -> tuple[list[Candidate], list[Candidate]]:
    """Rule-matched WARNING lines the same process went past to fail later.

    A warning is logged, not raised (`Failed to import from vllm._C with ImportError(…)` is caught
    in vllm/_custom_ops.py and the import goes on): when the same stream later fails, that failure
    is what the process did not survive and is the root (DESIGN §3). The warning often explains it,
    so it is kept for a finding rather than dropped."""
    failing_later: set[tuple[str | None, int | None, int | None]] = set()
    gone_past = [False] * len(roots)
    for i in range(len(roots) - 1, -1, -1):  # walking back: which streams fail after this line
        candidate = roots[i]
        if candidate.kind == "rule" and candidate.row.level == "WARNING":
            gone_past[i] = candidate.row.stream in failing_later
        elif candidate.row.level != "WARNING":
            failing_later.add(candidate.row.stream)
    kept = [c for c, past in zip(roots, gone_past, strict=True) if not past]
    warned = [c for c, past in zip(roots, gone_past, strict=True) if past]
    return kept, warned
