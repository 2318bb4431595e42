"""Exceptions that carry their exit code, so commands stay thin and never print tracebacks.

Exit codes (documented in README and --help):
  0  success (triage: the input was analysed, whatever it found)
  1  check: the bundle is incomplete
  2  usage error (bad option or argument)
  3  diff/series: confounded comparison (more than one variable changed)
  4  input error: missing path, unreadable, empty, binary, not the expected format, corrupt archive
  70 internal error (a bug in vllm-triage; rerun with VLLM_TRIAGE_DEBUG=1 for the traceback)
  130 interrupted (Ctrl-C)
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """The documented exit codes; an IntEnum so `sys.exit(ExitCode.INPUT)` exits 4."""

    OK = 0
    INCOMPLETE = 1
    USAGE = 2
    CONFOUNDED = 3
    INPUT = 4
    INTERNAL = 70
    INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C


# One line on stderr stays one readable line: a message that quotes input (a pattern, a file
# name, a parser's complaint) is cut to this many characters.
MAX_MESSAGE_CHARS = 1000
MAX_QUOTED_CHARS = 200


def clip(text: str, limit: int = MAX_QUOTED_CHARS) -> str:
    """`text` cut to `limit` characters, saying how much was left out (for quoting a pattern)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


class TriageError(Exception):
    """Base class: a user-facing problem with a stable kebab-case id and a hint."""

    exit_code: ExitCode = ExitCode.INTERNAL
    problem_id = "internal-error"

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        text = f"vllm-triage: {self.problem_id}: {clip(self.message, MAX_MESSAGE_CHARS)}"
        if self.hint:
            text += f" ({clip(self.hint, MAX_MESSAGE_CHARS)})"
        return text.replace("\r", " ").replace("\n", " ")


class InputError(TriageError):
    """The input cannot be used: missing, unreadable, empty, binary, wrong format, corrupt."""

    exit_code = ExitCode.INPUT

    def __init__(self, problem_id: str, message: str, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.problem_id = problem_id


class RuleError(TriageError):
    """A rule file is invalid (does not parse, bad field, pattern does not compile)."""

    exit_code = ExitCode.INPUT
    problem_id = "invalid-rules"
