"""The JSON Schemas of the versioned contracts, shipped in the package (one file per contract).

`vllm-triage schema NAME` prints one; tests validate every JSON payload they produce against the
schema its `"schema"` field names, so a change to a payload that breaks its contract fails there.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent

# The `"schema"` value of each payload → the name of its schema file here.
CONTRACTS = {
    "vllm-triage.triage/1": "triage",
    "vllm-triage.fingerprint/1": "fingerprint",
    "vllm-triage.diff/1": "diff",
    "vllm-triage.series/1": "series",
    "vllm-triage.check/1": "check",
    "vllm-triage.report/1": "report",
    "vllm-triage.fleet-summary/1": "fleet",
}


def names() -> list[str]:
    return sorted(p.stem for p in _HERE.glob("*.json"))


def path_of(name: str) -> Path:
    return _HERE / f"{name}.json"


@cache
def load(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(path_of(name).read_text(encoding="utf-8"))
    return schema


def name_for(payload: Any) -> str | None:
    """The schema file a payload (or a list of one-run payloads) is checked against, if any."""
    first = payload[0] if isinstance(payload, list) and payload else payload
    if isinstance(first, dict):
        return CONTRACTS.get(str(first.get("schema")))
    return None
