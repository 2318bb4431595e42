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

One module per concern: `paste` (prompts and debris off a pasted session), `sniff` (is it a
request?), `document` (a file that is the JSON body), `curl_args` (a curl command's words into
options), `curl` (those options and bodies into knobs), `body` (the knobs of one JSON body),
`concurrency` (what a paste says of requests at once).
"""

from __future__ import annotations

from vllm_triage.core.roles import Role
from vllm_triage.parsers.base import ParseResult
from vllm_triage.parsers.registry import parser
from vllm_triage.parsers.request.concurrency import read_concurrency
from vllm_triage.parsers.request.curl import parse_curl_text
from vllm_triage.parsers.request.document import parse_json_document
from vllm_triage.parsers.request.paste import cleaned_text
from vllm_triage.parsers.request.sniff import looks_like

__all__ = ["KIND_CURL", "KIND_JSON", "looks_like", "parse"]

KIND_JSON = "request.json"
KIND_CURL = "request.curl"


# Sniffed after launch: a curl alone is refused by the launch sniffer and claimed here.
@parser(Role.REQUEST, looks_like=looks_like, sniff=50)
def parse(text: str, file: str) -> ParseResult:
    """Read the request knobs from a JSON body or the first curl command that carries one."""
    cleaned = cleaned_text(text or "")
    if "\x00" in cleaned[:4096]:
        result = ParseResult(kind=KIND_JSON)
        result.notes.append(f"{file}: binary content, not a request")
        return result
    if cleaned.strip().startswith(("{", "[")):
        result = ParseResult(kind=KIND_JSON)
        parse_json_document(cleaned, file, result)
    else:
        result = ParseResult(kind=KIND_CURL)
        parse_curl_text(cleaned, file, result)
    read_concurrency(cleaned, file, result)
    return result
