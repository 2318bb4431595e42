"""A file that is the request body itself: one JSON object, a JSONL file of them, or a line of an
OpenAI batch file (`{"url": "/v1/…", "body": {…}}`); anything else JSON is said to be no request."""

from __future__ import annotations

import json

from vllm_triage.parsers.base import ParseResult
from vllm_triage.parsers.request.body import line_of, record_body, scalar_fields
from vllm_triage.parsers.request.sniff import is_request_body


def parse_json_document(text: str, file: str, result: ParseResult) -> None:
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
        record_body(scalar_fields(body), body, first_line, file, result)
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
        result.knob("request.endpoint", obj["url"], file, line_of(body, '"url"', first_line))
        inner_at = body.find('"body"')
        record_body(obj["body"], body[inner_at:], line_of(body, '"body"', first_line), file, result)
        return
    if not isinstance(obj, dict):
        result.notes.append(f"{file}: JSON value is not an object, not a request body")
        return
    if not is_request_body(obj):
        # docker inspect, a server response, a config file…: nothing here is a request knob.
        shown = ", ".join(list(obj)[:8])
        result.notes.append(f"{file}: this JSON object is not a completion request (keys: {shown})")
        return
    record_body(obj, body, first_line, file, result)
