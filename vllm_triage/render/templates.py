"""jinja2 environment over reports/ (every human-facing report is a template there)."""

from __future__ import annotations

from functools import lru_cache

import jinja2

from vllm_triage.resources import reports_dir


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(reports_dir())),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html",), default_for_string=False),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["fence"] = lambda text: str(text).replace("```", "ʼʼʼ")
    return env


def render(name: str, **context: object) -> str:
    return environment().get_template(name).render(**context)
