"""Shared helpers for the launch-format tests: read a fixture, look at knobs by family."""

from __future__ import annotations

from pathlib import Path

from vllm_triage.parsers.base import ParseResult
from vllm_triage.parsers.launch import parse

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "commands"


def read(name: str) -> ParseResult:
    return parse((FIXTURES / name).read_text(encoding="utf-8"), name)


def family(result: ParseResult, prefix: str) -> dict[str, object]:
    return {name[len(prefix) :]: s.value for name, s in result.knobs.items() if name.startswith(prefix)}


def value(result: ParseResult, name: str) -> object:
    return result.knobs[name].value


def line(result: ParseResult, name: str) -> int | None:
    return result.knobs[name].source.line
