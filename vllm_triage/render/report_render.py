"""The report (`vllm-triage.report/1`, already redacted) as Markdown for a GitHub issue, as one
self-contained HTML file, or as JSON. The human formats are the jinja2 templates
reports/report.md.j2 and reports/report.html.j2; this module gives them their helpers."""

from __future__ import annotations

import json
import re
from typing import Any

from vllm_triage.ingest.prefixes import strip_ansi
from vllm_triage.render.templates import render
from vllm_triage.render.timeline import PHASE_LABELS, timeline

_BACKTICKS = re.compile(r"`+")


def fence(text: str | None) -> str:
    """A code fence longer than any backtick run inside the text, so a pasted artefact that holds
    ``` cannot close the block early on GitHub."""
    longest = max((len(m) for m in _BACKTICKS.findall(text or "")), default=0)
    return "`" * max(3, longest + 1)


def code(text: Any) -> str:
    """An inline code span that survives backticks in the value."""
    value = str(text)
    longest = max((len(m) for m in _BACKTICKS.findall(value)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{ticks}{pad}{value}{pad}{ticks}"


def md(text: Any) -> str:
    """Prose for GitHub Markdown: `<` would open an HTML tag and swallow a `<redacted:…>`
    placeholder; `|` would split a table cell."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


def plain(text: Any) -> str:
    """Terminal colour codes out of pasted text (they are noise in an issue or a page)."""
    return strip_ansi(str(text))


def helpers() -> dict[str, Any]:
    return {"fence": fence, "code": code, "md": md, "plain": plain, "phase_label": PHASE_LABELS.get}


def render_markdown(report: dict[str, Any]) -> str:
    return render("report.md.j2", r=report, run=report["runs"][report["primary"]], **helpers())


def render_html(report: dict[str, Any]) -> str:
    return render(
        "report.html.j2",
        r=report,
        run=report["runs"][report["primary"]],
        tl=timeline(report["runs"]),
        **helpers(),
    )


def render_json(report: dict[str, Any]) -> str:
    from vllm_triage import __version__

    return json.dumps({**report, "tool_version": __version__}, indent=2, ensure_ascii=False) + "\n"


RENDERERS = {"md": render_markdown, "html": render_html, "json": render_json}
