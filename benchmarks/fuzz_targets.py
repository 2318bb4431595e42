"""What one fuzz input goes through, per target: the Python entry point ingest would call, and the
`vllm-triage` command line that does the same end to end (for the CLI sample).

Every entry point is built once per worker (rules compiled, parser modules imported) and then
called once per input: the per-input cost is the parser's, not start-up's.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

# Every parser in the registry (vllm_triage.parsers.registry.REGISTRY), then triage.
PARSER_TARGETS = (
    "vllm_log",
    "nvidia_smi",
    "collect_env",
    "container_inspect",
    "launch_command",
    "environment",
    "request",
)
TARGETS = (*PARSER_TARGETS, "triage")
# The CLI command that reads a file as this target does (fingerprint sniffs the role itself).
CLI_COMMAND = {target: "fingerprint" for target in PARSER_TARGETS} | {"triage": "triage"}
# The file name the CLI sample gives an input: what such an artefact is usually called.
CLI_NAME = {
    "vllm_log": "vllm.log",
    "nvidia_smi": "nvidia-smi.txt",
    "collect_env": "collect_env.txt",
    "container_inspect": "inspect.json",
    "launch_command": "launch.sh",
    "environment": "vllm.env",
    "request": "request.json",
    "triage": "server.log",
}


def is_refusal(exc: BaseException) -> bool:
    """A documented refusal: an error the CLI maps to exit 4 (InputError, RuleError)."""
    from vllm_triage.core.errors import ExitCode, TriageError

    return isinstance(exc, TriageError) and exc.exit_code == ExitCode.INPUT


def _parse_json(result: Any) -> dict[str, Any]:
    """A ParseResult as the fingerprint JSON would carry it (json.dumps must take it)."""
    return {
        "kind": result.kind,
        "knobs": {k: v.to_json() for k, v in result.knobs.items()},
        "facts": {k: v.to_json() for k, v in result.facts.items()},
        "notes": list(result.notes),
        "problems": [p.to_json() for p in result.problems],
    }


def entry_point(name: str) -> Callable[[bytes], object]:
    """The function one input goes through, as ingest would call it; it returns what was read,
    already through json.dumps (an output that cannot be serialised is a crash)."""
    from vllm_triage.ingest.decode import check_text, decode_all

    if name == "triage":
        from vllm_triage.ingest.sources import Source
        from vllm_triage.pipeline import load_rules, triage_sources

        compiled = load_rules()

        def run_triage(data: bytes) -> object:
            source = Source(name="fuzz.log", opener=lambda: io.BytesIO(data), size=len(data), role="vllm_log")
            return json.dumps(triage_sources([source], compiled=compiled).to_json())

        return run_triage

    from vllm_triage.fingerprint.combine import ARTEFACT_MAX_BYTES, LOG_HEAD_BYTES
    from vllm_triage.parsers.registry import REGISTRY

    module = REGISTRY[name]
    # What the combiner hands a parser: an artefact's first 16 MiB, a log's first 5 MiB.
    limit = LOG_HEAD_BYTES if name == "vllm_log" else ARTEFACT_MAX_BYTES

    def run_parser(data: bytes) -> object:
        data = data[:limit]
        text = decode_all(data, check_text(data[:65536], "fuzz.txt"))
        module.looks_like(text)
        result = module.read(text, "fuzz.txt", "gpu")
        return json.dumps(_parse_json(result))

    return run_parser


def check_cli(code: int, stderr: str) -> str | None:
    """None when a CLI run ended as documented, else what was wrong: exit 0/1 (1: findings that
    fail a check) or 4 with one `vllm-triage: <id>: …` line on stderr, never a traceback."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    if "Traceback" in stderr:
        return f"exit {code}, traceback on stderr"
    if code not in (0, 1, 4):
        return f"exit {code}: {lines[-1] if lines else 'no stderr'}"
    if code == 4 and (len(lines) != 1 or not lines[0].startswith("vllm-triage: ")):
        return f"exit 4 with {len(lines)} stderr line(s), not one `vllm-triage: …` line"
    return None
