"""Triage as text a person reads in ten seconds: phase, root line, block, consequences, next step."""

from __future__ import annotations

from typing import Any

import click

from vllm_triage.ingest.prefixes import strip_ansi

MAX_BLOCK_LINES = 14
_SEVERITY_COLOUR = {"error": "red", "warning": "yellow", "info": "cyan"}


def render_triage_text(data: dict[str, Any], colour: bool = False, verbose: bool = False) -> str:
    def style(text: str, **kw) -> str:
        return click.style(text, **kw) if colour else text

    out: list[str] = []
    fe = data["first_error"]
    head = f"phase: {data['phase']}"
    if fe:
        head += f"   category: {fe['category']}"
        if fe.get("kind") != "root":
            head += f"   ({fe['kind'].replace('_', ' ')})"
    out.append(style(head, bold=True, fg="red" if fe else "green"))
    out.append(f"  why: {data['phase_reason']}")
    milestones = " → ".join(m["marker"] for m in data["milestones"]) or "none"
    out.append(f"  milestones: {milestones}")
    if data.get("first_missing_milestone") and fe:
        out.append(f"  first missing: {data['first_missing_milestone']}")
    if fe:
        where = f"{fe['file']}:{fe['line']}"
        who = ", ".join(str(x) for x in (fe.get("process"), fe.get("timestamp")) if x)
        out.append("")
        out.append(style("first error", bold=True) + f"  {where}" + (f"  ({who})" if who else ""))
        out.append("  " + style(fe["message"], fg="red"))
        if fe.get("explain"):
            out.append("  " + fe["explain"])
        lines = fe.get("block_lines") or []
        if len(lines) > 1:
            out.append("")
            out.append(style(f"block  lines {fe['block']['start']}-{fe['block']['end']}", bold=True))
            if verbose or len(lines) <= MAX_BLOCK_LINES:
                shown = lines
            else:
                # The headline and the end of the block (innermost frames, exception) matter most.
                hidden = len(lines) - MAX_BLOCK_LINES
                shown = lines[:3] + [f"… {hidden} lines (use -v for all) …"] + lines[-(MAX_BLOCK_LINES - 3) :]
            # Colour codes of the input would garble the terminal; the JSON keeps them verbatim.
            out.extend("  │ " + strip_ansi(line) for line in shown)
    known = data.get("known_issue")
    if known:
        out.append("")
        out.append(
            style("known issue", bold=True)
            + f"  {known.get('title')} ({known.get('ref')}, score {known.get('score', 0):.2f})"
        )
        if known.get("workaround"):
            out.append(f"  workaround: {known['workaround']}")
    if data["consequences"]:
        out.append("")
        out.append(style("consequences (not the cause)", bold=True))
        for c in data["consequences"][: 12 if not verbose else None]:
            count = f" ×{c['count']}" if c.get("count", 1) > 1 else ""
            out.append(f"  line {c['line']}: {strip_ansi(c['text']).strip()[:150]}{count}")
    if data["findings"]:
        out.append("")
        for f in data["findings"]:
            label = style(f["severity"].upper(), fg=_SEVERITY_COLOUR.get(f["severity"], "white"), bold=True)
            out.append(f"{label} {f['id']}: {f['message']}")
            if f.get("advice"):
                out.append(f"    → {f['advice']}")
    return "\n".join(out) + "\n"
