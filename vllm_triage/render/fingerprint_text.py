"""A fingerprint as text: values grouped by layer (host, container, image, launch, env, request),
each with the file:line it was read at, then what could not be read, then the findings."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from vllm_triage.render.text_layout import DEFAULT_WIDTH, columns, finding_lines, wrap, wrap_all
from vllm_triage.render.verdict import SEVERITY_ORDER

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


def _show(value: Any, room: int = VALUE_WIDTH) -> str:
    if isinstance(value, list) and value and all(isinstance(v, (str, int, float)) for v in value):
        if len(set(value)) == 1 and len(value) > 1:
            text = f"{len(value)}× {value[0]}"
        else:
            text = ", ".join(str(v) for v in value)
    elif isinstance(value, (dict, list)):
        text = json.dumps(value, default=str, ensure_ascii=False)
    else:
        text = str(value)
    return text if len(text) <= room else text[: room - 1] + "…"


def _where(source: dict[str, Any], root: str = "") -> str:
    """`file:line`, relative to the folder every input sits in (said once, above the values)."""
    file = str(source["file"])
    if root and file.startswith(root):
        file = file[len(root) :]
    return f"{file}:{source['line']}" if source.get("line") else file


def _common_root(inputs: list[dict[str, Any]]) -> str:
    """`samples/kv-cache-too-small/` when every input is under it, else ''."""
    paths = [str(entry["path"]) for entry in inputs if entry.get("path")]
    if len(paths) < 2 or any(p.startswith("<") for p in paths):
        return ""
    root = os.path.commonpath(paths)
    return root.rstrip("/") + "/" if root and root not in paths else ""


def _findings(data: dict[str, Any], width: int, style: Any) -> list[str]:
    """Findings first, most severe first; their evidence with full paths (the common folder is
    said only further down, above the values)."""
    out: list[str] = []
    found = sorted(data["findings"], key=lambda f: SEVERITY_ORDER.get(f["severity"], 3))
    if not found:
        return ["no findings: nothing in this environment contradicts itself or the method"]
    counts = ", ".join(
        f"{n} {sev}"
        for sev in ("error", "warning", "info")
        if (n := sum(f["severity"] == sev for f in found))
    )
    out.append(style(f"findings ({counts})", bold=True))
    for finding in found:
        out.extend(finding_lines(finding, width, style))
        if finding.get("evidence"):
            out.extend(
                wrap("at " + ", ".join(_where(e) for e in finding["evidence"]), width, "          ", "  ")
            )
        if finding.get("advice"):
            out.extend(wrap(f"→ {finding['advice']}", width, "          ", "  "))
    return out


def render_fingerprint_text(
    data: dict[str, Any],
    inputs: list[dict[str, Any]],
    notes: list[str],
    colour: bool = False,
    width: int = DEFAULT_WIDTH,
) -> str:
    """Findings first (what to act on, most severe first), then the values by layer, each cut to
    `width` columns (a value longer than its column ends in …; --format json has it whole)."""

    def style(text: str, **kw: Any) -> str:
        return click.style(text, **kw) if colour else text

    root = _common_root(inputs)
    out: list[str] = _findings(data, width, style)
    out.append("")
    if root:
        out.extend(wrap(f"inputs in {root} (paths below are relative to it)", width, "", "  "))
    for entry in inputs:
        detail = ", ".join(str(x) for x in (entry.get("role"), entry.get("scope"), entry.get("kind")) if x)
        out.extend(wrap(f"input  {_where({'file': entry['path']}, root)}  ({detail})", width, "", "       "))
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
        name_width = min(max(len(name) for name, _, _ in rows), 34) if rows else 0
        for name, kind, item in sorted(rows):
            marker = "*" if kind == "knob" else " "
            where = _where(item["source"], root)
            room = max(width - name_width - len(where) - 7, 12)
            value = _show(item["value"], room)
            line = f" {marker}{name:<{name_width}}  {value:<{room}}  {where}"
            if columns(line.rstrip()) > width:  # a long name or source: the source on its own line
                out.append(
                    f" {marker}{name}  {_show(item['value'], max(width - len(name) - 4, 12))}".rstrip()
                )
                out.extend(wrap(where, width, "      "))
            else:
                out.append(line.rstrip())
            if item.get("note"):
                out.extend(wrap(f"({item['note']})", width, "      ", "  "))
        if packages:
            listed = ", ".join(f"{name[4:]} {item['value']}" for name, _, item in sorted(packages)[:8])
            more = f" and {len(packages) - 8} more" if len(packages) > 8 else ""
            out.extend(wrap(f"pip: {listed}{more}", width, "  ", "  "))
    out.append("")
    out.append("(* knob: what a person sets; the rest are facts observed or derived)")
    if notes:
        out.append("")
        out.append(style("notes", bold=True))
        out.extend(wrap_all(notes, width, "  ", "  "))
    return "\n".join(out) + "\n"
