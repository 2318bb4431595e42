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

from analyzer.cli import cli

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


@pytest.fixture
def triage_json(run_cli: RunCli) -> TriageJson:
    """`vllm-triage triage PATH… --format json`, parsed; fails the test on a non-zero exit."""

    def run(*paths: str | Path, extra: Sequence[str] = (), input: bytes | str | None = None) -> dict[str, Any]:  # noqa: A002
        result = run_cli("triage", *(str(p) for p in paths), "--format", "json", *extra, input=input)
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)

    return run
