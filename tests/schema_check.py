"""Validation of a JSON payload against the published schema its `"schema"` field names; used by
the conftest hook on every CLI output and by the contract tests. A module of its own (not
conftest.py) so tests can import it: several conftest modules share that name."""

from __future__ import annotations

from typing import Any

import jsonschema

from vllm_triage import schemas

CHECKED: dict[str, int] = {}


def validate_payload(payload: Any, where: str) -> str | None:
    """Validate `payload` if its schema is published; the schema's name, or None."""
    name = schemas.name_for(payload)
    if name is None:
        return None
    validator = jsonschema.Draft202012Validator(schemas.load(name))
    errors = sorted(validator.iter_errors(payload), key=lambda e: list(e.absolute_path))
    if errors:
        shown = "; ".join(
            f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:200]}" for e in errors[:5]
        )
        raise AssertionError(f"{where} does not validate against schemas/{name}.json: {shown}")
    CHECKED[name] = CHECKED.get(name, 0) + 1
    return name


def validate_output(stdout: str | bytes, where: str) -> str | None:
    """A child process's standard output, validated when it is a JSON payload with a published
    schema (the conftest hook sees only CliRunner's; tests that run the real program call this)."""
    import json

    text = stdout.decode("utf-8", "replace") if isinstance(stdout, bytes) else stdout
    stripped = text.lstrip()
    if stripped[:1] not in ("{", "["):
        return None
    try:
        payload = json.loads(stripped)
    except ValueError:
        return None
    return validate_payload(payload, where)
