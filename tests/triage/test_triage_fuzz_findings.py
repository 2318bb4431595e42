"""Inputs benchmarks/fuzz.py found crashing triage, kept as cases (built here, not copied)."""

from __future__ import annotations

import codecs
from pathlib import Path

LINE = (
    "ERROR 01-28 13:42:20 engine.py:135] RuntimeError: CUDA error: an illegal memory access was encountered\n"
)


def test_the_line_splitters_separator_inside_a_line_is_no_second_column(tmp_path: Path, triage_json) -> None:
    log = tmp_path / "unit-separator.log"
    log.write_bytes(b"INFO 01-28 13:42:19 api_server.py:585] a\x1fb\n" + LINE.encode())
    data = triage_json(log)
    assert data["first_error"]["message"].startswith("RuntimeError: CUDA error: an illegal memory access")


def test_nul_padding_before_a_utf16_bom_is_read(tmp_path: Path, triage_json) -> None:
    # copytruncate leaves NULs where the old content was; a PowerShell redirect writes UTF-16.
    log = tmp_path / "padded-utf16.log"
    log.write_bytes(b"\x00" * 4096 + codecs.BOM_UTF16_LE + LINE.encode("utf-16-le"))
    data = triage_json(log)
    assert data["first_error"]["message"].startswith("RuntimeError: CUDA error: an illegal memory access")
