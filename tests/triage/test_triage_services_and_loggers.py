"""Shapes real server logs take that the reading first missed: several compose services in one log,
Python loggers with ` | `-separated fields (FastChat, loguru) or a pid before the location, asyncio's
report of a future nobody awaited, a cut launcher line, a TPU plugin's worker frames. Each input is
written here after the public reports cited in the rules and prefixes; none is a copy of one.
"""

from __future__ import annotations

from pathlib import Path


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "server.log"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_launcher_line_cut_after_terminating_still_says_the_engine_died(tmp_path, triage_json):
    text = (
        "ERROR 05-17 03:12:44 async_llm_engine.py:61] RuntimeError: Engine loop has died\n"
        'INFO:     172.18.0.5:51344 - "GET /metrics HTTP/1.1" 200 OK\n'
        "CRITICAL 05-17 03:12:45 launcher.py:72] AsyncLLMEngine has failed, terminating\n"
    )
    data = triage_json(_write(tmp_path, text))
    assert data["first_error"]["message"] == "RuntimeError: Engine loop has died"
    # The engine was serving when it died: the cut line is the consequence that says so.
    assert data["phase"] == "request"
