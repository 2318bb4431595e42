"""vLLM's defaults (rules/compare/defaults.toml): an argument given explicitly with its default
value on one side and absent on the other is the same run, not a change."""

from __future__ import annotations

from typing import Any

from vllm_triage.compare.data import CompareData
from vllm_triage.fingerprint.values import canonical, version_tuple


def default_for(name: str, vllm_version: str | None, data: CompareData) -> tuple[bool, Any]:
    """(known, value): the default of `name` in that vLLM release. With the release unknown, a
    default is known only when every listed release agrees on it."""
    rows = data.defaults.get(name, [])
    if not rows:
        return False, None
    version = version_tuple(vllm_version) if vllm_version else None
    if version is not None:
        for row in rows:
            since = version_tuple(row.since) if row.since else None
            until = version_tuple(row.until) if row.until else None
            if (since is None or version >= since) and (until is None or version < until):
                return True, row.value
        return False, None
    values = {repr(canonical(row.value)) for row in rows}
    return (True, rows[0].value) if len(values) == 1 else (False, None)
