"""`vllm-triage report BUNDLE…`: the upstream-ready report as data (`vllm-triage.report/1`).

One section per run (a bundle is a run; several are trials in order): the environment (collect_env
as pasted, and the fingerprint's key values with where they were read), the launch command and the
request as kept, the first error block, milestones and phase, consequences; then what was tried,
one variable at a time (the series `vllm-triage series` computes), and the checklist's verdict.
The Markdown, HTML and JSON renderings all render this data, after redaction (report_redact.py).
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from vllm_triage import __version__
from vllm_triage.bundle.check.checklist import run_checklist
from vllm_triage.bundle.check.placeholders import find_placeholders
from vllm_triage.bundle.trials import Trial
from vllm_triage.compare.changes import knob_label
from vllm_triage.core.roles import Role
from vllm_triage.fingerprint import views
from vllm_triage.fingerprint.model import Fingerprint
from vllm_triage.ingest.sources import Source
from vllm_triage.render.triage_text import block_lines
from vllm_triage.render.verdict import SEVERITY_ORDER, decisive_fix, headline

if TYPE_CHECKING:
    from vllm_triage.engine.rules import RuleSet

SCHEMA = "vllm-triage.report/1"
MAX_CONSEQUENCES = 6
MAX_FINDINGS = 8
MAX_ARTEFACT_CHARS = 60_000  # a pasted artefact longer than this is cut (GitHub limits an issue to 65,536)
MAX_ENV = 60
# Variables every shell has: they say nothing about the run and only lengthen the report.
_ENV_NOISE = {
    "PATH",
    "HOME",
    "HOSTNAME",
    "PWD",
    "OLDPWD",
    "SHLVL",
    "TERM",
    "LS_COLORS",
    "LANG",
    "LC_ALL",
    "SHELL",
    "USER",
    "LOGNAME",
    "MAIL",
    "_",
    "LESSOPEN",
    "LESSCLOSE",
    "DEBIAN_FRONTEND",
    "NVARCH",
}
# (label, fingerprint names tried in order)
_ENVIRONMENT_ROWS = (
    ("vLLM", ("vllm.version", "pip.vllm", "image.vllm_version")),
    ("image", ("image.ref",)),
    ("image digest", ("image.digest", "image.id")),
    ("PyTorch", ("torch.version", "pip.torch")),
    ("CUDA (build)", ("cuda.build",)),
    ("NCCL", ("nccl.version",)),
    ("Python", ("python.version",)),
    ("OS", ("os",)),
    ("node", ("host.node",)),
)


def short(file: str | None, trial: Trial) -> str:
    """A file as the bundle names it: without the bundle's own path (and the user's folders in it)."""
    if not file:
        return ""
    text = str(file)
    for prefix in (trial.path.rstrip("/") + "/", trial.path + "!"):
        if trial.path not in ("-", "") and text.startswith(prefix):
            return text[len(prefix) :]
    if "!" in text:
        return text.split("!", 1)[1]
    return PurePosixPath(text).name if text.startswith("/") else text


def _where(value: dict[str, Any] | None, trial: Trial) -> str:
    if not value or not value.get("file"):
        return ""
    file = short(value["file"], trial)
    return f"{file}:{value['line']}" if value.get("line") else file


def _text(trial: Trial, source: Source) -> dict[str, Any]:
    text = trial.text(source)
    cut = len(text) > MAX_ARTEFACT_CHARS
    return {"file": short(source.name, trial), "text": text[:MAX_ARTEFACT_CHARS].rstrip("\n"), "cut": cut}


def _usable(trial: Trial, role: Role, spoiled: set[str]) -> list[Source]:
    return [s for s in trial.of_role(role) if s.name not in spoiled]


def _environment(trial: Trial, spoiled: set[str]) -> dict[str, Any]:
    fp = trial.fingerprint
    rows = []
    for label, names in _ENVIRONMENT_ROWS:
        found = next(
            (s for s in (fp.get(n) for n in names) if s is not None and s.value not in (None, "")), None
        )
        if found is not None:
            rows.append(
                {"label": label, "value": str(found.value), "where": _where(found.source.to_json(), trial)}
            )
    driver = views.host_driver(fp)
    if driver is not None:
        scope, found = driver
        rows.append(
            {
                "label": "NVIDIA driver",
                "value": f"{found.value} ({scope} view)",
                "where": _where(found.source.to_json(), trial),
            }
        )
    gpus = _gpus(fp)
    if gpus:
        rows.append({"label": "GPUs", **gpus, "where": _where(gpus.pop("source"), trial)})
    collect_env = _usable(trial, Role.COLLECT_ENV, spoiled)
    return {"collect_env": _text(trial, collect_env[0]) if collect_env else None, "rows": rows}


def _gpus(fp: Fingerprint) -> dict[str, Any] | None:
    found = views.first(fp, ".gpu_models", views.SERVER_VIEW)
    if found is None:
        return None
    scope, models = found
    names = models.value if isinstance(models.value, list) else [models.value]
    counted: dict[str, int] = {}
    for name in names:
        counted[str(name)] = counted.get(str(name), 0) + 1
    value = ", ".join(f"{n} × {m}" for m, n in counted.items())
    return {"value": f"{value} ({scope} view)", "source": models.source.to_json()}


def _command(trial: Trial, spoiled: set[str]) -> dict[str, Any] | None:
    commands = _usable(trial, Role.LAUNCH_COMMAND, spoiled)
    if commands:
        return {**_text(trial, commands[0]), "how": "as kept in the bundle"}
    fp = trial.fingerprint
    entry, cmd = fp.get("container.entrypoint"), fp.get("container.cmd")
    if cmd is not None or entry is not None:
        words = [
            *(entry.value if entry and isinstance(entry.value, list) else []),
            *(cmd.value if cmd and isinstance(cmd.value, list) else []),
        ]
        if words:
            import shlex

            return {
                "file": _where(next(s for s in (cmd, entry) if s is not None).source.to_json(), trial),
                "text": shlex.join(str(w) for w in words),
                "cut": False,
                "how": "what the container ran (docker inspect Path and Args)",
            }
    return None


def _env_vars(trial: Trial) -> list[str]:
    """NAME=value of the variables the environment listing or the container recorded."""
    fp = trial.fingerprint
    out = []
    for name, candidates in sorted(fp.candidates.items()):
        if not name.startswith("env.") or name[4:] in _ENV_NOISE:
            continue
        if any(c.role in (Role.ENVIRONMENT, Role.CONTAINER_INSPECT, Role.LAUNCH_COMMAND) for c in candidates):
            value = fp.value(name)
            out.append(f"{name[4:]}={value}")
    return out[:MAX_ENV]


def _caret_line(line: str) -> bool:
    """A traceback's marker line (`    ^^^^^^` or `~~~^^^`, after the block's │ gutter)."""
    body = line.strip().lstrip("│┌").strip()
    return bool(body) and "^" in body and not body.strip("^~ ")


def _first_error(trial: Trial) -> dict[str, Any] | None:
    fe = trial.first_error
    if fe is None:
        return None
    return {
        "where": _where(fe, trial),
        "file": short(fe.get("file"), trial),
        "line": fe.get("line"),
        "text": fe.get("text"),
        "message": fe.get("message"),
        "category": fe.get("category"),
        "rule": fe.get("rule"),
        "kind": fe.get("kind"),
        "process": fe.get("process"),
        "timestamp": fe.get("timestamp"),
        "block": fe.get("block"),
        "block_lines": fe.get("block_lines") or [fe.get("text")],
        # For a narrow card: the prefix once per process, then the messages (block_lines stay raw
        # for the upstream Markdown, which keeps the log as it was).
        # Python's ^^^^ markers under a frame's code are left out of the card: wrapped in a narrow
        # column they point at nothing.
        "block_view": [
            line[2:] for line in block_lines(fe, width=100_000, verbose=True) if not _caret_line(line)
        ]
        if fe.get("block_rows")
        else fe.get("block_lines") or [fe.get("text")],
        "explain": fe.get("explain") or "",
        "advice": fe.get("advice") or "",
    }


def run_section(trial: Trial, number: int, spoiled: set[str]) -> dict[str, Any]:
    triage = trial.triage or {}
    request = _usable(trial, Role.REQUEST, spoiled)
    milestones = [
        {"marker": m["marker"], "phase": m["phase"], "where": _where(m, trial)}
        for m in triage.get("milestones", [])
    ]
    # The root-cause finding repeats the first error's explanation, shown with the error itself.
    findings = [
        f
        for f in triage.get("findings", [])
        if f.get("severity") in ("error", "warning")
        and not str(f.get("id", "")).startswith(("root-cause.", "hang", "only-consequence"))
    ]
    # The most severe first, as in every other rendering (render/verdict.py).
    findings.sort(key=lambda f: SEVERITY_ORDER.get(f.get("severity", "info"), 3))
    fe = triage.get("first_error") or {}
    block = fe.get("block") or {}
    # A consequence inside the first error block (its own headline) is part of the block shown.
    consequences = [
        c
        for c in triage.get("consequences", [])
        if not (
            c.get("file") == fe.get("file")
            and block.get("start", 0) <= c.get("line", 0) <= block.get("end", -1)
        )
    ]
    signals = trial.run.signals
    served = {
        "ok": signals.requests_ok,
        "failed": signals.requests_failed,
        "received": signals.requests_received,
    }
    return {
        "number": number,
        "label": trial.label,
        # The verdict in words and the one thing to do first: the same sentences as `triage`.
        "headline": headline({**triage, "requests": served})
        if trial.triage
        else "no server log in this bundle",
        "fix": decisive_fix(triage) if trial.triage else None,
        "path": trial.path,
        "node": trial.run.node.value if trial.run.node is not None else None,
        "started": trial.run.started.value if trial.run.started is not None else None,
        "has_log": trial.triage is not None,
        "phase": triage.get("phase", "unknown") if trial.triage else "unknown",
        "phase_reason": triage.get("phase_reason", "no vLLM log in the bundle"),
        "ready": bool(triage.get("ready")),
        # Requests the server answered (access log) or received (request log): "ready, served N".
        "requests": trial.run.signals.requests if trial.triage else None,
        "failed": triage.get("first_error") is not None,
        "milestones": milestones,
        "last_milestone": triage.get("last_milestone"),
        "first_missing_milestone": triage.get("first_missing_milestone"),
        "first_error": _first_error(trial),
        "consequences": [
            {
                "where": _where(c, trial),
                "text": c.get("text", "")[:300],
                "count": c.get("count", 1),
                "rule": c.get("rule"),
            }
            for c in consequences[:MAX_CONSEQUENCES]
        ],
        "findings": [
            {"id": f["id"], "severity": f["severity"], "message": f["message"], "advice": f.get("advice", "")}
            for f in findings[:MAX_FINDINGS]
        ],
        "environment": _environment(trial, spoiled),
        "command": _command(trial, spoiled),
        "env": _env_vars(trial),
        "request": _text(trial, request[0]) if request else None,
        "notes": trial.notes,
    }


def _primary(runs: list[dict[str, Any]]) -> int:
    """The run the report is about: the last one that failed (a series ends in the failure being
    reported), else the last one."""
    failing = [i for i, r in enumerate(runs) if r["failed"]]
    return failing[-1] if failing else len(runs) - 1


def _tried(trials: list[Trial], series: dict[str, Any] | None) -> dict[str, Any] | None:
    if series is None:
        return None
    rows = []
    for index, trial_data in enumerate(series["trials"]):
        step = series["steps"][index - 1] if index > 0 else None
        changed = (
            [c["label"] for c in step["changes"]] + [f"drift: {d['id']}" for d in step["drift"]]
            if step
            else []
        )
        values = []
        if step:
            for change in step["changes"]:
                for knob in change["knobs"][:2]:
                    a = knob["a"]["value"] if knob.get("a") else None
                    b = knob["b"]["value"] if knob.get("b") else None
                    values.append(
                        f"{knob_label(knob['name'])}: {a if a is not None else '(not set)'} → "
                        f"{b if b is not None else '(not set)'}"
                    )
            values += [f"drift ({d['id']}): {d['message']}" for d in step["drift"]]
        outcome = trial_data["outcome"]
        fe = outcome.get("first_error")
        rows.append(
            {
                "trial": index + 1,
                "label": trial_data["label"],
                "changed": changed,
                "values": values,
                "verdict": step["verdict"] if step else None,
                "outcome": ("passed" if trial_data["passed"] else "no failure")
                if not fe
                else f"{outcome['phase']} — {fe.get('category')}",
                "failed": bool(fe),
            }
        )
    return {
        "rows": rows,
        "confounded_steps": series["confounded_steps"],
        "repeats": [
            {"trials": r["trials"], "verdict": r["verdict"], "message": r["message"]}
            for r in series["repeats"]
        ],
    }


def build_report(trials: list[Trial], ruleset: RuleSet, rule_dirs: list[str] | None = None) -> dict[str, Any]:
    """The report data, not yet redacted. `ruleset`: the rules the trials were triaged with (the
    built-in ones and the `--rules` directories), whose milestones the timeline lays out."""
    from vllm_triage.bundle.check.checklist import checklist_data
    from vllm_triage.compare.data import load as load_compare
    from vllm_triage.compare.series import series_runs

    data = checklist_data()
    runs = []
    for number, trial in enumerate(trials, 1):
        spoiled = {h.file for h in find_placeholders(trial, data)}
        runs.append(run_section(trial, number, spoiled))
    series = (
        series_runs([t.run for t in trials], load_compare(rule_dirs)).to_json() if len(trials) > 1 else None
    )
    checklist = run_checklist(trials, rule_dirs).to_json()
    primary = _primary(runs)
    return {
        "schema": SCHEMA,
        "generator": f"vllm-triage {__version__}",
        "primary": primary,
        "title": _title(runs[primary]),
        "runs": runs,
        # Every milestone in startup order with its phase, reached or not: the timeline gives each
        # its place so runs line up; what the rules define, not what one log happened to reach.
        "milestone_order": [{"marker": m, "phase": p} for m, p in ruleset.milestone_phases()],
        "tried": _tried(trials, series),
        "checklist": {
            "complete": checklist["complete"],
            "summary": checklist["summary"],
            "items": [
                {"id": i["id"], "title": i["title"], "status": i["status"], "message": i["message"]}
                for i in checklist["items"]
            ],
        },
        "redaction": {"enabled": False},
    }


def _title(run: dict[str, Any]) -> str:
    """A title in the form's shape ("[Bug]: …")."""
    fe = run["first_error"]
    if fe is None:
        return f"[Bug]: {run['label']}: no failure in the log"
    if fe.get("kind") == "hang":
        return f"[Bug]: server hangs in {run['phase']} after {run['last_milestone']}, no error"
    message = (fe.get("message") or fe.get("category") or "").strip()
    if len(message) > 90:
        message = message[:89] + "…"
    return f"[Bug]: {message} ({run['phase']})"
