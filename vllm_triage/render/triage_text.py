"""Triage as text a person reads in ten seconds.

Order: the verdict in words, the decisive fix under it, where the run got to; then the first error
and its block (the parsed prefix shown once per process, then the messages); the known issue;
findings by severity; the consequences last (they are what not to chase). Every line is wrapped to
`width` columns; `verbose` shows everything (the whole block, full paths, every consequence).
"""

from __future__ import annotations

from typing import Any

import click

from vllm_triage.ingest.prefixes import strip_ansi
from vllm_triage.render.text_layout import DEFAULT_WIDTH, elide_paths, finding_lines, wrap, wrap_all
from vllm_triage.render.verdict import (
    decisive_fix,
    first_sentence,
    headline,
    milestone_summary,
    phase_line,
    sorted_findings,
)

MAX_BLOCK_LINES = 14
MAX_CONSEQUENCES = 5


def _prefix_of(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row.get("process"), row.get("pid"), row.get("rank"), row.get("level"), row.get("source"))


def _prefix_text(row: dict[str, Any]) -> str:
    who = row.get("process") or ""
    if row.get("pid") is not None:
        who = f"{who} pid={row['pid']}".strip()
    if row.get("rank") is not None:
        who = f"{who} rank {row['rank']}".strip()
    parts = [who, row.get("level"), row.get("timestamp"), f"[{row['source']}]" if row.get("source") else None]
    return " ".join(p for p in parts if p)


def block_lines(fe: dict[str, Any], width: int, verbose: bool) -> list[str]:
    """The block with each run of lines sharing a prefix headed once by that prefix."""
    rows = fe.get("block_rows") or [{"message": line} for line in fe.get("block_lines") or []]
    if not verbose and len(rows) > MAX_BLOCK_LINES:
        # The headline and the end of the block (innermost frames, exception) matter most.
        hidden = len(rows) - MAX_BLOCK_LINES
        rows = rows[:3] + [{"gap": hidden}] + rows[-(MAX_BLOCK_LINES - 3) :]
    out: list[str] = []
    current: tuple[Any, ...] | None = None
    for row in rows:
        if "gap" in row:
            out.append(f"  │ … {row['gap']} lines (-v shows them) …")
            continue
        key = _prefix_of(row)
        if key != current:
            current = key
            header = _prefix_text(row)
            if header:
                out.extend(wrap(header, width, "  ┌ "))
        message = strip_ansi(row.get("message") or "")
        if not verbose and row.get("line") == fe.get("line") and len(message) > width // 2:
            # The first error is printed in full above the block: one line here says where it sits.
            suffix = f"… (line {row['line']}, the first error above)"
            out.append(f"  │ ▶ {message[: max(width - 6 - len(suffix), 10)].rstrip()}{suffix}")
            continue
        out.extend(wrap(message if verbose else elide_paths(message), width, "  │ ", "    "))
    return out


def render_triage_text(
    data: dict[str, Any], colour: bool = False, verbose: bool = False, width: int = DEFAULT_WIDTH
) -> str:
    def style(text: str, **kw: Any) -> str:
        return click.style(text, **kw) if colour else text

    out: list[str] = []
    fe = data.get("first_error")
    failed = fe is not None and bool(fe) and fe.get("kind") != "warning"
    colour_of_head = "red" if failed else ("yellow" if fe else "green")
    out.extend(style(line, bold=True, fg=colour_of_head) for line in wrap(headline(data), width))
    fix = decisive_fix(data)
    if fix:
        out.extend(wrap(f"fix: {fix}", width, "  ", "     "))
    if fe:
        out.extend(wrap(phase_line(data), width, "  ", "  "))
    out.extend(wrap(milestone_summary(data), width, "  ", "  "))
    if fe:
        where = f"{fe['file']}:{fe['line']}"
        out.append("")
        out.extend(
            style(line, bold=True)
            for line in wrap(f"first error  {where}  (category {fe['category']})", width)
        )
        out.extend(style(line, fg="red") for line in wrap(fe["message"], width, "  ", "  "))
        explain = fe.get("explain") or ""
        if explain and first_sentence(explain) != explain.rstrip("."):  # the headline had only its start
            out.extend(wrap(explain, width, "  ", "  "))
        if len(fe.get("block_lines") or []) > 1:
            out.append("")
            out.append(style(f"block  lines {fe['block']['start']}-{fe['block']['end']}", bold=True))
            out.extend(block_lines(fe, width, verbose))
    known = data.get("known_issue")
    if known:
        out.append("")
        score = known.get("score") or 0
        title = f"known issue  {known.get('title')} ({known.get('ref')}, score {score:.2f})"
        out.extend(style(line, bold=True) for line in wrap(title, width))
        if known.get("workaround") and known["workaround"] != fix:
            out.extend(wrap(f"workaround: {known['workaround']}", width, "  ", "  "))
    findings = sorted_findings(data)
    if findings:
        out.append("")
        out.append(style("findings", bold=True))
        for f in findings:
            out.extend(finding_lines(f, width, style))
            # INFO advice is for later; the fix of the failure is at the top (-v shows all advice).
            if f.get("advice") and (verbose or f["severity"] != "info" or f["id"] == "next-step"):
                out.extend(wrap(f"→ {f['advice']}", width, "          ", "  "))
    consequences = data.get("consequences") or []
    if consequences:
        out.append("")
        out.append(style("consequences (not the cause)", bold=True))
        shown = consequences if verbose else consequences[:MAX_CONSEQUENCES]
        for c in shown:
            count = f" ×{c['count']}" if c.get("count", 1) > 1 else ""
            who = " ".join(str(x) for x in (c.get("process"), c.get("level")) if x)
            text = (c.get("message") or c.get("text") or "").strip()
            label = f"line {c['line']}" + (f" ({who})" if who else "")
            out.extend(wrap_all([f"{label}: {text}{count}"], width, "  ", "    "))
        if len(shown) < len(consequences):
            out.append(f"  … {len(consequences) - len(shown)} more (-v shows them)")
    return "\n".join(out) + "\n"
