"""`vllm-triage check BUNDLE…`: the pre-filing checklist (issue 5 item 1).

Every item of rules/checklist.toml is judged `pass`, `fail` or `missing`, with its evidence
(file, line) or what to collect and the exact command that collects it. The items the diagnosis
calls for (NCCL, weight load, OOM) join when a trial's first error is of that kind. Template
placeholders left in a paste make the artefact they stand in missing.

Several bundles (or one folder holding a folder per trial) are trials of one series: the scene
items are judged per trial (the item takes the worst), the method items across the series.
"""

from __future__ import annotations

from typing import BinaryIO

from vllm_triage.bundle.check import diagnosis as checklist_diagnosis
from vllm_triage.bundle.check import method as checklist_method
from vllm_triage.bundle.check import scene as checklist_scene
from vllm_triage.bundle.check.context import SeriesContext, TrialContext
from vllm_triage.bundle.check.data import ChecklistData
from vllm_triage.bundle.check.data import load as load_data
from vllm_triage.bundle.check.model import (
    ChecklistResult,
    Collect,
    DiagnosisHit,
    ItemResult,
    TrialVerdict,
    Verdict,
)
from vllm_triage.bundle.check.placeholders import find_placeholders
from vllm_triage.bundle.collect.commands import Scene, scene_of
from vllm_triage.bundle.trials import Trial, load_trials
from vllm_triage.core.provenance import Provenance

TRIAL_CHECKS = {**checklist_scene.CHECKS, **checklist_diagnosis.CHECKS}
SERIES_CHECKS = checklist_method.CHECKS
KNOWN_ITEMS = set(TRIAL_CHECKS) | set(SERIES_CHECKS)


def checklist_data() -> ChecklistData:
    return load_data(KNOWN_ITEMS)


def _collect(verdict: Verdict, item_collect: dict[str, str], scene: Scene) -> list[Collect]:
    """The item's commands for the places the verdict names, in the scene's order."""
    if verdict.status == "pass":
        return []
    wanted = [p for p in scene.places() if p in verdict.places and p in item_collect]
    wanted += [p for p in verdict.places if p not in wanted and p in item_collect]
    return [Collect(place, scene.fill(item_collect[place])) for place in wanted]


def _diagnoses(trials: list[Trial], data: ChecklistData) -> list[DiagnosisHit]:
    hits = []
    for trial in trials:
        fe = trial.first_error
        for diagnosis in data.diagnoses:
            if diagnosis.matches(fe, trial.phase) and fe is not None:
                hits.append(
                    DiagnosisHit(
                        diagnosis.id,
                        diagnosis.label,
                        trial.label,
                        str(fe.get("category")),
                        fe.get("rule"),
                        Provenance(str(fe.get("file")), fe.get("line")),
                        diagnosis.requires,
                    )
                )
    return hits


def run_checklist(trials: list[Trial], rule_dirs: list[str] | None = None) -> ChecklistResult:
    from vllm_triage.compare.data import load as load_compare
    from vllm_triage.compare.series import series_runs

    data = checklist_data()
    compare = load_compare(rule_dirs)
    scenes = [scene_of(t) for t in trials]
    hits = {t.label: find_placeholders(t, data) for t in trials}
    contexts = [TrialContext(t, data, hits[t.label], scenes[i], i) for i, t in enumerate(trials)]
    series = series_runs([t.run for t in trials], compare) if len(trials) > 1 else None
    across = SeriesContext(trials, data, compare, series, scenes)
    diagnoses = _diagnoses(trials, data)
    conditional = data.conditional_ids()
    # The scene of the last trial is the one still to be fixed: its commands are offered for the series.
    last_scene = scenes[-1]
    items: list[ItemResult] = []
    for item in data.items:
        required_by = next((d for d in diagnoses if item.id in d.requires), None)
        if item.id in conditional and required_by is None:
            continue
        if item.id in SERIES_CHECKS:
            verdict = SERIES_CHECKS[item.id](across)
            per_trial = [
                TrialVerdict(
                    "all trials" if len(trials) > 1 else trials[0].label,
                    verdict,
                    _collect(verdict, item.collect, last_scene),
                )
            ]
        else:
            chosen = [
                c
                for c in contexts
                if item.id not in conditional
                or any(d.trial == c.trial.label and item.id in d.requires for d in diagnoses)
            ]
            per_trial = []
            for context in chosen:
                verdict = TRIAL_CHECKS[item.id](context)
                per_trial.append(
                    TrialVerdict(context.trial.label, verdict, _collect(verdict, item.collect, context.scene))
                )
        items.append(
            ItemResult(item.id, item.title, item.why, required_by.label if required_by else None, per_trial)
        )
    placeholders = [h.to_json() for t in trials for h in hits[t.label]]
    result = ChecklistResult(
        trials=[{"label": t.label, "path": t.path, "phase": t.phase, "notes": t.notes} for t in trials],
        items=items,
        diagnoses=diagnoses,
        placeholders=placeholders,
        collect_all=last_scene.fill(data.collect_all.replace("{target}", last_scene.target)).strip() or None,
    )
    return result


def check_paths(
    paths: list[str], rule_dirs: list[str] | None = None, stdin: BinaryIO | None = None
) -> ChecklistResult:
    """The one call `vllm-triage check` makes."""
    return run_checklist(load_trials(paths, rule_dirs, stdin), rule_dirs)
