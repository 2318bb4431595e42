"""The command a pasted server log starts with: `$ vllm serve m …` (or `docker run …`) and then
what the server printed. The log is read as a log (the log parser's facts win); the lines above its
first log line are the launch that started it, and give what a log never prints: the launcher.

Outside the launch package, whose import (every launch shape, YAML) costs ≈ 60 ms: a log that
starts with a log line, nearly every one, never loads it."""

from __future__ import annotations

from vllm_triage.ingest import prefixes

# How far down the first log line may be: a command and a few lines of output or prose above it.
# A file with no log line this near its start is no "command, then its log".
_HEAD_LINES = 50
_HEAD_CHARS = 64 * 1024


def command_before_log(text: str) -> str | None:
    """The text above the first log line (line numbers kept: it is a prefix of `text`), when it
    holds a vLLM launch; else None."""
    head: list[str] = []
    for line in text[:_HEAD_CHARS].splitlines()[:_HEAD_LINES]:
        parts = prefixes.split_line(line)
        if parts.logger is not None or parts.process is not None or parts.message.startswith("Traceback ("):
            break
        head.append(line)
    else:
        return None
    joined = "\n".join(head) + "\n"
    if not joined.strip():
        return None
    from vllm_triage.parsers.launch.session import shell_launches

    launches, _, _ = shell_launches(joined, sniff=True)
    return joined if launches else None
