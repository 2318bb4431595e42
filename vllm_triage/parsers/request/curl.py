"""A curl command into request knobs: its options (URL without credentials or query, timeouts,
method, the Authorization scheme), its body (inline, `-d @file`, `-d @-` with a heredoc), and the
server's error answer printed after it."""

from __future__ import annotations

import json
import re
from urllib.parse import urlsplit

from vllm_triage.core.finding import Finding
from vllm_triage.core.provenance import Provenance
from vllm_triage.parsers.base import ParseResult
from vllm_triage.parsers.request.body import record_body, scalar_fields
from vllm_triage.parsers.request.curl_args import Curl, Token, curl_commands


def parse_curl_text(text: str, file: str, result: ParseResult) -> None:
    commands = curl_commands(text)
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


def _record_curl_body(body: Token, text: str, file: str, result: ParseResult) -> None:
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
        obj = scalar_fields(stripped)
    if not isinstance(obj, dict):
        result.notes.append(f"{file}:{body.line}: the -d body is not a JSON object")
        return
    record_body(obj, stripped, first_line, file, result)


def _record_body_reference(body: Token, text: str, file: str, result: ParseResult) -> None:
    """`-d @file.json` reads the body from a file; `-d @-` from stdin (maybe a heredoc)."""
    target = body.text[1:]
    if target == "-":
        heredoc = _heredoc_after(text, body.line)
        if heredoc is not None:
            start_line, content = heredoc
            try:
                obj, _ = json.JSONDecoder().raw_decode(content.strip())
            except (ValueError, RecursionError):
                obj = scalar_fields(content)
            if isinstance(obj, dict):
                offset = content.count("\n", 0, len(content) - len(content.lstrip()))
                record_body(obj, content.lstrip(), start_line + offset, file, result)
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


def _record_curl_options(curl: Curl, file: str, result: ParseResult) -> None:
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


def _record_url(token: Token, file: str, result: ParseResult) -> None:
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


def _number(text: str) -> int | float | str:
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value.is_integer() else value


def _read_error_response(text: str, curl: Curl, file: str, result: ParseResult) -> None:
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
