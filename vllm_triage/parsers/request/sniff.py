"""Is this text a request? A curl command carrying one, or a JSON object that is a completion
request body (not a response, a docker inspect or a server log that merely quotes a curl)."""

from __future__ import annotations

import json
import re
from typing import Any

from vllm_triage.ingest import prefixes
from vllm_triage.parsers.request.body import scalar_fields
from vllm_triage.parsers.request.paste import cleaned_text

MAX_DIRECTORY = 4096
_CURL_NAME = re.compile(r"curl(?:\.exe)?(?=\s|$)")
_WORD_START = re.compile(r"[\s|;&(]")


def _has_curl_word(line: str) -> bool:
    """`curl` as a command word (`curl`, `/usr/bin/curl`, `| curl`), found from the literal out.

    A pattern that tries every start position and rescans the token's directory part
    (`(?:\\S*/)?curl` after a delimiter) is quadratic on a long line of `(` or `/`; here each
    occurrence of the word is checked once, looking back only to the start of its token.
    """
    for match in _CURL_NAME.finditer(line):
        start = match.start()
        window = max(0, start - MAX_DIRECTORY)
        token_start = max((m.end() for m in _WORD_START.finditer(line, window, start)), default=None)
        if token_start is None:
            if window > 0:
                continue  # a "directory" longer than any path: not a command word
            token_start = 0
        prefix = line[token_start:start]
        if prefix == "" or prefix.endswith("/"):
            return True
    return False


_DOCKER_INSPECT_KEYS = {"Config", "HostConfig", "State", "GraphDriver", "NetworkSettings", "Mounts"}
_REQUEST_KEYS = {"messages", "prompt"}
_SAMPLING_KEYS = {"max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k", "stream", "n"}
# A server log line or a server launch: such a file is a log or a launch command, even with a curl in it.
_NOT_A_REQUEST = re.compile(
    rf"(?m)\b(?:{prefixes.LOGGER_HEAD}) \[?[\w./-]+\.py:\d+\]"
    # NAME=value assignments before the command, read deterministically (no name holds `=`, the
    # group never gives back): `\S+=\S+\s+` backtracked quadratically on a line of `\r`s or `=`s.
    r"|^[ \t]*(?:[^\s=]+=\S*[ \t]+)*+(?:vllm serve\b|python[\d.]* -m "
    r"vllm\.entrypoints|(?:docker|podman) run\b)"
)


def looks_like(text: str) -> bool:
    """A curl command carrying a request, or a JSON object that is a completion request body."""
    if not text or "\x00" in text[:4096]:
        return False
    cleaned = cleaned_text(text)
    stripped = cleaned.strip()
    if stripped.startswith("{"):
        return is_request_body(_load_json_prefix(stripped))
    if stripped.startswith("["):
        return False  # docker/podman inspect prints a list; a request body is an object
    if _NOT_A_REQUEST.search(cleaned):
        return False  # a log or a launch script that merely contains a curl line
    for line in cleaned.splitlines():
        if _has_curl_word(line) and not line.lstrip().startswith("#"):
            return "/v1/" in cleaned or bool(re.search(r"\s(?:-d|--data\S*|--json)\b", cleaned))
    return False


def is_request_body(obj: Any) -> bool:
    if not isinstance(obj, dict) or _DOCKER_INSPECT_KEYS & obj.keys():
        return False
    if isinstance(obj.get("body"), dict) and "url" in obj:  # a line of an OpenAI batch file
        return is_request_body(obj["body"])
    if "choices" in obj or str(obj.get("object", "")).startswith(("chat.completion", "text_completion")):
        return False  # a response, not a request
    if _REQUEST_KEYS & obj.keys():
        return True
    return "model" in obj and bool(_SAMPLING_KEYS & obj.keys())


def _load_json_prefix(text: str) -> Any:
    """The first JSON value of the text; for a truncated paste, the scalar fields that are readable."""
    try:
        value, _ = json.JSONDecoder().raw_decode(text)
        return value
    except (ValueError, RecursionError):  # RecursionError: JSON nested thousands deep (fuzz)
        return scalar_fields(text) or None
