"""Click options more than one command takes, written once so their names and types agree."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

LOG_AND_COMPARE_RULES = "Extra rule directory (repeatable): log rules and compare data."
COMPARE_RULES = (
    "Extra rule directory (repeatable): log rules, and compare data (noise, knob groups, defaults)."
)


def rules_option(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--rules DIR` (repeatable) into `rule_dirs`; each command says which tables it reads."""
    return click.option("--rules", "rule_dirs", multiple=True, type=click.Path(), help=help_text)
