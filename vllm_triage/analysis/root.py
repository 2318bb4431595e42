"""Tell the root error from its consequences.

Candidates, in line order: lines matched by an error rule, exception lines ending a traceback,
and logged headlines opening one (`logger.exception` prints str(e) first). Lines matched by a
noise or consequence rule are never candidates, nor is anything printed after a stop signal,
nor a traceback whose headline is noise (teardown, optional imports), nor a generic exception
in a WARNING-level record. The root is the earliest candidate; when there is none, the earliest
consequence stands in (and the report says only consequences were pasted), then a plain ERROR line
no rule knows, then a WARNING-level exception block; when the log would otherwise read as healthy,
a traceback the input ends in before its exception line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from vllm_triage.analysis.blocks import (
    FRAME_LINE,
    MAX_FORWARD_CHAIN,
    StreamIndex,
    frames_above,
    headline_of,
    is_chain_separator,
    is_traceback_part,
    next_in_stream,
)
from vllm_triage.analysis.model import Row
from vllm_triage.engine.rules import Rule

_FAILING_LEVELS = ("ERROR", "CRITICAL", None)


@dataclass
class Candidate:
    row: Row
    rule: Rule | None  # None for generic (structural) candidates
    kind: str  # rule | exception | headline | consequence | warning


def _kind_of(row: Row, rules: dict[str, Rule]) -> str | None:
    return rules[row.cls].kind if row.cls else None


def _rule_of(row: Row, rules: dict[str, Rule]) -> Rule:
    """The rule that classed a row (only asked of rows _kind_of found a kind for)."""
    assert row.cls is not None
    return rules[row.cls]


@dataclass
class Candidates:
    roots: list[Candidate]
    consequences: list[Candidate]
    plain_errors: list[Candidate]  # ERROR lines with no rule and no traceback
    warnings: list[Candidate]  # WARNING-level exception blocks
    cut: Candidate | None = None  # the input ends inside a traceback, above its exception line

    def drop_survived(self, survived: Callable[[Candidate], bool]) -> None:
        """Remove the errors the process went on after (DESIGN §3: the root is an error the process
        did not survive). Judged in line order, stopping at the first fatal one of each list: what
        follows a fatal error is never the root anyway, and judging it costs a block walk each."""
        for name in ("roots", "consequences", "plain_errors", "warnings"):
            kept: list[Candidate] = []
            candidates = getattr(self, name)
            for i, candidate in enumerate(candidates):
                if survived(candidate):
                    continue
                kept.extend(candidates[i:])
                break
            setattr(self, name, kept)

    def stand_in(self) -> tuple[Candidate | None, str]:
        """The best evidence when no root candidate exists, and what kind it is."""
        if self.consequences:
            # A process still alive saying it waits for another (a stall) only points at the one
            # it waits for; a later line saying that one died is the nearer evidence.
            reported = [c for c in self.consequences if not (c.rule and c.rule.extra.get("stall"))]
            return (reported or self.consequences)[0], "consequence_only"
        if self.plain_errors:
            return self.plain_errors[0], "plain_error"
        if self.warnings:
            return self.warnings[0], "warning"
        return None, ""


# torch (c10/cuda/CUDAException) writes a CUDA error's message on several lines: `CUDA error: <what
# the runtime says>`, then `Search for `cudaErrorX' in https://docs.nvidia.com/… for more
# information.`, then the asynchronous-report boilerplate. The second line is boilerplate (noise)
# under its exception line; a paste that starts below that line keeps it as the only text naming
# the error (`cudaErrorStreamCaptureUnsupported`, `cudaErrorIllegalAddress`).
_CUDA_ERROR_NAME = re.compile(r"^Search for .(?:cuda|hip)Error\w+. in https://")


def _cuda_error_cut_above(index: StreamIndex, row: Row) -> bool:
    if not _CUDA_ERROR_NAME.match(row.message):
        return False
    before = next(iter(index.neighbours(row, -1, 1)), None)
    return before is None or not (before.exc or "error" in before.message.lower())


def collect_candidates(
    rows: list[Row],
    rules: dict[str, Rule],
    index: StreamIndex,
    stop_line: int | None,
    teardown: frozenset[str] = frozenset(),
) -> Candidates:
    roots: list[Candidate] = []
    consequences: list[Candidate] = []
    plain_errors: list[Candidate] = []
    warnings: list[Candidate] = []
    for row in rows:
        if stop_line is not None and row.line >= stop_line:
            break
        if FRAME_LINE.match(row.message) or _is_source_code_line(index, row):
            # A frame (`File "…/pynccl_wrapper.py", line 277, in ncclCommInitRank`) names a
            # function, and the source line under it (`raise ValueError("No available memory…")`)
            # quotes an error: neither is one.
            continue
        kind = _kind_of(row, rules)
        if kind == "noise":
            if row.level in _FAILING_LEVELS and _cuda_error_cut_above(index, row):
                roots.append(Candidate(row, None, "exception"))
            continue
        if kind == "consequence":
            consequences.append(Candidate(row, _rule_of(row, rules), "consequence"))
            continue
        if (kind == "error" or row.exc) and _raised_in_teardown(index, row, teardown):
            # Raised while shutting down (destroy_process_group, __del__ …): a consequence.
            consequences.append(Candidate(row, _rule_of(row, rules) if kind == "error" else None, "teardown"))
            continue
        if kind == "error":
            if row.level == "WARNING" and _under_noise(index, row, rules):
                continue
            roots.append(Candidate(row, _rule_of(row, rules), "rule"))
            continue
        if row.exc:
            headline = headline_of(index, row)
            if headline is not None and _kind_of(headline, rules) == "noise":
                continue
            if row.level in _FAILING_LEVELS and (headline is None or headline.level in _FAILING_LEVELS):
                roots.append(Candidate(row, None, "exception"))
            elif row.level == "WARNING" or (headline is not None and headline.level == "WARNING"):
                warnings.append(Candidate(row, None, "warning"))
            continue
        if (
            row.level in ("ERROR", "CRITICAL", "WARNING")
            and not row.tb
            and row.message.strip()
            and not is_chain_separator(row.message)
        ):
            # `logger.exception` prefixes every line of a chained exception, the blank line and
            # "During handling of the above exception…" between its tracebacks too: neither is
            # a headline or an error of its own (a paste that starts there has only them).
            following = next_in_stream(index, row)
            if following is not None and following.tb:
                if _kind_of_raised(index, following, rules) in ("consequence", "noise"):
                    # `AsyncLLM output_handler failed.` over a traceback ending in EngineDeadError:
                    # the headline of a consequence is one too (its exception line is collected).
                    continue
                target = roots if row.level != "WARNING" else warnings
                target.append(Candidate(row, None, "headline" if row.level != "WARNING" else "warning"))
            elif row.level in ("ERROR", "CRITICAL") and row.message.strip() and not row.message[:1].isspace():
                plain_errors.append(Candidate(row, None, "plain_error"))
    # After a stop signal a cut traceback is the interrupted process's, not a failure.
    cut = cut_traceback(rows, index) if stop_line is None and rows else None
    cut_kind = _kind_of(cut.row, rules) if cut is not None else None
    if cut is not None and cut_kind in ("error", None):
        # The raise statement quotes the message: the rule that knows it places the block.
        cut.rule = _rule_of(cut.row, rules) if cut_kind == "error" else None
    else:
        cut = None
    return Candidates(roots, consequences, plain_errors, warnings, cut)


_RAISE = re.compile(r"^\s*raise\b")


def cut_traceback(rows: list[Row], index: StreamIndex) -> Candidate | None:
    """A paste that ends inside a traceback, before its exception line (DESIGN §3: the process
    died of it, so it is an error block, not a healthy log).

    Python prints the exception line last; a paste cut above it still holds the frames, and the
    source line of the innermost frame is the statement that raised (`raise RuntimeError("Failed
    to find C compiler. Please`). That line names what was raised: it stands for the exception
    line, classified by the rule its text matches. Only the last frames of a failing-level stream
    (ERROR / CRITICAL / unprefixed) count: a traceback that went on to an exception line, or a
    WARNING's, is judged as usual.
    """
    last = rows[-1]
    if (
        last.level not in _FAILING_LEVELS
        or last.exc
        or not (FRAME_LINE.match(last.message) or _is_source_code_line(index, last))
    ):
        return None
    if any(r.exc and r.stream == last.stream for r in rows):
        # The process printed an exception line elsewhere (a paste in reverse order, a second
        # traceback of the same error): that line is judged instead, survived or not.
        return None
    tail = [last, *index.neighbours(last, -1, CODE_LINES_PER_FRAME)]
    frame_at = next((i for i, r in enumerate(tail) if FRAME_LINE.match(r.message)), None)
    if frame_at is None:
        return None
    code = [r for r in tail[:frame_at] if r.message.strip() and not _CARET_LINE.match(r.message)]
    raised = next((r for r in code if _RAISE.match(r.message)), None)
    row = raised or (code[-1] if code else tail[frame_at])
    return Candidate(row, None, "cut")


CODE_LINES_PER_FRAME = 12
_CARET_LINE = re.compile(r"^\s*[\^~]+\s*$")


def _is_source_code_line(index: StreamIndex, row: Row) -> bool:
    """A traceback shows the source under each frame; it may quote an error message.

    Python 3.11+ prints the whole statement (several indented lines) and caret lines under it,
    so a code line is any indented line reached from a frame line through indented lines only.
    """
    if not row.message[:1].isspace():
        return False
    for previous in index.neighbours(row, -1, CODE_LINES_PER_FRAME):
        if FRAME_LINE.match(previous.message):
            return True
        if not previous.message[:1].isspace():
            break
    # A paste that starts inside a traceback begins on a code line with no frame above it: the
    # next frame line (or the carets under it) still says what it is.
    for following in index.neighbours(row, +1, CODE_LINES_PER_FRAME):
        if FRAME_LINE.match(following.message) or _CARET_LINE.match(following.message):
            return True
        if not following.message[:1].isspace():
            return False
    return False


def _kind_of_raised(index: StreamIndex, header: Row, rules: dict[str, Rule]) -> str | None:
    """The rule kind of the exception line that ends the traceback opened at `header`."""
    for candidate in index.neighbours(header, +1, MAX_FORWARD_CHAIN):
        if candidate.exc:
            return _kind_of(candidate, rules)
        if not is_traceback_part(candidate):
            return None
    return None


def _raised_in_teardown(index: StreamIndex, row: Row, teardown: frozenset[str]) -> bool:
    return bool(teardown) and any(function in teardown for function in frames_above(index, row))


def _under_noise(index: StreamIndex, row: Row, rules: dict[str, Rule]) -> bool:
    headline = headline_of(index, row)
    return headline is not None and _kind_of(headline, rules) == "noise"
