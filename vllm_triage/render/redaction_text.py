"""Terminal summary of a redaction (the JSON report is the full record)."""

from __future__ import annotations

MAX_LEAKS_SHOWN = 20


def _kinds(summary: dict, category: str) -> str:
    parts = [f"{k['kind']} ×{k['count']}" for k in summary["by_kind"] if k["category"] == category]
    return ", ".join(parts)


def render_redaction_text(report: dict) -> str:
    summary = report["summary"]
    files = report["files"]
    statuses: dict[str, int] = {}
    for entry in files:
        statuses[entry["status"]] = statuses.get(entry["status"], 0) + 1
    status_text = ", ".join(f"{count} {status}" for status, count in sorted(statuses.items()))
    lines = [f"redacted {report['input']} → {report['output']} ({summary['files']} files: {status_text})"]
    if summary["secrets"]:
        lines.append(
            f"  {summary['secrets']} secret(s) replaced, {summary['distinct_secrets']} distinct: "
            + _kinds(summary, "secret")
        )
    else:
        lines.append("  no secret found")
    if summary["masks"]:
        lines.append(f"  {summary['masks']} value(s) masked: " + _kinds(summary, "mask"))
    for entry in files:
        if entry["status"] in (
            "binary-copied",
            "binary-dropped",
            "archive-left-out",
            "skipped-unsafe-path",
            "superseded",
        ) or entry.get("lines_cut"):
            lines.append(f"  {entry['path']}: {entry.get('note', entry['status'])}")
    leak_scan = report["leak_scan"]
    if leak_scan["status"] == "pass":
        lines.append("leak scan: clean")
    else:
        leaks = leak_scan["leaks"]
        lines.append(f"leak scan: FAILED — {len(leaks)} secret-looking value(s) remain:")
        for leak in leaks[:MAX_LEAKS_SHOWN]:
            lines.append(f"  {leak['file']}:{leak['line']}: {leak['kind']} (rule {leak['rule']})")
        if len(leaks) > MAX_LEAKS_SHOWN:
            lines.append(f"  … and {len(leaks) - MAX_LEAKS_SHOWN} more in the report")
    lines.append(f"report: {report['output']}/redaction-report.json")
    return "\n".join(lines) + "\n"
