"""Every JSON payload a test produces through the command line is validated against the schema
its `"schema"` field names (vllm_triage/schemas/): a change that breaks a published contract fails
the test that produced the payload, whatever that test was about.

The hook wraps click's CliRunner.invoke, which every CLI test uses: stdout that is JSON with a
known schema is checked, and so is a `.json` file written with -o/--output.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from schema_check import validate_payload

_ORIGINAL_INVOKE = CliRunner.invoke


def _json_of(text: str) -> Any:
    stripped = text.lstrip()
    if stripped[:1] not in ("{", "["):
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


def _checked_invoke(self: CliRunner, cli: Any, args: Any = None, *rest: Any, **kw: Any) -> Result:
    result = _ORIGINAL_INVOKE(self, cli, args, *rest, **kw)
    argv = [str(a) for a in (args or [])] if not isinstance(args, str) else args.split()
    payload = _json_of(result.stdout)
    if payload is not None:
        validate_payload(payload, f"stdout of `vllm-triage {' '.join(argv)[:120]}`")
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag in ("-o", "--output") and value.endswith(".json") and Path(value).is_file():
            written = _json_of(Path(value).read_text(encoding="utf-8"))
            if written is not None:
                validate_payload(written, f"{value} written by `vllm-triage {' '.join(argv)[:120]}`")
    return result


@pytest.fixture(autouse=True, scope="session")
def _validate_every_json_output() -> Iterator[None]:
    CliRunner.invoke = _checked_invoke  # type: ignore[method-assign]
    try:
        yield
    finally:
        CliRunner.invoke = _ORIGINAL_INVOKE  # type: ignore[method-assign]
