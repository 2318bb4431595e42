"""How much of any one input vllm-triage is willing to read, in one place.

Every reader (files, stdin, archive members, nested .gz) counts against these numbers while it
reads, so a hostile or broken input stops with one clear error (`input-too-large`,
`archive-too-large`) instead of exhausting the machine. The CLI sets them from `--max-input`,
`--max-line` and `--max-members`; the defaults suit real bundles (a multi-GB log, a few thousand
artefacts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KiB, MiB, GiB = 1024, 1024**2, 1024**3


@dataclass
class Limits:
    # Bytes read from one input: stdin, one file, or all the inflated members of one archive.
    max_input: int = 8 * GiB
    # A longer line is cut to this many bytes (and the cut is reported): it is never a log line,
    # and it is what makes a backtracking pattern or a quadratic copy expensive.
    max_line: int = 1 * MiB
    # Entries of one archive or bundle folder (files, folders, links and devices alike).
    max_members: int = 10_000
    # A JSON or other whole-document artefact larger than this is not read (a JSON cut short
    # does not parse): one that large is never a docker inspect or a request.
    max_document: int = 64 * MiB
    # A compressed stream that inflates more than this many times its compressed size (past the
    # first RATIO_SLACK bytes, NUL padding not counted) is a compression bomb: logs compress
    # 10-30 to 1, a run of one byte 1000 to 1.
    max_ratio: int = 200


RATIO_SLACK = 64 * MiB


LIMITS = Limits()


def set_limits(
    max_input: int | None = None,
    max_line: int | None = None,
    max_members: int | None = None,
    max_ratio: int | None = None,
) -> None:
    """Change the process-wide limits (the CLI does it once, before any input is opened)."""
    if max_input is not None:
        LIMITS.max_input = max_input
    if max_line is not None:
        LIMITS.max_line = max_line
    if max_members is not None:
        LIMITS.max_members = max_members
    if max_ratio is not None:
        LIMITS.max_ratio = max_ratio


def reset_limits() -> None:
    defaults = Limits()
    for name in defaults.__dataclass_fields__:
        setattr(LIMITS, name, getattr(defaults, name))


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": KiB, "m": MiB, "g": GiB, "t": 1024 * GiB}


def parse_size(text: str) -> int:
    """`8G`, `512MiB`, `100k`, `4096` → bytes (binary units: a limit, not a disk label)."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a size (use a number with an optional K, M, G or T suffix)")
    value = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if value < 1:
        raise ValueError(f"{text!r} is too small")
    return int(value)


def human(n: int) -> str:
    """A byte count as the user would write it (the limits are powers of two)."""
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size:
            value = n / size
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"
