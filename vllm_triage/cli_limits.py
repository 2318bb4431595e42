"""The input-limit options every command that reads input takes (--max-input, --max-line,
--max-members): one decorator, so the limits are named and documented the same way everywhere."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from vllm_triage.ingest.limits import Limits, parse_size, set_limits

_DEFAULTS = Limits()


class _Size(click.ParamType):
    name = "SIZE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_size(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def _setter(name: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        # Called with the default too, so each invocation starts from known limits.
        set_limits(**{name: value})

    return callback


# (option, field of Limits, type, default shown, help): one row per limit, the same shape for each.
_LIMITS: tuple[tuple[str, str, click.ParamType, Any, str], ...] = (
    (
        "--max-input",
        "max_input",
        _Size(),
        "8G",
        "Most bytes read from one input (stdin, a file, all members of an archive, inflated).",
    ),
    (
        "--max-line",
        "max_line",
        _Size(),
        "1M",
        "Longer log lines are cut to this (reported as line-truncated).",
    ),
    (
        "--max-members",
        "max_members",
        click.IntRange(min=1),
        _DEFAULTS.max_members,
        "Most entries (files, folders, links) in one archive or bundle folder.",
    ),
    (
        "--max-ratio",
        "max_ratio",
        click.IntRange(min=1),
        _DEFAULTS.max_ratio,
        "A compressed member inflating more than this many times its size is refused (bomb).",
    ),
)


def input_limit_options(command: Callable) -> Callable:
    for flag, name, kind, default, help_text in reversed(_LIMITS):
        command = click.option(
            flag,
            type=kind,
            default=default,
            show_default=True,
            expose_value=False,
            callback=_setter(name),
            help=help_text,
        )(command)
    return command
