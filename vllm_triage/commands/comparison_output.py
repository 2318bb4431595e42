"""What `diff` and `series` do once their result is computed: print it as JSON, Markdown (a
template in reports/) or text, and exit with the verdict's code."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from vllm_triage.commands.output import emit_json, text_width, use_colour
from vllm_triage.render.compare_text import template_helpers
from vllm_triage.render.templates import render
from vllm_triage.render.text_layout import rewrap


def emit_comparison(
    result: Any,
    fmt: str,
    show_noise: bool,
    template: str,
    key: str,
    text_renderer: Callable[..., str],
) -> None:
    from vllm_triage.bundle.redact.payload import redact_payload

    data = redact_payload(result.to_json())  # issue 11: a secret never reaches an output
    if fmt == "json":
        emit_json(data)
    elif fmt == "md":
        click.echo(render(template, **{key: data}, show_noise=show_noise, **template_helpers()), nl=False)
    else:
        text = text_renderer(data, colour=use_colour(), show_noise=show_noise)
        click.echo(rewrap(text, text_width()), nl=False)
    if result.exit_code:
        sys.exit(result.exit_code)
