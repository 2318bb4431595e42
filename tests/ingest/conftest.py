"""Fixtures of the hostile-input tests: the CLI as a function (click's CliRunner), and the
process-wide input limits put back after every test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result
from hostile_inputs import RunCli

from vllm_triage.cli import cli
from vllm_triage.ingest.limits import reset_limits


@pytest.fixture(autouse=True)
def _default_limits() -> Iterator[None]:
    yield
    reset_limits()  # a test that lowered a limit through the API must not leak it


@pytest.fixture
def run_cli() -> RunCli:
    def run(*args: str, input: bytes | str | None = None) -> Result:  # noqa: A002 - click's name
        return CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)

    return run
