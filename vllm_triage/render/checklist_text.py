"""The checklist as text a person works through: one line per item with its status, then the
evidence or what to collect and the command that collects it. Renders the JSON contract
(`vllm-triage.check/1`), never the objects behind it."""

from __future__ import annotations

from typing import Any

import click

_STATUS = {"pass": ("PASS", "green"), "fail": ("FAIL", "red"), "missing": ("MISSING", "yellow")}


def _where(evidence: list[dict[str, Any]]) -> str:
    shown = [f"{e['file']}:{e['line']}" if e.get("line") else str(e["file"]) for e in evidence[:3]]
    return f"  [{', '.join(shown)}]" if shown else ""


def _merged(diagnoses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per diagnosis, naming where each trial's first error calls for it."""
    out: dict[str, dict[str, Any]] = {}
    for d in diagnoses:
        e = d["evidence"]
        entry = out.setdefault(d["id"], {"label": d["label"], "requires": d["requires"], "places": []})
        entry["places"].append(f"{d['category']} at {e['file']}:{e['line']}")
    for entry in out.values():
        entry["where"] = "; ".join(entry["places"])
    return list(out.values())


def render_checklist_text(data: dict[str, Any], colour: bool = False) -> str:
    def style(text: str, **kw: Any) -> str:
        return click.style(text, **kw) if colour else text

    out: list[str] = []
    counts = data["summary"]
    trials = data["trials"]
    subject = trials[0]["path"] if len(trials) == 1 else f"{len(trials)} trials"
    verdict = "complete" if data["complete"] else "incomplete"
    out.append(
        style(f"check {subject}: {verdict}", bold=True, fg="green" if data["complete"] else "red")
        + f"  ({counts['pass']} pass, {counts['fail']} fail, {counts['missing']} missing)"
    )
    for diagnosis in _merged(data["diagnoses"]):
        out.append(
            f"  diagnosis: {diagnosis['label']} ({diagnosis['where']}) → also needs "
            f"{', '.join(diagnosis['requires'])}"
        )
    out.append("")
    for item in data["items"]:
        label, fg = _STATUS[item["status"]]
        extra = f"  (needed for {item['required_by']})" if item.get("required_by") else ""
        out.append(style(f"{label:<8}", fg=fg, bold=True) + f" {item['title']}{extra}")
        rows = item["trials"] or [item]
        if len(rows) > 1 and all(row["status"] == "pass" for row in rows):
            rows = [{**rows[0], "trial": "every trial"}] if len({r["message"] for r in rows}) == 1 else rows
        for row in rows:
            if len(rows) > 1:
                mark = _STATUS[row["status"]][0].lower()
                out.append(f"         {row['trial']}: {mark}: {row['message']}{_where(row['evidence'])}")
            else:
                out.append(f"         {row['message']}{_where(row['evidence'])}")
            for collect in row["collect"]:
                lines = collect["command"].splitlines() or [""]
                out.append(f"         → {collect['place']}: {lines[0]}")
                out.extend(f"           {line}" for line in lines[1:])
    if not data["complete"] and data.get("collect_all"):
        out.append("")
        out.append(f"Or collect the scene at once on the failing host: {data['collect_all']}")
    for note in data.get("notes") or []:
        out.append(f"note: {note}")
    return "\n".join(out).rstrip() + "\n"
