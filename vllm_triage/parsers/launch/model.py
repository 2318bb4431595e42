"""The records a launch is read into (values with their line, the launch, the shell state) and
how a launch is written out as knobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vllm_triage.core.finding import Finding
from vllm_triage.parsers.base import ParseResult

KIND_PREFIX = "launch_command"


def word_list(block: str) -> list[str]:
    """A whitespace-separated word list written as a text block (long tables stay readable)."""
    return block.split()


@dataclass
class Value:
    value: Any
    line: int | None
    note: str | None = None


@dataclass
class Launch:
    """One vLLM launch found in the paste, before it is written into a ParseResult."""

    launcher: str
    line: int | None
    args: dict[str, Value] = field(default_factory=dict)  # dest → value; "model" included
    env: dict[str, Value] = field(default_factory=dict)
    container: dict[str, Value] = field(default_factory=dict)
    image: Value | None = None
    digest: Value | None = None
    notes: list[str] = field(default_factory=list)
    problems: list[Finding] = field(default_factory=list)


@dataclass
class Shell:
    """What a shell session has defined so far: variables, and which of them are exported."""

    variables: dict[str, Value] = field(default_factory=dict)
    exported: dict[str, Value] = field(default_factory=dict)
    files: dict[str, tuple[str, int]] = field(default_factory=dict)  # name → (text, first line)

    def lookup(self, name: str) -> Value | None:
        return self.exported.get(name) or self.variables.get(name)


@dataclass
class Context:
    file: str
    notes: list[str] = field(default_factory=list)


def emit(launch: Launch, result: ParseResult, file: str) -> None:
    result.knob("launcher", launch.launcher, file, launch.line)
    if launch.image is not None:
        result.knob("image.ref", launch.image.value, file, launch.image.line, launch.image.note)
    if launch.digest is not None:
        result.knob("image.digest", launch.digest.value, file, launch.digest.line)
    for key, value in launch.container.items():
        result.knob(f"container.{key}", value.value, file, value.line, value.note)
    if "model" in launch.args:
        model = launch.args["model"]
        result.knob("arg.model", model.value, file, model.line, model.note)
    for dest, value in launch.args.items():
        if dest != "model":
            result.knob(f"arg.{dest}", value.value, file, value.line, value.note)
    for name, value in launch.env.items():
        result.knob(f"env.{name}", value.value, file, value.line, value.note)
    result.notes.extend(launch.notes)
    result.problems.extend(launch.problems)
