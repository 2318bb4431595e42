"""The fleet summary as text or Markdown (jinja2 templates in reports/); json is the dict itself."""

from __future__ import annotations

from typing import Any

from vllm_triage.fleet.summary import MAX_LISTED


def render(summary: dict[str, Any], fmt: str) -> str:
    """text | md."""
    from vllm_triage.render.templates import render as render_template

    template = {"text": "fleet.txt.j2", "md": "fleet.md.j2"}[fmt]
    return render_template(template, s=summary, max_listed=MAX_LISTED)
