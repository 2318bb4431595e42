"""The report (`vllm-triage.report/1`, already redacted) as Markdown for vLLM's bug-report form
(one block per field, render/issue_form.py), as one self-contained HTML file, or as JSON. The
human formats are the jinja2 templates in reports/ (report.md.j2 with form_environment.md.j2 and
form_bug.md.j2; report.html.j2); this module gives them their helpers."""

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
    """The guide, then each field of the form in its own labelled block."""
    from vllm_triage.render.issue_form import GITHUB_BODY_LIMIT, form_fields, submitted_body

    fields = form_fields(report, helpers())
    return render(
        "report.md.j2",
        r=report,
        run=report["runs"][report["primary"]],
        fields=fields,
        body_chars=len(submitted_body(fields)),
        limit=GITHUB_BODY_LIMIT,
        **helpers(),
    )


def render_field(report: dict[str, Any], name: str) -> str:
    """One field's body alone, as it is pasted into the form (`report --field NAME`)."""
    from vllm_triage.render.issue_form import form_fields

    body = next(f.body for f in form_fields(report, helpers()) if f.name == name)
    return body.rstrip("\n") + "\n"


def render_html(report: dict[str, Any]) -> str:
    return render(
        "report.html.j2",
        r=report,
        run=report["runs"][report["primary"]],
        tl=timeline(report["runs"], report["milestone_order"]),
        **helpers(),
    )


def render_json(report: dict[str, Any]) -> str:
    from vllm_triage import __version__

    return json.dumps({**report, "tool_version": __version__}, indent=2, ensure_ascii=False) + "\n"


RENDERERS = {"md": render_markdown, "html": render_html, "json": render_json}
