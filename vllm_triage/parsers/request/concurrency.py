"""How many requests ran at once, as a paste says it: a `# concurrency: N` comment or a fan-out
tool (`xargs -P 16`, `parallel -j 8`)."""

from __future__ import annotations

import re

from vllm_triage.parsers.base import ParseResult

_CONCURRENCY_COMMENT = re.compile(r"#.*?\bconcurren(?:cy|t)\b\D{0,12}(\d+)", re.IGNORECASE)


def read_concurrency(text: str, file: str, result: ParseResult) -> None:
    """Concurrency said by a comment or a fan-out tool (`xargs -P 16`, `parallel -j 8`)."""
    patterns = (
        _CONCURRENCY_COMMENT,
        re.compile(r"\bxargs\b[^|\n]*?(?:-P\s*|--max-procs[= ])(\d+)"),
        re.compile(r"\bparallel\b[^|\n]*?(?:-j\s*|--jobs[= ])(\d+)"),
    )
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            line = text.count("\n", 0, match.start()) + 1
            result.knob("request.concurrency", int(match.group(1)), file, line)
            return
