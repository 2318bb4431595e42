"""Environment of a run: env files and the output of `env` / `printenv` / `export -p`.

Accepted shapes (one assignment per line, names as the shell spells them):

    # shell / dotenv style                  # docker --env-file style
    export HF_HOME=/data/hf                 NCCL_DEBUG=INFO
    VLLM_LOGGING_LEVEL="DEBUG"  # temp      HF_TOKEN            <- value taken from the host
    CUDA_VISIBLE_DEVICES='0,1'
    EMPTY=
    declare -x PATH="/usr/bin:/bin"          (`export -p` output)

Every variable becomes the knob `env.<NAME>` with the line it was set on. Values of variables whose
name marks a secret (token, key, password…) are recorded like any other (the redaction layer
decides what to show) but never appear in notes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vllm_triage.core.roles import Role
from vllm_triage.ingest import prefixes
from vllm_triage.parsers.base import ParseResult, PasteLine, clean_paste
from vllm_triage.parsers.registry import parser

KIND_FILE = "env_file.assignments"
KIND_OUTPUT = "env_file.env_output"

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_ASSIGNMENT = re.compile(
    rf"^\s*(?P<export>export\s+|declare\s+-x\s+|setenv\s+)?(?P<name>{_NAME})=(?P<value>.*)$"
)
# docker --env-file: a bare upper-case name passes the host's value through.
_BARE_NAME = re.compile(r"^\s*(?:export\s+)?(?P<name>[A-Z_][A-Z0-9_]*)\s*$")
_COMMENT = re.compile(r"^\s*#")
_INLINE_COMMENT = re.compile(r"(?<=\s)#")
_PROGRAM_LINE = re.compile(
    r"^\s*(?:sudo\s+)?(?:python[\d.]*|vllm|docker|podman|kubectl|uv|conda|torchrun|ray|bash|sh|nohup|curl)\b(?!=)"
)
# The word after an env prefix that makes the line a command (`NCCL_DEBUG=INFO vllm serve …`).
_PROGRAM_WORD = re.compile(
    r"^(?:\S*/)?(?:python[\d.]*|vllm|docker|podman|uv|uvx|conda|torchrun|accelerate|ray|exec|nohup"
    r"|bash|sh|curl|env|sudo|time|\S+\.sh|\S+\.py)$"
)
_VLLM_LOG = re.compile(rf"\b(?:{prefixes.LOGGER_HEAD}) \[?[\w./-]+\.py:\d+\]")
# Whole words of the name: HF_TOKEN and AWS_SECRET_ACCESS_KEY are secrets, MAX_TOKENS and
# TOKENIZERS_PARALLELISM are not.
_SECRET_WORDS = {
    "SECRET",
    "TOKEN",
    "KEY",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "CREDENTIALS",
    "PRIVATE",
    "AUTH",
    "APIKEY",
    "PAT",
}
_NAME_WORDS = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|\d+")
# Variables every login shell / container has: their presence marks `env` output, not a file.
_SHELL_VARS = ("PATH", "HOME", "HOSTNAME", "SHLVL", "PWD", "TERM", "_")


def is_secret_name(name: str) -> bool:
    """True when the variable name says it holds a credential (its value must never be echoed)."""
    return any(word.upper() in _SECRET_WORDS for word in _NAME_WORDS.findall(name))


def looks_like(text: str) -> bool:
    """True when most meaningful lines are `NAME=value` assignments and none is a command; or,
    for a document (a README, an issue), when its code blocks hold assignments only: the env file
    it shows, between sentences about it."""
    if not text or "\x00" in text[:4096]:
        return False
    if _assignments_only(clean_paste(text)):
        return True
    if _VLLM_LOG.search(text[:65536]) or "Traceback (most recent call last)" in text[:65536]:
        return False  # an issue with its log: the log is what it is for
    blocks = _fenced_blocks(text)
    return bool(blocks) and all(_assignments_only(block) for block in blocks)


_FENCE = re.compile(r"^\s*(?:```|~~~)")


def _fenced_blocks(text: str) -> list[list[PasteLine]]:
    """The lines of each fenced code block of a markdown text (none for a text without fences)."""
    blocks: list[list[PasteLine]] = []
    current: list[PasteLine] | None = None
    for number, line in enumerate(text.splitlines()[:2000], start=1):
        if _FENCE.match(line):
            if current is None:
                current = []
            else:
                blocks.append(current)
                current = None
        elif current is not None:
            current.append(PasteLine(number, line))
    return blocks


def _assignments_only(pasted: list[PasteLine]) -> bool:
    lines = [pl.text for pl in pasted if pl.text.strip() and not _COMMENT.match(pl.text)]
    if not lines or lines[0].lstrip().startswith(("{", "[", "---")):
        return False
    assignments = 0
    for line in lines:
        if _VLLM_LOG.search(line) or _PROGRAM_LINE.match(line) or line.rstrip().endswith(("\\", "`")):
            return False
        if _ASSIGNMENT.match(line):
            if _is_command_line(line):
                return False
            assignments += 1
        elif _BARE_NAME.match(line):
            assignments += 1
    # `env` output may carry a few continuation lines of multi-line values; tolerate 1 in 5.
    return assignments >= 1 and assignments * 5 >= len(lines) * 4


def _is_command_line(line: str) -> bool:
    """`FOO=1 BAR=2 python …` — assignments followed by a word that is not a comment."""
    match = _ASSIGNMENT.match(line)
    if match is None:
        return False
    value = match.group("value")
    quote = value[:1]
    if quote in ("'", '"'):
        end = _closing_quote(value[1:], quote)
        if end < 0:
            return False  # a multi-line quoted value, not a command
        following = value[end + 2 :].split()
        # After a quoted value any word that is neither a comment nor another assignment runs a program.
        return bool(following) and not following[0].startswith("#") and not _ASSIGNMENT.match(following[0])
    # Unquoted values in `env` output may contain spaces (`LESSOPEN=| lesspipe %s`), so only a
    # following program-looking word or flag makes it a command.
    words = value.split()
    if len(words) < 2:
        return False
    rest = words[1:]
    while rest and _ASSIGNMENT.match(rest[0]) and len(rest) > 1:
        rest = rest[1:]  # further prefixes: `A=1 B=2 python …`
    return bool(_PROGRAM_WORD.match(rest[0])) or any(word.startswith("--") for word in rest)


@dataclass
class _Assignment:
    name: str
    value: str | None  # None: docker pass-through of the host's value
    line: int
    quoted: bool
    exported: bool


@parser(Role.ENVIRONMENT, looks_like=looks_like, sniff=60)
def parse(text: str, file: str) -> ParseResult:
    """Read every variable of an env file or `env` output as knob `env.<NAME>`."""
    lines = clean_paste(text or "")
    output_style = _is_env_output(lines)
    result = ParseResult(kind=KIND_OUTPUT if output_style else KIND_FILE)
    assignments = _read_assignments(lines, output_style, result, file)
    _record(assignments, result, file)
    if not assignments:
        result.notes.append(f"{file}: no NAME=value assignment found")
    return result


def _is_env_output(lines: list[PasteLine]) -> bool:
    """`env`/`printenv` output: shell variables, no comments, no `export`, no quoting."""
    names = set()
    for pl in lines:
        if _COMMENT.match(pl.text) or pl.text.lstrip().startswith(("export ", "declare ")):
            return False
        match = _ASSIGNMENT.match(pl.text)
        if match:
            names.add(match.group("name"))
    return sum(name in names for name in _SHELL_VARS) >= 2


def _read_assignments(
    lines: list[PasteLine], output_style: bool, result: ParseResult, file: str
) -> list[_Assignment]:
    found: list[_Assignment] = []
    index = 0
    while index < len(lines):
        pl = lines[index]
        index += 1
        text = pl.text
        if not text.strip() or _COMMENT.match(text):
            continue
        match = _ASSIGNMENT.match(text)
        if match:
            value, quoted, consumed = _value_of(match.group("value"), lines, index, output_style)
            index += consumed
            exported = bool(match.group("export"))
            found.append(_Assignment(match.group("name"), value, pl.number, quoted, exported))
            continue
        bare = _BARE_NAME.match(text)
        if bare and not output_style:
            found.append(_Assignment(bare.group("name"), None, pl.number, False, False))
        elif output_style and found:
            # `env` prints multi-line values verbatim: this line continues the previous value.
            previous = found[-1]
            previous.value = f"{previous.value or ''}\n{text}"
        else:
            result.notes.append(f"{file}:{pl.number}: not a NAME=value line, skipped")
    return found


def _value_of(raw: str, lines: list[PasteLine], index: int, output_style: bool) -> tuple[str, bool, int]:
    """The value of one assignment: (value, was quoted, extra lines consumed by a quoted value)."""
    if output_style:
        return raw, False, 0  # `env` prints values raw; quotes there are part of the value
    stripped = raw.strip()
    quote = stripped[:1]
    if quote in ("'", '"'):
        # A quoted value may run over several lines (dotenv multi-line values).
        body, end, consumed = _quoted_lines(stripped[1:], lines, index, quote)
        inner = body if end < 0 else body[:end]
        if quote == '"':
            inner = re.sub(r'\\(["\\$`])', r"\1", inner)
        return inner, True, consumed
    # Unquoted: ` #` starts a comment in shells and dotenv files. Found by the `#` after a
    # space, not by splitting on `\s+#`, which rescans a run of spaces from each of them (fuzz:
    # 110 KB of tabs took over 10 s).
    comment = _INLINE_COMMENT.search(raw)
    return (raw[: comment.start()] if comment else raw).strip(), False, 0


def _quoted_lines(first: str, lines: list[PasteLine], index: int, quote: str) -> tuple[str, int, int]:
    """(body, index of its closing quote or -1, lines consumed) of a quoted value that may run on
    over `lines[index:]`. Each line is scanned once, from where the scan of the last stopped:
    rescanning the whole value for every added line was quadratic on a quote never closed
    (fuzz finding: 370 KB took over 10 s)."""
    pieces, before, position, consumed = [first], 0, 0, 0
    while True:
        piece, at = pieces[-1], position - before
        while at < len(piece):
            if piece[at] == "\\" and quote == '"':
                at += 2  # may step past the end: the escaped character is the next line's newline
                continue
            if piece[at] == quote:
                return "".join(pieces), before + at, consumed
            at += 1
        position = before + at
        if index + consumed >= len(lines):
            return "".join(pieces), -1, consumed
        before += len(piece)
        pieces.append("\n" + lines[index + consumed].text)
        consumed += 1


def _closing_quote(body: str, quote: str) -> int:
    """Index of the quote that closes the value, skipping backslash escapes inside double quotes."""
    position = 0
    while position < len(body):
        char = body[position]
        if char == "\\" and quote == '"':
            position += 2
            continue
        if char == quote:
            return position
        position += 1
    return -1


def _record(assignments: list[_Assignment], result: ParseResult, file: str) -> None:
    first_line: dict[str, int] = {}
    quoted_seen = False
    for item in assignments:
        note = "secret-like name: redact before sharing" if is_secret_name(item.name) else None
        if item.value is None:
            note = "value passed through from the host environment (docker --env-file bare name)"
            result.notes.append(
                f"{file}:{item.line}: {item.name} has no value here: docker --env-file takes it "
                "from the environment of the host that ran `docker run`"
            )
        if item.name in first_line:
            # Later assignments win in shells, dotenv and docker alike.
            result.notes.append(
                f"{file}: {item.name} is set on lines {first_line[item.name]} and {item.line}; "
                "the last one wins"
            )
        first_line.setdefault(item.name, item.line)
        quoted_seen = quoted_seen or item.quoted
        result.knob(f"env.{item.name}", item.value, file, item.line, note)
    if quoted_seen:
        result.notes.append(
            f"{file}: quoted values were unquoted; note that `docker run --env-file` keeps quotes "
            "literally (compose and shells strip them)"
        )
