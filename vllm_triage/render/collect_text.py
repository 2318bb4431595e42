"""Terminal summary of `collect` (bundle.toml is the full record)."""

from __future__ import annotations


def render_collect_text(result: dict) -> str:
    steps = result["steps"]
    width = max((len(s["name"]) for s in steps), default=10)
    lines = [f"collected {result['run'].get('label', '')} into {result['bundle']} (bundle.toml)"]
    for step in steps:
        where = step.get("output") or step.get("reason") or ""
        if step.get("output") and step.get("reason"):
            where = f"{step['output']} ({step['reason']})"
        lines.append(f"  {step['status']:<8} {step['name']:<{width}} {step['seconds']:>7.2f} s  {where}")
    counts: dict[str, int] = {}
    for step in steps:
        counts[step["status"]] = counts.get(step["status"], 0) + 1
    lines.append(
        f"{len(result['files'])} file(s); steps: "
        + ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    )
    if result.get("required_failed"):
        lines.append(
            "INCOMPLETE: a required step failed: " + ", ".join(result["required_failed"]) + " (exit 1)"
        )
    lines.append(
        f"The bundle holds secrets as found: run `vllm-triage redact {result['bundle']} --out "
        f"SHARE_DIR` before sharing."
    )
    return "\n".join(lines) + "\n"
