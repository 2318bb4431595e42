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


def input_limit_options(command: Callable) -> Callable:
    options = (
        click.option(
            "--max-input",
            type=_Size(),
            default="8G",
            show_default=True,
            expose_value=False,
            callback=_setter("max_input"),
            help="Most bytes read from one input (stdin, a file, all members of an archive, inflated).",
        ),
        click.option(
            "--max-line",
            type=_Size(),
            default="1M",
            show_default=True,
            expose_value=False,
            callback=_setter("max_line"),
            help="Longer log lines are cut to this (reported as line-truncated).",
        ),
        click.option(
            "--max-members",
            type=click.IntRange(min=1),
            default=_DEFAULTS.max_members,
            show_default=True,
            expose_value=False,
            callback=_setter("max_members"),
            help="Most entries (files, folders, links) in one archive or bundle folder.",
        ),
        click.option(
            "--max-ratio",
            type=click.IntRange(min=1),
            default=_DEFAULTS.max_ratio,
            show_default=True,
            expose_value=False,
            callback=_setter("max_ratio"),
            help="A compressed member inflating more than this many times its size is refused (bomb).",
        ),
    )
    for option in reversed(options):
        command = option(command)
    return command
