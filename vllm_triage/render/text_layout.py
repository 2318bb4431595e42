"""Laying text out for a terminal: wrapping to a width with a hanging indent, keeping a line's own
leading whitespace (traceback indentation), and eliding the long install prefix of Python paths.

Why not textwrap alone: it counts characters, not terminal columns (a CJK character takes two),
and it would drop the indentation that makes a traceback readable.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any

from vllm_triage.ingest.prefixes import ANSI_RE as ANSI  # the tool's one pattern for terminal escapes

DEFAULT_WIDTH = 80
MIN_WIDTH = 40
# `/usr/local/lib/python3.12/dist-packages/vllm/…` → `…/vllm/…`: the install prefix is the same on
# every frame and says nothing about the failure (-v shows it).
_SITE = re.compile(r"""(?<=["'\s(])/[^"'\s]*?/(?:site|dist)-packages/""")


def columns(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def elide_paths(text: str) -> str:
    return _SITE.sub("…/", " " + text)[1:]


def _cut(text: str, room: int) -> tuple[str, str]:
    """Split `text` at the last space that leaves the head within `room` columns (or hard)."""
    used, last_space, cut = 0, -1, len(text)
    for i, ch in enumerate(text):
        used += 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        if used > room:
            cut = i
            break
        if ch == " ":
            last_space = i
    else:
        return text, ""
    if last_space > room // 3:
        return text[:last_space], text[last_space + 1 :]
    return text[:cut], text[cut:]


def wrap(text: str, width: int, indent: str = "", hang: str = "  ") -> list[str]:
    """`text` on lines of at most `width` columns: the first after `indent`, the rest after
    `indent + hang`. The text's own leading whitespace is kept on its first line."""
    text = ANSI.sub("", text).replace("\t", "    ").rstrip()
    body = text.lstrip(" ")
    first_indent = indent + " " * (len(text) - len(body))
    rest_indent = first_indent + hang
    out: list[str] = []
    prefix = first_indent
    while True:
        room = max(width - columns(prefix), 10)
        head, body = _cut(body, room)
        out.append(prefix + head.rstrip())
        body = body.lstrip(" ")
        if not body:
            return out
        prefix = rest_indent


def wrap_all(texts: list[str], width: int, indent: str = "", hang: str = "  ") -> list[str]:
    out: list[str] = []
    for text in texts:
        out.extend(wrap(text, width, indent, hang))
    return out


_VALUE_COLUMN = re.compile(r"^ *\S[^ ]*(?: [^ ]+)*? {2,}(?=\S)")


def rewrap(text: str, width: int) -> str:
    """Every line of a rendered text within `width` columns: a longer line is wrapped under its
    own indentation (+4, or +2 after a `- ` bullet). A line that fits is left as it is (colour
    included); a wrapped one loses its colour codes rather than have them split."""
    out: list[str] = []
    for line in text.split("\n"):
        plain = ANSI.sub("", line)
        if columns(plain) <= width:
            out.append(line)
            continue
        body = plain.lstrip(" ")
        indent = " " * (len(plain) - len(body))
        hang = "  " if body.startswith(("- ", "→ ", "* ")) else "    "
        # A table row (`label    value …`): continue under the value column, if it is not far right.
        column = _VALUE_COLUMN.match(plain)
        if column and len(column.group(0)) <= width // 2:
            hang = " " * (len(column.group(0)) - len(indent))
        out.extend(wrap(body, width, indent, hang))
    return "\n".join(out)


# The colour of a finding's severity label, in every text rendering.
SEVERITY_COLOUR = {"error": "red", "warning": "yellow", "info": "cyan"}


def finding_lines(finding: dict[str, Any], width: int, style: Callable[..., str]) -> list[str]:
    """`ERROR   id: message` wrapped under its label, the label coloured by its severity: how every
    text rendering heads a finding (its evidence and advice are each rendering's own)."""
    label = finding["severity"].upper()
    lines = wrap(f"{label:<8}{finding['id']}: {finding['message']}", width, "  ", "        ")
    fg = SEVERITY_COLOUR.get(finding["severity"], "white")
    lines[0] = "  " + style(label, fg=fg, bold=True) + lines[0][2 + len(label) :]
    return lines
