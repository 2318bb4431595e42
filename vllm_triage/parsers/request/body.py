"""The knobs of one JSON request body (OpenAI chat/completions style), each with the line of its
key: model and sampling fields, the prompt's size, tools, and the other scalar fields as
`request.<field>`; for a body cut by a paste, the fields that are still readable."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from vllm_triage.parsers.base import ParseResult

# Body fields already mapped to their own knob name (or summarised) rather than copied as-is.
_SUMMARISED = {"messages", "prompt", "max_completion_tokens", "tools", "functions", "user"}


def record_body(obj: dict[str, Any], body_text: str, first_line: int, file: str, result: ParseResult) -> None:
    """Emit the request knobs of one body; `body_text` starts on `first_line` (for provenance)."""

    def key_line(key: str) -> int:
        return line_of(body_text, f'"{key}"', first_line)

    for key in ("model", "temperature", "top_p", "top_k", "stream", "n", "seed", "max_tokens"):
        if key in obj:
            result.knob(f"request.{key}", obj[key], file, key_line(key))
    if "max_tokens" not in obj and "max_completion_tokens" in obj:
        result.knob(
            "request.max_tokens",
            obj["max_completion_tokens"],
            file,
            key_line("max_completion_tokens"),
            "from max_completion_tokens",
        )
    _record_prompt_size(obj, file, key_line, result)
    if isinstance(obj.get("tools"), list):
        result.knob("request.tools_count", len(obj["tools"]), file, key_line("tools"))
    _record_other_fields(obj, file, key_line, result)


def _record_prompt_size(
    obj: dict[str, Any], file: str, key_line: Callable[[str], int], result: ParseResult
) -> None:
    messages = obj.get("messages")
    if isinstance(messages, list):
        result.knob("request.messages_count", len(messages), file, key_line("messages"))
        chars, images = _message_chars(messages)
        result.knob(
            "request.prompt_chars", chars, file, key_line("messages"), "characters of message contents"
        )
        if images:
            result.knob("request.images_count", images, file, key_line("messages"))
        return
    prompt = obj.get("prompt")
    if isinstance(prompt, str):
        result.knob("request.prompt_chars", len(prompt), file, key_line("prompt"))
    elif isinstance(prompt, list) and prompt and all(isinstance(p, int) for p in prompt):
        result.knob(
            "request.prompt_tokens", len(prompt), file, key_line("prompt"), "prompt given as token ids"
        )
    elif isinstance(prompt, list):
        texts = [p for p in prompt if isinstance(p, str)]
        result.knob("request.prompt_chars", sum(map(len, texts)), file, key_line("prompt"))
        result.knob("request.prompts_count", len(prompt), file, key_line("prompt"))


def _message_chars(messages: list[Any]) -> tuple[int, int]:
    """(characters of text content, number of image/audio/video parts) over all messages."""
    chars = 0
    media = 0
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    chars += len(part["text"])
                elif isinstance(part, dict) and part.get("type", "") != "text":
                    media += 1
    return chars, media


def _record_other_fields(
    obj: dict[str, Any], file: str, key_line: Callable[[str], int], result: ParseResult
) -> None:
    """Other fields as `request.<field>` (one level of dicts flattened, e.g. stream_options)."""
    for key, value in obj.items():
        name = f"request.{key}"
        if key in _SUMMARISED or name in result.knobs:
            continue
        if _is_scalar(value) or (isinstance(value, list) and all(_is_scalar(v) for v in value)):
            result.knob(name, value, file, key_line(key))
        elif isinstance(value, dict):
            for sub_key, sub_value in value.items():
                if _is_scalar(sub_value):
                    result.knob(f"{name}.{sub_key}", sub_value, file, key_line(key))


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def scalar_fields(text: str) -> dict[str, Any]:
    """Top-level-looking `"key": scalar` pairs of a JSON text that does not parse (cut by a paste).

    Messages are counted by their `"role"` keys and their contents measured, the last one possibly
    cut short: both are then lower bounds.
    """
    fields: dict[str, Any] = {}
    pattern = r'"(\w+)"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null)'
    for match in re.finditer(pattern, text):
        key = match.group(1)
        if key in fields or key in ("role", "content", "type", "text"):
            continue  # message internals are not request fields
        try:
            fields[key] = json.loads(match.group(2))
        except ValueError:
            continue
    messages = re.search(r'"messages"\s*:\s*\[', text)
    if messages:
        rest = text[messages.end() :]
        contents = [m.group(1) for m in re.finditer(r'"(?:content|text)"\s*:\s*"((?:[^"\\]|\\.)*)', rest)]
        roles = len(re.findall(r'"role"\s*:', rest))
        fields["messages"] = [{"content": c} for c in contents] + [{}] * max(0, roles - len(contents))
    return fields


def line_of(text: str, needle: str, first_line: int) -> int:
    position = text.find(needle)
    return first_line if position < 0 else first_line + text.count("\n", 0, position)
