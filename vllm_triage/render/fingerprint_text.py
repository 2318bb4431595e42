"""A fingerprint as text: values grouped by layer (host, container, image, launch, env, request),
each with the file:line it was read at, then what could not be read, then the findings."""

from __future__ import annotations

import json
from typing import Any

import click

_SEVERITY_COLOUR = {"error": "red", "warning": "yellow", "info": "cyan"}
# (title, name prefixes) in the order a person reads a run: machine, container, image, command.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("host", ("host.",)),
    ("gpu (host or container: not said)", ("gpu.",)),
    ("container", ("container.",)),
    (
        "image",
        ("image.", "vllm.", "torch.", "cuda.", "python.", "nccl.", "os", "platform", "attention.", "pip."),
    ),
    ("launch", ("launcher", "arg.", "engine.")),
    ("env", ("env.",)),
    ("request", ("request.",)),
)
VALUE_WIDTH = 60


def _layer(name: str) -> str:
    for title, prefixes in LAYERS:
        if name.startswith(prefixes):
            return title
    return "other"


def _show(value: Any) -> str:
    if isinstance(value, list) and value and all(isinstance(v, (str, int, float)) for v in value):
        if len(set(value)) == 1 and len(value) > 1:
            text = f"{len(value)}× {value[0]}"
        else:
            text = ", ".join(str(v) for v in value)
    elif isinstance(value, (dict, list)):
        text = json.dumps(value, default=str, ensure_ascii=False)
    else:
        text = str(value)
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 1] + "…"


def _where(source: dict[str, Any]) -> str:
    return f"{source['file']}:{source['line']}" if source.get("line") else str(source["file"])


def render_fingerprint_text(
    data: dict[str, Any], inputs: list[dict[str, Any]], notes: list[str], colour: bool = False
) -> str:
    def style(text: str, **kw: Any) -> str:
        return click.style(text, **kw) if colour else text

    out: list[str] = []
    for entry in inputs:
        detail = ", ".join(str(x) for x in (entry.get("role"), entry.get("scope"), entry.get("kind")) if x)
        out.append(f"input  {entry['path']}  ({detail})")
    grouped: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for part in ("knobs", "facts"):
        for name, item in data[part].items():
            grouped.setdefault(_layer(name), []).append((name, part[:-1], item))
    for title in [t for t, _ in LAYERS] + ["other"]:
        rows = grouped.get(title)
        if not rows:
            continue
        out.append("")
        out.append(style(title, bold=True))
        packages = [row for row in rows if row[0].startswith("pip.")]
        rows = [row for row in rows if not row[0].startswith("pip.")]
        width = max(len(name) for name, _, _ in rows) if rows else 0
        for name, kind, item in sorted(rows):
            marker = "*" if kind == "knob" else " "
            line = (
                f" {marker}{name:<{width}}  {_show(item['value']):<{VALUE_WIDTH}}  {_where(item['source'])}"
            )
            out.append(line.rstrip())
            if item.get("note"):
                out.append(f"    {'':<{width}}  ({item['note']})")
        if packages:
            listed = ", ".join(f"{name[4:]} {item['value']}" for name, _, item in sorted(packages)[:8])
            more = f" and {len(packages) - 8} more" if len(packages) > 8 else ""
            out.append(f"  pip: {listed}{more}")
    out.append("")
    out.append("(* knob: what a person sets; the rest are facts observed or derived)")
    if notes:
        out.append("")
        out.append(style("notes", bold=True))
        out.extend(f"  {note}" for note in notes)
    if data["findings"]:
        out.append("")
        out.append(style("findings", bold=True))
        for finding in data["findings"]:
            label = style(
                finding["severity"].upper(), fg=_SEVERITY_COLOUR.get(finding["severity"], "white"), bold=True
            )
            out.append(f"{label} {finding['id']}: {finding['message']}")
            if finding.get("evidence"):
                out.append("    at " + ", ".join(_where(e) for e in finding["evidence"]))
            if finding.get("advice"):
                out.append(f"    → {finding['advice']}")
    return "\n".join(out) + "\n"
