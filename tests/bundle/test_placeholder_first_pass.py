"""The whole-text first pass of the placeholder search (Rust engine, literals) agrees with Python's
engine on every shipped placeholder's examples, inside a log as long as a real one."""

from __future__ import annotations

import regex

from vllm_triage.bundle.check.checklist import checklist_data

LOG_LINES = [
    "(APIServer pid=1) INFO 08-07 12:23:21 [logger.py:43] Received request chatcmpl-1: params: x",
    '(APIServer pid=1) INFO:     10.0.1.2:5000 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "(EngineCore_0 pid=250) INFO 08-07 12:23:22 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0",
]


def _python(pattern: str, text: str) -> bool:
    return regex.compile(pattern, regex.MULTILINE).search(text) is not None


def test_first_pass_matches_python_on_every_example() -> None:
    background = "\n".join(LOG_LINES * 2000)
    placeholders = checklist_data().placeholders
    assert placeholders
    for placeholder in placeholders:
        for example in placeholder.must_match:
            text = f"{background}\n{example}\n{background}"
            assert placeholder.anywhere(text), (placeholder.id, example)
        for example in (*placeholder.must_match, *placeholder.must_not_match):
            text = f"{background}\r\n{example}\r\n{background}"
            assert placeholder.anywhere(text) or not _python(placeholder.pattern, text), (
                placeholder.id,
                example,
            )
        assert placeholder.anywhere(background) == _python(placeholder.pattern, background), placeholder.id
