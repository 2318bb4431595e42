"""Helpers the triage tests share: a log written where a test wants it, and its survived errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_log(tmp_path: Path, text: str, name: str = "server.log") -> Path:
    """`text` as the file `name` under `tmp_path` (UTF-8), for the CLI to read."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def survived(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The `survived-error` findings of a triage JSON."""
    return [f for f in data["findings"] if f["id"] == "survived-error"]
