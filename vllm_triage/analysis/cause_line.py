"""Which line of an error block names the cause (DESIGN §3): `first_error` is that line, not a
logger's headline above it, a code line of the traceback, or a wrapper that carries the exception."""

from __future__ import annotations

import re

from vllm_triage.analysis.blocks import Block
from vllm_triage.analysis.model import Row
from vllm_triage.analysis.root import Candidate


def line_naming_the_cause(chosen: Candidate, block: Block, roots: list[Candidate]) -> Row:
    """DESIGN §3: first_error is the line that names the cause, not a headline or a code line.

    The most specific rule-matched line of the block wins (pydantic's `Value error, …` under
    `ValidationError: 1 validation error`); else the block's first exception line (the innermost
    cause of a chain is printed first); else the chosen line itself.
    """
    in_block = [
        c
        for c in roots
        if block.start <= c.row.line <= block.end and c.row.stream == chosen.row.stream and c.rule is not None
    ]
    if in_block:
        top = max(c.rule.priority for c in in_block if c.rule is not None)
        # On a tie the exception line wins over a logged line quoting it (`logger.exception` puts
        # str(e) in its headline: KServe's `Failed to start model server: CUDA out of memory…`).
        if (
            chosen.rule is None
            or top > chosen.rule.priority
            or (top == chosen.rule.priority and not chosen.row.exc)
        ):
            best = [c for c in in_block if c.rule is not None and c.rule.priority == top]
            return _raised_in_subprocess(min(best, key=lambda c: (not c.row.exc, c.row.line)).row, block)
    row = chosen.row
    if chosen.kind == "headline":
        exception = next((r for r in block.rows if r.exc and r.line > chosen.row.line), None)
        if exception is not None:
            row = exception
    row = _raised_in_subprocess(row, block)
    return _named_by_the_handler(_pydantic_body(_message_below(_unwrapped(row, block), block), block), block)


# vLLM inspects a model class in a child interpreter (`_run_in_subprocess` in
# model_executor/models/registry.py, 0.6.4 on) and, when the child fails, raises
# `RuntimeError(f"Error raised in subprocess:\n{stderr}")`: the child's own traceback is printed
# inside that message, and its last exception line (`ImportError: …`, `ModuleNotFoundError: …`,
# `AttributeError: …`) names the cause the logged headline `Error in inspecting model architecture`
# and the CalledProcessError above only carry (vllm#12823, #17031, #21935, #22376).
_SUBPROCESS_CARRIER = re.compile(r"\bError raised in subprocess:\s*$")


def _raised_in_subprocess(row: Row, block: Block) -> Row:
    carriers = (r for r in block.rows if r.line >= row.line and r.exc)
    carrier = next((r for r in carriers if _SUBPROCESS_CARRIER.search(r.message)), None)
    if carrier is None:
        return row
    inner = [r for r in block.rows if r.line > carrier.line and r.exc]
    return inner[-1] if inner else row


# An exception whose message begins with a newline prints its class alone on the line
# (`RuntimeError:`) and the message indented below it: multiprocessing's "An attempt has been made
# to start a new process before the current process has finished its bootstrapping phase" when a
# script starts vLLM without an `if __name__ == '__main__':` guard under spawn. The first line of
# that message names the cause.
_CLASS_ALONE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*:\s*$")


def _message_below(row: Row, block: Block) -> Row:
    if not _CLASS_ALONE.match(row.message.strip()):
        return row
    return next((r for r in block.rows if r.line > row.line and r.message.strip()), row)


# pydantic prints `ValidationError: N validation error(s) for ModelConfig`, then per error the
# field (none for a model validator) and the message of what the validator raised, as
# `  Value error, <str(e)> [type=value_error, …]` or `  Assertion failed, …`: that line names the
# cause whatever it says (DESIGN §3), so it is reported even when no rule knows its text.
_PYDANTIC_HEADLINE = re.compile(r"ValidationError: \d+ validation errors? for \w+")
_PYDANTIC_BODY = re.compile(r"^\s*(?:Value error|Assertion failed), \S")


def _pydantic_body(row: Row, block: Block) -> Row:
    if not _PYDANTIC_HEADLINE.search(row.message):
        return row
    return next((r for r in block.rows if r.line > row.line and _PYDANTIC_BODY.match(r.message)), row)


# A wrapper that names the exception it carries in its own class: Ray's
# `ray.exceptions.RayTaskError(TypeError): ray::RayWorkerWrapper.execute_method() …` is followed by
# the remote traceback, which ends with the carried `TypeError: …` line — the one naming the cause.
_CARRIER = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*\((?P<inner>[A-Z]\w*)\): ")


def _unwrapped(row: Row, block: Block) -> Row:
    carrier = _CARRIER.match(row.message.strip())
    if carrier is None:
        return row
    inner = re.compile(rf"^(?:[A-Za-z_]\w*\.)*{carrier.group('inner')}(?::|$)")
    carried = [r for r in block.rows if r.line > row.line and r.exc and inner.match(r.message.strip())]
    return carried[-1] if carried else row


# A bare lookup failure whose handler says what it was looking for: the innermost exception is a
# dict miss (`KeyError: 'gfx1101'`, `KeyError: 'qwen3'`) and the code that caught it raises again
# with a message naming that key (`KeyError: "Unknown GPU architecture: gfx1101. Supported …"` from
# aiter's get_gfx, ROCm/ROCm#5680; transformers' `ValueError: The checkpoint you are trying to load
# has model type `qwen3` but Transformers does not recognize this architecture` after AutoConfig's
# `KeyError: 'qwen3'`). The key alone names nothing; the next exception of the chain names the cause.
_BARE_KEY = re.compile(r"""^(?:[A-Za-z_]\w*\.)*KeyError: (?:'(?P<q1>[^']{1,200})'|"(?P<q2>[^"]{1,200})")$""")


def _named_by_the_handler(row: Row, block: Block) -> Row:
    bare = _BARE_KEY.match(row.message.strip())
    if bare is None:
        return row
    key = bare.group("q1") or bare.group("q2")
    handler = next((r for r in block.rows if r.line > row.line and r.exc), None)
    if handler is not None and key in handler.message and len(handler.message) > len(row.message):
        return handler
    return row
