"""Checklist items about the method across trials (DESIGN §1): one variable per trial, a rollback
point after each, prefix caching in its own step, context and concurrency only after a single
request passed, comparisons on one node (or a documented one).

They judge what `vllm-triage series` computes (steps, stages, outcomes), so `check` and `series`
never disagree about a bundle of trials. With one trial there is nothing to compare: the items that
need two trials pass, saying so, and the ones that apply to a single trial judge it alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vllm_triage.bundle.check.context import SeriesContext, at, where
from vllm_triage.bundle.check.model import Verdict, failed, missing, passed
from vllm_triage.bundle.trials import Trial
from vllm_triage.compare.outcome import outcome_of
from vllm_triage.compare.series import passed as trial_passed
from vllm_triage.compare.stages import active_stages, prefix_caching
from vllm_triage.core.provenance import Provenance


def _ok(trial: Trial) -> bool:
    return trial_passed(outcome_of(trial.triage), trial.run)


def _changes(step: dict[str, Any]) -> list[str]:
    return [c["label"] for c in step["changes"]] + [f"drift: {d['id']}" for d in step["drift"]]


def _step_evidence(step: dict[str, Any]) -> list[Provenance | None]:
    out: list[Provenance | None] = []
    for change in step["changes"]:
        for knob in change["knobs"]:
            side = knob.get("b") or knob.get("a") or {}
            out.append(at(side.get("source")))
    return out[:4]


def one_variable(ctx: SeriesContext) -> Verdict:
    if not ctx.several:
        return passed("one trial: nothing to compare")
    steps = ctx.series.to_json()["steps"]
    bad = [s for s in steps if s["verdict"] == "confounded"]
    if bad:
        shown = "; ".join(f"T{s['from']}→T{s['to']} changed {', '.join(_changes(s))}" for s in bad)
        evidence = [e for s in bad for e in _step_evidence(s)]
        return failed(f"more than one variable changed: {shown}", evidence, ("method",))
    shown = "; ".join(
        f"T{s['from']}→T{s['to']}: {', '.join(_changes(s)) or 'nothing but noise'}" for s in steps
    )
    return passed(f"one variable per step ({shown})")


def rollback_point(ctx: SeriesContext) -> Verdict:
    last_good: str | None = None
    lacking: list[str] = []
    evidence: list[Provenance | None] = []
    for number, trial in enumerate(ctx.trials, 1):
        if _ok(trial):
            last_good = trial.label
        declared = trial.manifest.get("rollback")
        if declared:
            evidence.append(Provenance(trial.manifest_file or trial.path, trial.manifest_line("rollback")))
            continue
        if last_good is None:
            lacking.append(f"T{number} ({trial.label})" if ctx.several else trial.label)
    if lacking:
        return missing(
            f"no rollback point after {', '.join(lacking)}: no earlier trial passed and bundle.toml names "
            "none",
            ("manifest", "method"),
        )
    if evidence:
        return passed(
            "rollback points named in bundle.toml"
            + (f"; last trial that passed: {last_good}" if last_good else ""),
            *evidence,
        )
    return passed(f"the last trial that passed is the rollback point: {last_good}")


def prefix_caching_step(ctx: SeriesContext) -> Verdict:
    states = [prefix_caching(t.run, ctx.compare) for t in ctx.trials]
    first_on = next((i for i, (on, _) in enumerate(states) if on), None)
    if first_on is None:
        if any(on is None for on, _ in states):
            return missing(
                "nothing says whether prefix caching was on (no engine banner, argument or vLLM version)",
                ("log",),
            )
        return passed(
            "prefix caching off in every trial", *[at(seen.source) for _, seen in states if seen][:2]
        )
    on, seen = states[first_on]
    how = seen.how if seen else "on"
    trial = ctx.trials[first_on]
    if first_on == 0:
        text = (
            f"prefix caching was on from the first trial ({how}): no trial without it to compare"
            if ctx.several
            else f"prefix caching was on in the only trial ({how}): it was not tested in its own step"
        )
        return failed(text, [at(seen.source) if seen else None], ("method",))
    step = ctx.series.to_json()["steps"][first_on - 1]
    if step["verdict"] == "confounded":
        return failed(
            f"prefix caching came in at T{first_on + 1} ({trial.label}) together with other changes: "
            f"{', '.join(_changes(step))}",
            [at(seen.source) if seen else None, *_step_evidence(step)],
            ("method",),
        )
    before = ctx.trials[first_on - 1]
    if not _ok(before):
        return failed(
            f"prefix caching came in at T{first_on + 1} ({trial.label}) after T{first_on}, which had not "
            "passed without it",
            [at(seen.source) if seen else None],
            ("method",),
        )
    return passed(
        f"prefix caching came in alone at T{first_on + 1} ({trial.label}) after T{first_on} passed "
        f"without it",
        at(seen.source) if seen else None,
    )


def context_concurrency_order(ctx: SeriesContext) -> Verdict:
    baseline: str | None = None
    raised_any = False
    for number, trial in enumerate(ctx.trials, 1):
        stages = active_stages(trial.run, ctx.compare)
        raised = {sid: stages[sid] for sid in ("long_context", "concurrency") if sid in stages}
        if raised:
            raised_any = True
            if baseline is None:
                shown = ", ".join(f"{sid.replace('_', ' ')} ({seen.how})" for sid, seen in raised.items())
                who = f"T{number} ({trial.label})" if ctx.several else "the only trial"
                return failed(
                    f"{who} raised {shown} before a single short request had passed",
                    [at(seen.source) for seen in raised.values()],
                    ("method",),
                )
        elif _ok(trial) and baseline is None:
            baseline = trial.label
    if not raised_any:
        return passed("neither context nor concurrency was raised")
    return passed(f"a single short request passed first ({baseline}); context and concurrency came after it")


def _host_captured(trial: Trial) -> Provenance | None:
    for name in ("host.driver_version", "host.gpu_models"):
        found = trial.fingerprint.get(name)
        if found is not None:
            return found.source
    return None


def same_node(ctx: SeriesContext) -> Verdict:
    nodes = [t.run.node for t in ctx.trials]
    unnamed = [t.label for t, node in zip(ctx.trials, nodes, strict=True) if node is None]
    if unnamed:
        return missing(f"no node recorded for {', '.join(unnamed)}", ("manifest",))
    names = {str(n.value) for n in nodes if n is not None}
    undocumented = [t.label for t in ctx.trials if _host_captured(t) is None]
    if len(names) == 1 and not ctx.several:
        node = nodes[0]
        assert node is not None  # every trial's node was recorded (checked above)
        if undocumented:
            return missing(
                f"node {node.value} is named but its host is not captured (host nvidia-smi)",
                ("host",),
                [at(node.source)],
            )
        return passed(f"node {node.value}, host captured", at(node.source), _host_captured(ctx.trials[0]))
    if len(names) == 1:
        return passed(
            f"every trial ran on node {names.pop()}", *[at(n.source) for n in nodes if n is not None][:2]
        )
    if undocumented:
        return failed(
            f"the trials ran on {len(names)} nodes ({', '.join(sorted(names))}) and the host of "
            f"{', '.join(undocumented)} is not captured",
            [at(n.source) for n in nodes if n is not None][:4],
            ("host",),
        )
    return passed(
        f"the trials ran on {len(names)} nodes ({', '.join(sorted(names))}), each host captured",
        *[_host_captured(t) for t in ctx.trials][:4],
    )


CHECKS: dict[str, Callable[[SeriesContext], Verdict]] = {
    "one-variable": one_variable,
    "rollback-point": rollback_point,
    "prefix-caching-step": prefix_caching_step,
    "context-concurrency-order": context_concurrency_order,
    "same-node": same_node,
}

__all__ = ["CHECKS", "where"]
