"""diff and series as text a person reads in ten seconds: the verdict and the changed knobs
first, then the failure comparison, drift, and what was left out. Renders the JSON contracts
(`vllm-triage.diff/1`, `vllm-triage.series/1`), never the objects behind them."""

from __future__ import annotations

from typing import Any

import click

from vllm_triage.compare.values import shown

_VERDICT_COLOUR = {"identical": "green", "one-variable": "green", "confounded": "red"}
MAX_DERIVED = 4
MAX_SIGNATURE = 140


class _Out:
    def __init__(self, colour: bool) -> None:
        self.colour = colour
        self.lines: list[str] = []

    def style(self, text: str, **kw: Any) -> str:
        return click.style(text, **kw) if self.colour else text

    def add(self, text: str = "") -> None:
        self.lines.append(text)

    def text(self) -> str:
        return "\n".join(self.lines).rstrip() + "\n"


def where_text(source: dict[str, Any] | None, root: str = "") -> str:
    """`file:line`, with the run's own folder cut off so two runs' paths stay short."""
    if not source or not source.get("file"):
        return ""
    file = str(source["file"])
    if root and root not in ("-",) and file.startswith(root.rstrip("/") + "/"):
        file = file[len(root.rstrip("/")) + 1 :]
    return f"{file}:{source['line']}" if source.get("line") else file


def _value(item: dict[str, Any] | None, name: str, limit: int = 80) -> str:
    return shown(name, item["value"], limit) if item else "(not set)"


def pair_text(change: dict[str, Any], limit: int = 80) -> str:
    """`old → new`; a side that did not set the knob reads `(not set)`, or `(not set: default X)`
    when vLLM's default for that version is known. Other notes follow in brackets."""
    name = change["name"]
    note = change.get("note") or ""
    sides = []
    for side in ("a", "b"):
        text = _value(change[side], name, limit)
        if change[side] is None and note.startswith("default "):
            text = f"(not set: {note})"
        sides.append(text)
    text = " → ".join(sides)
    # "not set" and "default X" describe the absent side, already said there.
    if note and note != "not set" and not note.startswith("default "):
        text += f" ({note})"
    return text


def _provenance(change: dict[str, Any], root_a: str, root_b: str) -> str:
    wa = where_text(change["a"]["source"] if change["a"] else None, root_a)
    wb = where_text(change["b"]["source"] if change["b"] else None, root_b)
    if wa and wb:
        return wa if wa == wb else f"{wa} → {wb}"
    return wa or wb


def _verdict_line(out: _Out, verdict: str, variables: int, exit_code: int) -> None:
    what = {
        "identical": "nothing changed but noise",
        "one-variable": "one variable changed",
        "confounded": f"{variables} variables changed: the result cannot be attributed to any one of them",
    }[verdict]
    out.add(
        out.style(f"{verdict.upper()}", bold=True, fg=_VERDICT_COLOUR[verdict])
        + f" — {what} (exit {exit_code})"
    )


def _changes(out: _Out, changes: list[dict[str, Any]], root_a: str, root_b: str) -> None:
    width = max((len(c["label"]) for c in changes), default=0)
    for c in changes:
        first, *rest = c["knobs"]
        head = f"  {c['label']:<{width}}  {pair_text(first)}"
        if c["label"] != first["name"] and c["id"] != first["name"]:
            head += f"  [{first['name']}]"
        out.add(head + f"   {_provenance(first, root_a, root_b)}")
        for knob in rest:
            out.add(
                f"  {'':<{width}}  {knob['name']}: {pair_text(knob)}   {_provenance(knob, root_a, root_b)}"
            )
        derived = c.get("derived") or []
        if derived:
            listed = "; ".join(f"{d['name']} {pair_text(d, limit=32)}" for d in derived[:MAX_DERIVED])
            more = f"; +{len(derived) - MAX_DERIVED} more" if len(derived) > MAX_DERIVED else ""
            out.add(f"  {'':<{width}}  moved with it: {listed}{more}")


def _drift(out: _Out, drift: list[dict[str, Any]], root_a: str, root_b: str) -> None:
    out.add(
        out.style("drift", bold=True) + " (changed with no knob to explain it; each counts as a variable)"
    )
    for d in drift:
        out.add(f"  - {d['message']}")
        for v in d["values"][:MAX_DERIVED]:
            out.add(f"      {v['name']}: {pair_text(v)}   {_provenance(v, root_a, root_b)}")
        if d.get("advice"):
            out.add(f"      → {d['advice']}")


def _outcome_line(label: str, outcome: dict[str, Any], root: str) -> str:
    if not outcome["known"]:
        return f"  {label}: unknown (no log)"
    fe = outcome.get("first_error")
    if not fe:
        return f"  {label}: no failure" + (" (server ready)" if outcome.get("ready") else "")
    where = where_text({"file": fe.get("file"), "line": fe.get("line")}, root)
    signature = outcome["signature"] or ""
    if len(signature) > MAX_SIGNATURE:
        signature = signature[: MAX_SIGNATURE - 1] + "…"
    return f"  {label}: {outcome['phase']} — {fe.get('category')}   {where}\n      {signature}"


def render_diff_text(data: dict[str, Any], colour: bool = False, show_noise: bool = False) -> str:
    out = _Out(colour)
    a, b = data["a"], data["b"]
    out.add(f"diff: {a['label']} → {b['label']}")
    _verdict_line(out, data["verdict"], data["variables"], data["exit_code"])
    coverage = data["coverage"]
    if not coverage["comparable"]:
        # "identical" over a bundle that recorded almost nothing is no evidence of sameness.
        out.add(
            out.style("  but", fg="yellow")
            + f" only {coverage['compared']} value(s) were recorded in both runs "
            f"and {coverage['not_compared']} in one only: collect the same artefacts for both"
        )
    if data["changes"]:
        out.add("")
        out.add(out.style("changed", bold=True))
        _changes(out, data["changes"], a["path"], b["path"])
    if data["drift"]:
        out.add("")
        _drift(out, data["drift"], a["path"], b["path"])
    if data["retest_order"]:
        out.add("")
        out.add(
            out.style("re-test one change at a time", bold=True)
            + f", starting from {a['label']}, in this order:"
        )
        for step in data["retest_order"]:
            out.add(f"  {step['step']}. {step['label']}  ({step['layer_label']})")
        if data["drift"]:
            out.add("  but first remove the drift above: it changes the result with no knob to re-test.")
    failure = data["failure"]
    out.add("")
    out.add(out.style("failure", bold=True) + f": {failure['conclusion']}")
    out.add(_outcome_line(a["label"], a["outcome"], a["path"]))
    out.add(_outcome_line(b["label"], b["outcome"], b["path"]))
    similarity = (
        f" (signature similarity {failure['similarity']:.2f})"
        if failure.get("similarity") is not None
        else ""
    )
    out.add(f"  {failure['message']}{similarity}")
    if failure["advice"]:
        out.add(f"  → {failure['advice']}")
    _left_out(out, data, show_noise)
    return out.text()


def _left_out(out: _Out, data: dict[str, Any], show_noise: bool) -> None:
    a, b = data["a"], data["b"]
    parts = []
    if data["defaults"]:
        parts.append(f"{len(data['defaults'])} explicit default(s)")
    if data["not_compared"]:
        parts.append(f"{len(data['not_compared'])} value(s) not comparable (one run only, or unreadable)")
    if data["noise"]:
        parts.append(f"{len(data['noise'])} noise")
    if not parts and not show_noise:
        return
    out.add("")
    hint = "" if show_noise else "  (--show-noise lists them)"
    out.add(out.style("not counted", bold=True) + ": " + (", ".join(parts) or "nothing") + hint)
    if not show_noise:
        return
    for d in data["defaults"]:
        side = a if d["side"] == "a" else b
        out.add(
            f"  default  {d['name']} = {shown(d['name'], d['value'])} in {side['label']} "
            f"(vLLM's default)   {where_text(d['source'], side['path'])}"
        )
    for n in data["not_compared"]:
        out.add(f"  skipped  {n['name']}: {pair_text(n)}")
    for n in data["noise"]:
        out.add(f"  noise    {n['name']}: {pair_text(n)}   [{n['rule']}: {n['why']}]")


def template_helpers() -> dict[str, Any]:
    """The functions the Markdown templates (reports/diff.md.j2, series.md.j2) format values with."""
    return {"pair": pair_text, "where": where_text, "shown": shown, "trial_outcome": trial_outcome}


# ---------------------------------------------------------------------------------- series


def trial_outcome(outcome: dict[str, Any]) -> str:
    if not outcome["known"]:
        return "unknown (no log)"
    fe = outcome.get("first_error")
    if not fe:
        return "passed" if outcome.get("ready") else "no failure"
    return f"{outcome['phase']} — {fe.get('category')}"


def render_series_text(data: dict[str, Any], colour: bool = False, show_noise: bool = False) -> str:
    out = _Out(colour)
    trials = data["trials"]
    how = {"arguments": "in the order given", "started": "by recorded start time", "name": "by folder name"}
    out.add(f"series: {len(trials)} trials ({how.get(data['ordered_by'], data['ordered_by'])})")
    confounded = data["confounded_steps"]
    if confounded:
        listed = ", ".join(f"T{n - 1}→T{n}" for n in confounded)
        out.add(
            out.style("CONFOUNDED", bold=True, fg="red")
            + f" — more than one variable changed at {listed} (exit {data['exit_code']})"
        )
    else:
        out.add(out.style("ONE VARIABLE PER STEP", bold=True, fg="green") + f" (exit {data['exit_code']})")
    blind = data.get("uncomparable_steps") or []
    if blind:
        listed = ", ".join(f"T{n - 1}→T{n}" for n in blind)
        out.add(
            out.style("  but", fg="yellow")
            + f" {listed}: the two trials recorded too little in common to tell "
            "what changed; collect the same artefacts for every trial"
        )
    out.add("")
    width = max(len(t["label"]) for t in trials)
    for i, trial in enumerate(trials):
        line = f"  T{trial['trial']:<2} {trial['label']:<{width}}  {trial_outcome(trial['outcome'])}"
        if i:
            step = data["steps"][i - 1]
            changed = [c["label"] for c in step["changes"]] + [f"drift: {d['id']}" for d in step["drift"]]
            mark = out.style("  ⚠ confounded", fg="red") if step["verdict"] == "confounded" else ""
            nothing = "nothing" if step.get("comparable", True) else "nothing recorded in both"
            line += f"   changed: {', '.join(changed) or nothing}{mark}"
        out.add(line)
    detail = [s for s in data["steps"] if s["changes"] or s["drift"]]
    if detail:
        out.add("")
        out.add(out.style("steps", bold=True))
        for step in detail:
            out.add(
                f"  T{step['from']}→T{step['to']}: {step['verdict']}; failure: "
                f"{step['failure']['conclusion']}"
            )
            for c in step["changes"]:
                out.add(f"      {c['label']}: " + "; ".join(pair_text(k) for k in c["knobs"]))
            for d in step["drift"]:
                out.add(f"      drift: {d['message']}")
    if show_noise:
        noisy = [s for s in data["steps"] if s.get("noise")]
        out.add("")
        out.add(out.style("noise left out", bold=True) + (": none" if not noisy else ""))
        for step in noisy:
            listed = ", ".join(sorted({n["name"] for n in step["noise"]}))
            out.add(f"  T{step['from']}→T{step['to']}: {listed}")
    if data["repeats"]:
        out.add("")
        out.add(out.style("repeated trials", bold=True) + " (same knobs)")
        for r in data["repeats"]:
            names = ", ".join(f"T{n}" for n in r["trials"])
            out.add(f"  {names}: {r['verdict']} — {r['message']}")
            for d in r["drift"]:
                out.add(
                    f"      drift between them: {d['message']} (T{', T'.join(str(n) for n in d['trials'])})"
                )
            if r["advice"] and r["verdict"] != "stable-pass":
                out.add(f"      → {r['advice']}")
    out.add("")
    breaks = data["order"]["breaks"]
    order = " → ".join(s["label"] for s in data["order"]["stages"])
    if breaks:
        out.add(out.style("order broken", bold=True, fg="yellow") + f" (reintroduce in this order: {order})")
        for br in breaks:
            out.add(f"  {br['message']}")
    else:
        out.add(out.style("order kept", bold=True) + f" ({order})")
    if data["prefix_cache"]:
        out.add("")
        out.add(out.style("prefix caching", bold=True))
        for p in data["prefix_cache"]:
            where = where_text(p.get("evidence"))
            out.add(f"  {p['message']}" + (f"   {where}" if where else ""))
            if p["advice"]:
                out.add(f"      → {p['advice']}")
    return out.text()
