"""Where a value came from: every parsed fact carries the file and 1-based line it was read at."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Provenance:
    file: str
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line}

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True)
class Sourced:
    """A value with its provenance (a knob or a fact of the fingerprint)."""

    value: Any
    source: Provenance
    note: str | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "source": self.source.to_json()}
        if self.note:
            out["note"] = self.note
        return out
