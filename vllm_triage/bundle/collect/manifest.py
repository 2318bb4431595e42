"""Writing `bundle.toml` (tomllib only reads): the run table, one [[file]] per artefact with its
role, and one [[step]] per collection step. Only the value types the manifest uses are written."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _string(text: str) -> str:
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else "nan"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, Sequence):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to bundle.toml")


def _pairs(table: Mapping[str, object]) -> list[str]:
    # None means "not known": TOML has no null, so the key is left out.
    return [f"{key} = {_value(value)}" for key, value in table.items() if value is not None]


def dumps(
    run: Mapping[str, object],
    files: Sequence[Mapping[str, object]],
    steps: Sequence[Mapping[str, object]],
    header: str = "",
) -> str:
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    if lines:
        lines.append("")
    lines.append("[run]")
    lines.extend(_pairs(run))
    for name, tables in (("file", files), ("step", steps)):
        for table in tables:
            lines.append("")
            lines.append(f"[[{name}]]")
            lines.extend(_pairs(table))
    return "\n".join(lines) + "\n"
