"""`vllm-triage series T1 T2 T3 …`: a reproduction series judged against the method. Per step the
knob(s) changed and the outcome; the steps that changed more than one variable; repeated trials of
one fingerprint and whether they fail the same way (stable) or not (intermittent); where the series
broke the reintroduction order; whether prefix caching produced its signal once enabled.
The JSON contract is `vllm-triage.series/1`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from vllm_triage.analysis.signature import similarity
from vllm_triage.compare.changes import compare_runs
from vllm_triage.compare.data import CompareData, Stage
from vllm_triage.compare.data import load as load_data
from vllm_triage.compare.diff import CONFOUNDED, DiffResult, diff_runs, exit_code_of
from vllm_triage.compare.outcome import Outcome, outcome_of
from vllm_triage.compare.run import Run
from vllm_triage.compare.stages import Seen, active_stages, prefix_caching
from vllm_triage.core.errors import InputError

SCHEMA = "vllm-triage.series/1"

STABLE = "stable"  # every repeat fails in the same phase with the same signature
STABLE_PASS = "stable-pass"  # every repeat passes
INTERMITTENT = "intermittent"

INTERMITTENT_ADVICE = (
    "The same fingerprint does not fail the same way: look at what the fingerprint does not pin — GPU "
    "occupancy (other processes, memory in use at start), mounts (model cache, /dev/shm), the container "
    "runtime, and inherited NCCL_*/CUDA_* variables — and repeat on an isolated node."
)


def passed(outcome: Outcome, run: Run) -> bool:
    """A trial passed when its log shows no failure and the server got to serve."""
    return outcome.known and not outcome.failed and (outcome.ready or run.signals.requests_ok > 0)


@dataclass
class SeriesResult:
    runs: list[Run]
    ordered_by: str
    steps: list[DiffResult]
    stages: list[dict[str, Seen]]
    repeats: list[dict[str, Any]]
    order_breaks: list[dict[str, Any]]
    prefix_cache: list[dict[str, Any]]
    data: CompareData
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def confounded_steps(self) -> list[int]:
        return [i + 2 for i, step in enumerate(self.steps) if step.verdict == CONFOUNDED]

    @property
    def exit_code(self) -> int:
        return exit_code_of(CONFOUNDED) if self.confounded_steps else exit_code_of("one-variable")

    def to_json(self) -> dict[str, Any]:
        trials = []
        for i, (run, outcome, stages) in enumerate(
            zip(self.runs, self.outcomes, self.stages, strict=True), 1
        ):
            trials.append(
                {
                    "trial": i,
                    **run.summary(),
                    "outcome": outcome.to_json(),
                    "passed": passed(outcome, run),
                    "stages": {sid: seen.to_json() for sid, seen in stages.items()},
                    "signals": run.signals.to_json(),
                }
            )
        steps = []
        for i, step in enumerate(self.steps, 2):
            c = step.comparison
            steps.append(
                {
                    "from": i - 1,
                    "to": i,
                    "verdict": step.verdict,
                    "variables": c.variables,
                    "changes": [ch.to_json(self.data) for ch in c.changes],
                    "drift": [d.to_json() for d in c.drift],
                    "failure": step.failure.to_json(),
                    "comparable": c.comparable,
                    "noise": [n.to_json() for n in c.noise],
                }
            )
        return {
            "schema": SCHEMA,
            "ordered_by": self.ordered_by,
            "trials": trials,
            "steps": steps,
            "confounded_steps": self.confounded_steps,
            "uncomparable_steps": [
                i + 2 for i, step in enumerate(self.steps) if not step.comparison.comparable
            ],
            "repeats": self.repeats,
            "order": {
                "stages": [{"id": s.id, "order": s.order, "label": s.label} for s in self.data.stages],
                "breaks": self.order_breaks,
            },
            "prefix_cache": self.prefix_cache,
            "exit_code": self.exit_code,
        }


# --------------------------------------------------------------------------------- repeats


def _repeats(runs: list[Run], outcomes: list[Outcome], data: CompareData) -> list[dict[str, Any]]:
    """Trials with the same knobs (after noise and defaults) are repeats of one fingerprint."""
    clusters: list[list[int]] = []
    for i, run in enumerate(runs):
        home = next((c for c in clusters if _same_setup(runs[c[0]], run, data)), None)
        if home is None:
            clusters.append([i])
        else:
            home.append(i)
    out = []
    for members in clusters:
        if len(members) < 2:
            continue
        out.append(_judge_repeats(members, runs, outcomes, data))
    return out


def _same_setup(a: Run, b: Run, data: CompareData) -> bool:
    comparison = compare_runs(a, b, data)
    return not comparison.changes and comparison.comparable


def _judge_repeats(
    members: list[int], runs: list[Run], outcomes: list[Outcome], data: CompareData
) -> dict[str, Any]:
    first = outcomes[members[0]]
    results = [outcomes[i] for i in members]
    numbers = [i + 1 for i in members]
    phases = [o.phase for o in results]
    if all(passed(outcomes[i], runs[i]) for i in members):
        verdict, message, advice = STABLE_PASS, "every repeat passed", ""
    elif (
        all(o.failed for o in results)
        and len(set(phases)) == 1
        and all(
            similarity(first.signature or "", o.signature or "") >= data.settings.same_failure_similarity
            for o in results
        )
    ):
        verdict = STABLE
        message = f"every repeat fails in {first.phase} with the same signature ({first.category})"
        advice = (
            "The failure is stable: this fingerprint is a usable reproduction (attach "
            "command, fingerprint and request)."
        )
    else:
        verdict = INTERMITTENT
        shown = ", ".join(f"T{n}: {o.short()}" for n, o in zip(numbers, results, strict=True))
        message = f"the same fingerprint ended differently ({shown})"
        advice = INTERMITTENT_ADVICE
    drift: dict[str, dict[str, Any]] = {}
    for i in members[1:]:
        for d in compare_runs(runs[members[0]], runs[i], data).drift:
            drift.setdefault(d.id, {"id": d.id, "message": d.message, "trials": []})["trials"].append(i + 1)
    return {
        "trials": numbers,
        "verdict": verdict,
        "phases": phases,
        "signatures": [o.signature_hash for o in results],
        "message": message,
        "advice": advice,
        "drift": list(drift.values()),
    }


# ------------------------------------------------------------------------------ the order


def _required(stages: list[Stage], active: list[dict[str, Seen]]) -> set[str]:
    """Stages the series must pass before going further: the base always; the prefix-caching steps
    when the series enables prefix caching at all; any other stage the series uses."""
    used = {sid for trial in active for sid in trial}
    required = {"base"} | used
    if "prefix_caching" in used:
        required |= {"prefix_caching", "shared_prefix", "cache_hits"}
    return {s.id for s in stages if s.id in required}


def _order_breaks(
    runs: list[Run], outcomes: list[Outcome], active: list[dict[str, Seen]], data: CompareData
) -> list[dict[str, Any]]:
    stages = data.stages
    required = _required(stages, active)
    label = {s.id: s.label for s in stages}
    passed_stages: set[str] = set()
    previous: set[str] = {"base"}
    breaks = []
    for i, (run, outcome, trial) in enumerate(zip(runs, outcomes, active, strict=True), 1):
        now = set(trial)
        for stage in stages:
            if stage.id not in now - previous:
                continue
            missing = [
                s.id
                for s in stages
                if s.order < stage.order and s.id in required and s.id not in passed_stages
            ]
            if missing:
                seen = trial[stage.id]
                if seen.by_default:
                    # Nobody brought it in: the release turns it on. Say so, and how to turn it off.
                    message = (
                        f"T{i} ran with prefix caching on by vLLM's default ({seen.how}) before "
                        f"{label[missing[0]]} had passed: add --no-enable-prefix-caching until then"
                    )
                else:
                    message = (
                        f"T{i} brought in {label[stage.id]} ({seen.how}) before "
                        f"{label[missing[0]]} had passed"
                    )
                breaks.append(
                    {
                        "trial": i,
                        "stage": stage.id,
                        "missing": missing,
                        "evidence": seen.to_json(),
                        "message": message,
                    }
                )
        if passed(outcome, run):
            passed_stages |= now
        previous = now
    return breaks


# ----------------------------------------------------------------------- prefix-cache signal


def _prefix_cache(runs: list[Run], outcomes: list[Outcome], data: CompareData) -> list[dict[str, Any]]:
    out = []
    for i, (run, outcome) in enumerate(zip(runs, outcomes, strict=True), 1):
        on, seen = prefix_caching(run, data)
        signals = run.signals
        served = outcome.ready or signals.requests > 0 or signals.stats_lines > 0
        if not on or not served:
            continue  # a server that never served cannot have produced hits: nothing to judge
        hits = signals.cache_hits
        if hits:
            where = signals.first_hit or (signals.metrics or {}).get("source")
            out.append(
                {
                    "trial": i,
                    "signal": "hits",
                    "evidence": where,
                    "message": f"T{i}: prefix cache hits seen (max {signals.hit_rate_max or 0:.1f}%)",
                    "advice": "",
                }
            )
        elif hits is False:
            last = signals.last_hit_rate or (signals.metrics or {}).get("source")
            out.append(
                {
                    "trial": i,
                    "signal": "no-hits",
                    "evidence": last,
                    "message": f"T{i}: prefix caching is on but no hit was recorded "
                    f"({signals.hit_rate_lines} stats line(s), hit rate at most "
                    f"{signals.hit_rate_max or 0:.1f}%)",
                    "advice": "Send two requests that share a prefix of at least one KV block "
                    "(--block-size tokens) one "
                    "after the other; a hit rate above zero is the signal that prefix caching works.",
                }
            )
        else:
            out.append(
                {
                    "trial": i,
                    "signal": "unknown",
                    "evidence": seen.source if seen else None,
                    "message": f"T{i}: prefix caching is on but nothing in the bundle shows its hit rate",
                    "advice": "Keep the stats lines (no --disable-log-stats, logging at INFO) or "
                    "add a /metrics dump "
                    "(curl :8000/metrics) to the bundle.",
                }
            )
    return out


# ------------------------------------------------------------------------------------ entry


def series_runs(runs: list[Run], data: CompareData, ordered_by: str = "arguments") -> SeriesResult:
    if len(runs) < 2:
        raise InputError("too-few-trials", f"a series needs at least two trials, got {len(runs)}")
    outcomes = [outcome_of(r.triage) for r in runs]
    active = [active_stages(r, data) for r in runs]
    steps = [diff_runs(runs[i - 1], runs[i], data) for i in range(1, len(runs))]
    return SeriesResult(
        runs=runs,
        ordered_by=ordered_by,
        steps=steps,
        stages=active,
        repeats=_repeats(runs, outcomes, data),
        order_breaks=_order_breaks(runs, outcomes, active, data),
        prefix_cache=_prefix_cache(runs, outcomes, data),
        data=data,
        outcomes=outcomes,
    )


def trial_paths(paths: list[str]) -> tuple[list[str], bool]:
    """The trials named: the paths in order, or the trial folders inside one series folder
    (then True: order them by their recorded start)."""
    if len(paths) != 1:
        return paths, False
    folder = Path(paths[0])
    if not folder.is_dir():
        return paths, False
    try:
        children = sorted(p for p in folder.iterdir() if not p.name.startswith("."))
    except OSError as exc:
        raise InputError("unreadable-path", f"cannot read folder {folder}: {exc.strerror or exc}") from exc
    subdirs = [p for p in children if p.is_dir()]
    files = [p for p in children if p.is_file() and not p.name.lower().startswith(("readme", "notes"))]
    if subdirs and not files:
        return [str(p) for p in subdirs], True
    return paths, False


def _start_key(run: Run) -> tuple[int, Any, str]:
    started = run.started.value if run.started is not None else None
    if started is None:
        return (1, "", run.path)
    text = str(started).strip()
    try:
        moment: Any = datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        moment = text  # not ISO: compared as text, and the names break a mixed-form tie
    return (0, moment, run.path)


def series_paths(paths: list[str], rule_dirs: list[str] | None = None) -> SeriesResult:
    """The one call `vllm-triage series` makes."""
    from vllm_triage.compare.load import load_run

    data = load_data(rule_dirs)
    chosen, from_folder = trial_paths(paths)
    if len(chosen) < 2:
        raise InputError(
            "too-few-trials",
            f"a series needs at least two trials ({paths[0]} holds one)",
            "name the trials in order, or give one folder holding a folder per trial",
        )
    runs = [load_run(p, rule_dirs) for p in chosen]
    ordered_by = "arguments"
    if from_folder:
        keys = [_start_key(r) for r in runs]
        try:
            runs = [r for _, r in sorted(zip(keys, runs, strict=True), key=lambda pair: pair[0])]
        except TypeError:  # mixed timestamp forms: fall back to the names
            runs = sorted(runs, key=lambda r: r.path)
        ordered_by = "started" if all(r.started is not None for r in runs) else "name"
    seen: dict[str, int] = {}
    for run in runs:  # labels must tell trials apart
        seen[run.label] = seen.get(run.label, 0) + 1
    for i, run in enumerate(runs, 1):
        if seen[run.label] > 1:
            run.label = f"T{i} ({run.label})"
    return series_runs(runs, data, ordered_by)
