"""Shared fixtures of the triage tests: where the fixture logs are, and the CLI as a function.

Every test drives the real command line through click's CliRunner, the way a person runs it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from vllm_triage.cli import cli

TESTS = Path(__file__).resolve().parents[1]
LOGS = TESTS / "fixtures" / "logs"
SAMPLES = TESTS.parent / "samples"

RunCli = Callable[..., Result]
TriageJson = Callable[..., dict[str, Any]]


@pytest.fixture
def logs() -> Path:
    return LOGS


@pytest.fixture
def samples() -> Path:
    return SAMPLES


@pytest.fixture
def run_cli() -> RunCli:
    def run(*args: str, input: bytes | str | None = None) -> Result:  # noqa: A002 - click's name
        return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)

    return run


# Committed fixtures and samples never change during a session, and triage is deterministic
# (test_triage_json_contract checks it): their JSON is computed once per session.
_CACHE: dict[tuple[str, ...], str] = {}


def _read_only(path: str | Path) -> bool:
    resolved = Path(path).resolve()
    return resolved.is_relative_to(LOGS) or resolved.is_relative_to(SAMPLES)


@pytest.fixture
def triage_json(run_cli: RunCli) -> TriageJson:
    """`vllm-triage triage PATH… --format json`, parsed; fails the test on a non-zero exit."""

    def run(
        *paths: str | Path, extra: Sequence[str] = (), input: bytes | str | None = None
    ) -> dict[str, Any]:  # noqa: A002
        args = ("triage", *(str(p) for p in paths), "--format", "json", *extra)
        cacheable = input is None and not extra and all(_read_only(p) for p in paths)
        if cacheable and args in _CACHE:
            return json.loads(_CACHE[args])
        result = run_cli(*args, input=input)
        assert result.exit_code == 0, result.stderr
        if cacheable:
            _CACHE[args] = result.stdout
        return json.loads(result.stdout)

    return run
