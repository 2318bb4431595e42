"""What every fingerprint parser returns, and the paste clean-up they all share.

A parser receives the text of one file (never a path to open) and returns a ParseResult whose
keys are already the fingerprint contract's dotted names (`host.driver_version`, `arg.max_model_len`,
`env.NCCL_DEBUG`, …), each value a `Sourced` carrying the file and 1-based line it was read at.
Parsers never print and never raise on odd input: what they cannot read goes into `notes`
(e.g. "output cut after GPU 3: the Processes table is missing"), and outputs that *are* an error
report (nvidia-smi "No devices were found") become `problems` (core Findings).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from vllm_triage.core.finding import Finding
from vllm_triage.core.provenance import Provenance, Sourced
from vllm_triage.ingest.prefixes import strip_ansi


@dataclass
class ParseResult:
    kind: str  # the format that was recognised, e.g. "nvidia_smi.table"
    knobs: dict[str, Sourced] = field(default_factory=dict)
    facts: dict[str, Sourced] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    problems: list[Finding] = field(default_factory=list)

    def knob(self, name: str, value: Any, file: str, line: int | None, note: str | None = None) -> None:
        self.knobs[name] = Sourced(value, Provenance(file, line), note)

    def fact(self, name: str, value: Any, file: str, line: int | None, note: str | None = None) -> None:
        self.facts[name] = Sourced(value, Provenance(file, line), note)

    def merge(self, other: ParseResult) -> None:
        """Fold another result in; values already present win (first source read is kept)."""
        for name, value in other.knobs.items():
            self.knobs.setdefault(name, value)
        for name, value in other.facts.items():
            self.facts.setdefault(name, value)
        self.notes.extend(other.notes)
        self.problems.extend(other.problems)


@dataclass(frozen=True)
class PasteLine:
    number: int  # 1-based line number in the original file
    text: str


# `user@host:dir$ ` or `host:dir# `; `*` for GitHub's mask of an address-like user@host
# (`***@***.***:~$ `, launch/paste.py).
_PROMPT = re.compile(r"^\s*(?:\(\S+\)\s*)?(?:[\w.*-]+(?:@[\w.*-]+(?::[^\s$#]*)?|:[^\s$#]*)\s*)?[$#]\s+\S")
_EXIT_TRAILER = re.compile(r"^\s*\[(?:exit|exit code|rc)[ :=]*-?\d+\]\s*$", re.IGNORECASE)
_FENCE = re.compile(r"^\s*(```|~~~)")
_QUOTE = re.compile(r"^\s*>\s?")


def _one_line_code_span(line: str) -> str | None:
    """The text of ```` ```docker run …``` ````: an opening run of backticks closed again on the same
    line is no fence but an inline code span (CommonMark: a backtick fence's info string holds no
    backtick), the way READMEs and issues quote a one-line command on a line of its own
    (```` ```docker run --rm -p 8888:8888 IMAGE``` ````)."""
    stripped = line.strip()
    ticks = len(stripped) - len(stripped.lstrip("`"))
    if ticks < 3:
        return None
    body = stripped[ticks:]
    if len(body) <= ticks or not body.endswith("`" * ticks) or body[-ticks - 1] == "`":
        return None
    inner = body[:-ticks].strip()
    return inner if inner and "`" * ticks not in inner else None


def is_prompt(line: str) -> bool:
    """`line` starts with a shell prompt (`$ cmd`, `user@host:~$ cmd`, `root@h:/# cmd`)."""
    return _PROMPT.match(line) is not None


def _unquoted(line: str) -> str:
    while _QUOTE.match(line):
        line = _QUOTE.sub("", line, count=1)
    return line


def is_fence(line: str) -> bool:
    """`line` is a Markdown code fence (blockquoted or not) that clean_paste drops: not a
    one-line ```…``` code span, which it keeps as the span's text."""
    line = _unquoted(strip_ansi(line))
    return bool(_FENCE.match(line)) and _one_line_code_span(line) is None


def clean_paste(text: str, keep_prompts: bool = False) -> list[PasteLine]:
    """Lines of a pasted artefact with paste debris removed, original line numbers kept.

    Removes: markdown blockquote markers (`> `, nested too), code fences, ANSI colour codes,
    trailing `\\r`, a trailing `[exit N]` line, and (unless keep_prompts) shell prompt lines such
    as `$ nvidia-smi` or `user@host:~$ nvidia-smi -L` — the command that produced the output.
    """
    out: list[PasteLine] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _unquoted(strip_ansi(raw).rstrip("\r").replace("\x00", ""))
        if _FENCE.match(line):
            span = _one_line_code_span(line)
            if span is None:
                continue
            line = span
        if _EXIT_TRAILER.match(line):
            continue
        if not keep_prompts and _PROMPT.match(line):
            continue
        out.append(PasteLine(number, line))
    return out
