"""The request that was sent: an OpenAI-style JSON body, or a `curl` command carrying one.

    curl -sS http://localhost:8000/v1/chat/completions \\
      -H 'Content-Type: application/json' -H "Authorization: Bearer $KEY" \\
      -m 120 -d '{"model": "Qwen/Qwen3-8B", "max_tokens": 512,
                  "messages": [{"role": "user", "content": "Hello"}]}'

Knobs: `request.model`, `request.max_tokens` (also from `max_completion_tokens`),
`request.temperature`, `request.top_p`, `request.top_k`, `request.stream`, `request.n`,
`request.seed`, `request.messages_count`, `request.prompt_chars` (characters of all message
contents / the prompt: a proxy for the context length), `request.endpoint` and `request.url`
(without credentials or query), `request.timeout` (curl `-m/--max-time`), `request.concurrency`
(`xargs -P`, `parallel -j`, or a `# concurrency: N` comment), plus the body's other scalar fields
as `request.<field>`. Header values are never copied (only the Authorization scheme is kept).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from vllm_triage.core.finding import Finding
from vllm_triage.core.provenance import Provenance
from vllm_triage.core.roles import Role
from vllm_triage.ingest import prefixes
from vllm_triage.parsers.base import ParseResult, clean_paste
from vllm_triage.parsers.launch.lexer import lex_script
from vllm_triage.parsers.registry import parser

KIND_JSON = "request.json"
KIND_CURL = "request.curl"

# Body fields already mapped to their own knob name (or summarised) rather than copied as-is.
_SUMMARISED = {"messages", "prompt", "max_completion_tokens", "tools", "functions", "user"}
_PROMPT_LINE = re.compile(
    r"^\s*(?:\(\S+\)\s*)?(?:[\w.-]+(?:@[\w.-]+(?::[^\s$#]*)?|:[^\s$#]*)\s*)?\$\s+(?=\S)"
)
_WINDOWS_PROMPT = re.compile(r"^\s*(?:PS )?[A-Za-z]:\\[^>\n]*>\s*(?=\S)")
_ROOT_PROMPT = re.compile(r"^\s*(?:[\w.-]+(?:@[\w.-]+(?::[^\s$#]*)?|:[^\s$#]*)\s*)?#\s+(?=curl\b)")
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
_CONCURRENCY_COMMENT = re.compile(r"#.*?\bconcurren(?:cy|t)\b\D{0,12}(\d+)", re.IGNORECASE)

# curl options that take a value (long and short spellings); everything else is a flag.
_CURL_VALUE_LONG = {
    "--header",
    "--request",
    "--data",
    "--data-raw",
    "--data-binary",
    "--data-ascii",
    "--data-urlencode",
    "--json",
    "--max-time",
    "--connect-timeout",
    "--output",
    "--user",
    "--user-agent",
    "--referer",
    "--cookie",
    "--cookie-jar",
    "--write-out",
    "--url",
    "--proxy",
    "--retry",
    "--retry-delay",
    "--retry-max-time",
    "--cacert",
    "--cert",
    "--key",
    "--form",
    "--upload-file",
    "--oauth2-bearer",
    "--resolve",
    "--interface",
    "--unix-socket",
    "--config",
    "--limit-rate",
    "--max-filesize",
    "--expect100-timeout",
    "--keepalive-time",
}
_CURL_VALUE_SHORT = set("HXdmouAebcwxFTrEKY")
_DATA_OPTIONS = {"-d", "--data", "--data-raw", "--data-binary", "--data-ascii", "--json"}


@dataclass
class _Token:
    text: str
    line: int  # 1-based line where the token starts


@dataclass
class _Curl:
    url: _Token | None = None
    bodies: list[_Token] = field(default_factory=list)
    timeout: _Token | None = None
    connect_timeout: _Token | None = None
    method: _Token | None = None
    header_names: list[str] = field(default_factory=list)
    auth: _Token | None = None  # the Authorization header (value never copied)
    start_line: int = 1
    end_line: int = 1


# ---------------------------------------------------------------------------------------- sniffing


def looks_like(text: str) -> bool:
    """A curl command carrying a request, or a JSON object that is a completion request body."""
    if not text or "\x00" in text[:4096]:
        return False
    cleaned = _cleaned_text(text)
    stripped = cleaned.strip()
    if stripped.startswith("{"):
        return _is_request_body(_load_json_prefix(stripped))
    if stripped.startswith("["):
        return False  # docker/podman inspect prints a list; a request body is an object
    if _NOT_A_REQUEST.search(cleaned):
        return False  # a log or a launch script that merely contains a curl line
    for line in cleaned.splitlines():
        if _has_curl_word(line) and not line.lstrip().startswith("#"):
            return "/v1/" in cleaned or bool(re.search(r"\s(?:-d|--data\S*|--json)\b", cleaned))
    return False


def _is_request_body(obj: Any) -> bool:
    if not isinstance(obj, dict) or _DOCKER_INSPECT_KEYS & obj.keys():
        return False
    if isinstance(obj.get("body"), dict) and "url" in obj:  # a line of an OpenAI batch file
        return _is_request_body(obj["body"])
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
        return _scalar_fields(text) or None


# ------------------------------------------------------------------------------------------ parsing


# Sniffed after launch: a curl alone is refused by the launch sniffer and claimed here.
@parser(Role.REQUEST, looks_like=looks_like, sniff=50)
def parse(text: str, file: str) -> ParseResult:
    """Read the request knobs from a JSON body or the first curl command that carries one."""
    cleaned = _cleaned_text(text or "")
    if "\x00" in cleaned[:4096]:
        result = ParseResult(kind=KIND_JSON)
        result.notes.append(f"{file}: binary content, not a request")
        return result
    if cleaned.strip().startswith(("{", "[")):
        result = ParseResult(kind=KIND_JSON)
        _parse_json_document(cleaned, file, result)
    else:
        result = ParseResult(kind=KIND_CURL)
        _parse_curl_text(cleaned, file, result)
    _read_concurrency(cleaned, file, result)
    return result


def _cleaned_text(text: str) -> str:
    """Paste debris removed, prompts stripped, and one output line per input line (numbers kept)."""
    lines = text.splitlines()
    kept = {pl.number: pl.text for pl in clean_paste(text, keep_prompts=True)}
    out = []
    for number in range(1, len(lines) + 1):
        line = kept.get(number, "")
        for prompt in (_PROMPT_LINE, _WINDOWS_PROMPT, _ROOT_PROMPT):
            line = prompt.sub("", line, count=1)
        out.append(line)
    return "\n".join(out)


def _parse_json_document(text: str, file: str, result: ParseResult) -> None:
    start = len(text) - len(text.lstrip())
    first_line = text.count("\n", 0, start) + 1
    body = text[start:]
    try:
        obj, end = json.JSONDecoder().raw_decode(body)
    except RecursionError:  # fuzz finding: thousands of `[` overflow the decoder's stack
        result.notes.append(f"{file}: the JSON body is nested too deeply to read")
        return
    except ValueError as error:
        result.notes.append(
            f"{file}: the JSON body is cut ({getattr(error, 'msg', error)}); readable fields kept, "
            f"counts are lower bounds"
        )
        _record_body(_scalar_fields(body), body, first_line, file, result)
        return
    rest = body[end:].strip()
    if rest.startswith("{"):
        count = 1 + sum(1 for line in rest.splitlines() if line.strip().startswith("{"))
        result.notes.append(f"{file}: {count} JSON objects (JSONL); the fingerprint uses the first")
    if isinstance(obj, list):
        result.notes.append(f"{file}: a JSON list, not a request body")
        return
    if isinstance(obj, dict) and isinstance(obj.get("body"), dict) and "url" in obj:
        # OpenAI batch line: {"custom_id": …, "method": "POST", "url": "/v1/…", "body": {…}}
        result.knob("request.endpoint", obj["url"], file, _line_of(body, '"url"', first_line))
        inner_at = body.find('"body"')
        _record_body(obj["body"], body[inner_at:], _line_of(body, '"body"', first_line), file, result)
        return
    if not isinstance(obj, dict):
        result.notes.append(f"{file}: JSON value is not an object, not a request body")
        return
    if not _is_request_body(obj):
        # docker inspect, a server response, a config file…: nothing here is a request knob.
        shown = ", ".join(list(obj)[:8])
        result.notes.append(f"{file}: this JSON object is not a completion request (keys: {shown})")
        return
    _record_body(obj, body, first_line, file, result)


# ------------------------------------------------------------------------------------------- curl


def _parse_curl_text(text: str, file: str, result: ParseResult) -> None:
    commands = _curl_commands(text)
    if not commands:
        result.notes.append(f"{file}: no curl command and no JSON body found")
        return
    with_body = [c for c in commands if c.bodies] or commands
    curl = with_body[0]
    if len(commands) > 1:
        result.notes.append(
            f"{file}: {len(commands)} curl commands; the fingerprint uses the one on line {curl.start_line}"
        )
    _record_curl_options(curl, file, result)
    if not curl.bodies:
        result.notes.append(f"{file}:{curl.start_line}: the curl command carries no request body")
        return
    if len(curl.bodies) > 1:
        result.notes.append(f"{file}:{curl.start_line}: several -d bodies; the first JSON one is used")
    body = next((b for b in curl.bodies if b.text.lstrip().startswith(("{", "@"))), curl.bodies[0])
    _record_curl_body(body, text, file, result)
    _read_error_response(text, curl, file, result)


def _record_curl_body(body: _Token, text: str, file: str, result: ParseResult) -> None:
    if body.text.startswith("@"):
        _record_body_reference(body, text, file, result)
        return
    stripped = body.text.lstrip()
    first_line = body.line + body.text.count("\n", 0, len(body.text) - len(stripped))
    try:
        obj, _ = json.JSONDecoder().raw_decode(stripped)
    except RecursionError:
        result.notes.append(f"{file}:{body.line}: the -d body is nested too deeply to read")
        return
    except ValueError as error:
        result.notes.append(
            f"{file}:{body.line}: the -d body is not valid JSON ({getattr(error, 'msg', error)}); "
            f"readable fields kept"
        )
        obj = _scalar_fields(stripped)
    if not isinstance(obj, dict):
        result.notes.append(f"{file}:{body.line}: the -d body is not a JSON object")
        return
    _record_body(obj, stripped, first_line, file, result)


def _record_body_reference(body: _Token, text: str, file: str, result: ParseResult) -> None:
    """`-d @file.json` reads the body from a file; `-d @-` from stdin (maybe a heredoc)."""
    target = body.text[1:]
    if target == "-":
        heredoc = _heredoc_after(text, body.line)
        if heredoc is not None:
            start_line, content = heredoc
            try:
                obj, _ = json.JSONDecoder().raw_decode(content.strip())
            except (ValueError, RecursionError):
                obj = _scalar_fields(content)
            if isinstance(obj, dict):
                offset = content.count("\n", 0, len(content) - len(content.lstrip()))
                _record_body(obj, content.lstrip(), start_line + offset, file, result)
                return
        result.notes.append(
            f"{file}:{body.line}: the request body is read from stdin (`-d @-`), not in this file"
        )
        return
    result.knob("request.body_file", target, file, body.line)
    result.notes.append(
        f"{file}:{body.line}: the request body is in another file ({target}); add it to the bundle"
    )


def _heredoc_after(text: str, line: int) -> tuple[int, str] | None:
    """The heredoc (`<<EOF … EOF`) started on the command that ends at or after `line`."""
    lines = text.split("\n")
    for index in range(line - 1, len(lines)):
        match = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", lines[index])
        if match:
            terminator = match.group(1)
            body_lines: list[str] = []
            for following in lines[index + 1 :]:
                if following.strip() == terminator:
                    return index + 2, "\n".join(body_lines)
                body_lines.append(following)
            return index + 2, "\n".join(body_lines)
        if not lines[index].rstrip().endswith("\\"):
            return None
    return None


def _record_curl_options(curl: _Curl, file: str, result: ParseResult) -> None:
    if curl.url is not None:
        _record_url(curl.url, file, result)
    if curl.timeout is not None:
        result.knob(
            "request.timeout", _number(curl.timeout.text), file, curl.timeout.line, "curl --max-time (s)"
        )
    if curl.connect_timeout is not None:
        value = _number(curl.connect_timeout.text)
        result.knob("request.connect_timeout", value, file, curl.connect_timeout.line)
    if curl.method is not None:
        result.knob("request.method", curl.method.text.upper(), file, curl.method.line)
    if curl.auth is not None:
        # Keep only the scheme ("Bearer"): the credential itself must never leave the bundle.
        scheme = curl.auth.text.split(":", 1)[1].strip().split(" ", 1)[0] if ":" in curl.auth.text else ""
        result.knob("request.auth_scheme", scheme or None, file, curl.auth.line)
    if curl.header_names:
        result.notes.append(f"{file}:{curl.start_line}: headers sent: {', '.join(curl.header_names)}")


def _record_url(token: _Token, file: str, result: ParseResult) -> None:
    try:
        parts = urlsplit(token.text if "://" in token.text else f"http://{token.text}")
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        result.notes.append(f"{file}:{token.line}: unreadable URL")
        return
    # Userinfo and query string can carry credentials (`?api_key=`): drop both.
    result.knob("request.url", f"{parts.scheme}://{host}{port}{parts.path}", file, token.line)
    if parts.path:
        result.knob("request.endpoint", parts.path, file, token.line)


def _curl_commands(text: str) -> list[_Curl]:
    commands = []
    for words in _shell_commands(text):
        position = next((i for i, w in enumerate(words) if _is_curl_word(w.text)), None)
        if position is not None:
            curl = _read_curl_args(words[position + 1 :])
            curl.start_line = words[position].line
            last = words[-1]
            curl.end_line = last.line + last.text.count("\n")
            commands.append(curl)
    return commands


def _is_curl_word(word: str) -> bool:
    return word.rsplit("/", 1)[-1] in ("curl", "curl.exe")


def _read_curl_args(words: list[_Token]) -> _Curl:
    curl = _Curl()
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        option, value, index = _split_option(word, words, index)
        if option is None:
            if curl.url is None and not word.text.startswith("-"):
                curl.url = word
            continue
        if value is None:
            continue
        _apply_curl_option(curl, option, value)
    return curl


def _split_option(word: _Token, words: list[_Token], index: int) -> tuple[str | None, _Token | None, int]:
    """(option, its value, next index) for one curl word; (None, None, index) for a positional."""
    text = word.text
    if text.startswith("--"):
        name, eq, attached = text.partition("=")
        if name in _CURL_VALUE_LONG or name in _DATA_OPTIONS:
            if eq:
                return name, _Token(attached, word.line), index
            if index < len(words):
                return name, words[index], index + 1
        return name, None, index
    if text.startswith("-") and len(text) > 1:
        # Short flags combine (`-sSN`, `-sd '{…}'`, `-XPOST`): the first value-taking letter ends them.
        for offset, letter in enumerate(text[1:], start=1):
            if letter in _CURL_VALUE_SHORT:
                attached = text[offset + 1 :]
                if attached:
                    return f"-{letter}", _Token(attached, word.line), index
                if index < len(words):
                    return f"-{letter}", words[index], index + 1
                return f"-{letter}", None, index
        return text, None, index
    return None, None, index


def _apply_curl_option(curl: _Curl, option: str, value: _Token) -> None:
    if option in _DATA_OPTIONS:
        curl.bodies.append(value)
    elif option in ("-H", "--header"):
        name = value.text.split(":", 1)[0].strip()
        curl.header_names.append(name)
        if name.lower() in ("authorization", "api-key", "x-api-key"):
            curl.auth = value
    elif option in ("-m", "--max-time"):
        curl.timeout = value
    elif option == "--connect-timeout":
        curl.connect_timeout = value
    elif option in ("-X", "--request"):
        curl.method = value
    elif option == "--url":
        curl.url = value
    elif option == "--oauth2-bearer":
        curl.auth = _Token("Authorization: Bearer", value.line)


def _shell_commands(text: str) -> list[list[_Token]]:
    """Simple commands of words with the line each starts on, from the project's one shell lexer
    (quotes across lines, continuations, comments, `|`, `;`, `&&`, newlines)."""
    commands = []
    for simple in lex_script(text):
        words = [_Token(token.text, token.line or 1) for token in simple.words]
        if words:
            commands.append(words)
    return commands


# --------------------------------------------------------------------------------------- the body


def _record_body(
    obj: dict[str, Any], body_text: str, first_line: int, file: str, result: ParseResult
) -> None:
    """Emit the request knobs of one body; `body_text` starts on `first_line` (for provenance)."""

    def line_of(key: str) -> int:
        return _line_of(body_text, f'"{key}"', first_line)

    for key in ("model", "temperature", "top_p", "top_k", "stream", "n", "seed", "max_tokens"):
        if key in obj:
            result.knob(f"request.{key}", obj[key], file, line_of(key))
    if "max_tokens" not in obj and "max_completion_tokens" in obj:
        result.knob(
            "request.max_tokens",
            obj["max_completion_tokens"],
            file,
            line_of("max_completion_tokens"),
            "from max_completion_tokens",
        )
    _record_prompt_size(obj, file, line_of, result)
    if isinstance(obj.get("tools"), list):
        result.knob("request.tools_count", len(obj["tools"]), file, line_of("tools"))
    _record_other_fields(obj, file, line_of, result)


def _record_prompt_size(
    obj: dict[str, Any], file: str, line_of: Callable[[str], int], result: ParseResult
) -> None:
    messages = obj.get("messages")
    if isinstance(messages, list):
        result.knob("request.messages_count", len(messages), file, line_of("messages"))
        chars, images = _message_chars(messages)
        result.knob(
            "request.prompt_chars", chars, file, line_of("messages"), "characters of message contents"
        )
        if images:
            result.knob("request.images_count", images, file, line_of("messages"))
        return
    prompt = obj.get("prompt")
    if isinstance(prompt, str):
        result.knob("request.prompt_chars", len(prompt), file, line_of("prompt"))
    elif isinstance(prompt, list) and prompt and all(isinstance(p, int) for p in prompt):
        result.knob(
            "request.prompt_tokens", len(prompt), file, line_of("prompt"), "prompt given as token ids"
        )
    elif isinstance(prompt, list):
        texts = [p for p in prompt if isinstance(p, str)]
        result.knob("request.prompt_chars", sum(map(len, texts)), file, line_of("prompt"))
        result.knob("request.prompts_count", len(prompt), file, line_of("prompt"))


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
    obj: dict[str, Any], file: str, line_of: Callable[[str], int], result: ParseResult
) -> None:
    """Other fields as `request.<field>` (one level of dicts flattened, e.g. stream_options)."""
    for key, value in obj.items():
        name = f"request.{key}"
        if key in _SUMMARISED or name in result.knobs:
            continue
        if _is_scalar(value) or (isinstance(value, list) and all(_is_scalar(v) for v in value)):
            result.knob(name, value, file, line_of(key))
        elif isinstance(value, dict):
            for sub_key, sub_value in value.items():
                if _is_scalar(sub_value):
                    result.knob(f"{name}.{sub_key}", sub_value, file, line_of(key))


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _scalar_fields(text: str) -> dict[str, Any]:
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


def _line_of(text: str, needle: str, first_line: int) -> int:
    position = text.find(needle)
    return first_line if position < 0 else first_line + text.count("\n", 0, position)


def _number(text: str) -> int | float | str:
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value.is_integer() else value


# ----------------------------------------------------------------------------- extras of a paste


def _read_concurrency(text: str, file: str, result: ParseResult) -> None:
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


def _read_error_response(text: str, curl: _Curl, file: str, result: ParseResult) -> None:
    """A server error printed after the command (`{"object":"error","message":…}`) is a problem."""
    pattern = re.compile(r'\{\s*"(?:object"\s*:\s*"error"|error"\s*:)')
    for match in pattern.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        if line <= curl.end_line:
            continue  # inside the command (its body), not printed by the server
        try:
            obj, _ = json.JSONDecoder().raw_decode(text[match.start() :])
        except (ValueError, RecursionError):
            continue
        error = obj.get("error") if isinstance(obj.get("error"), dict) else obj
        message = str(error.get("message", "")).strip() or "the server answered with an error"
        result.problems.append(
            Finding(
                id="request-error-response",
                severity="error",
                message=f"server answered: {message[:500]}",
                evidence=[Provenance(file, line)],
                advice="the request reached the server; compare its size and parameters with the "
                "server limits",
            )
        )
        return
