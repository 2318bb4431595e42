"""Which server each line of a multi-service compose log belongs to."""

from __future__ import annotations

from vllm_triage.analysis.model import Row
from vllm_triage.analysis.servers import servers


def _row(line: int, service: str | None, level: str | None = "INFO") -> Row:
    return Row(
        file="compose.log",
        line=line,
        raw="",
        message="m",
        level=level,
        process=None,
        pid=None,
        rank=None,
        source=None,
        vllm_ts=None,
        transport_ts=None,
        marker=None,
        cls=None,
        exc=False,
        tb=False,
        service=service,
    )


def test_lines_without_a_service_follow_the_line_before_them() -> None:
    rows = [
        _row(1, None, level=None),  # a header above every service's first line
        _row(2, "chat-large"),
        _row(3, "chat-small"),
        _row(4, None, level=None),  # an unprefixed traceback line of chat-small's
        _row(5, "chat-large"),
    ]
    got = {name: [r.line for r in group] for name, group in servers(rows)}
    assert got == {"chat-large": [1, 2, 5], "chat-small": [1, 3, 4]}


def test_a_service_that_never_logged_is_no_server() -> None:
    rows = [_row(1, "model", level=None), _row(2, "vllm-1"), _row(3, "vllm-1")]
    assert servers(rows) == [(None, rows)]
