"""From what the user named to trials: each trial's sources, fingerprint, triage, the comparison's
view of it (a compare Run) and its bundle.toml `[run]` table.

`check` and `report` read bundles that are incomplete on purpose (that is what `check` is for): a
bundle holding only a template placeholder, or no log at all, is still a trial — with nothing in
it. Only unusable input (a missing path, a binary file, a corrupt archive) is an error.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, BinaryIO

from vllm_triage.compare.run import LABEL, NODE, STARTED, Entry, Run
from vllm_triage.compare.signals import read_signals
from vllm_triage.core.errors import InputError
from vllm_triage.core.roles import Role
from vllm_triage.fingerprint.model import Fingerprint
from vllm_triage.ingest.manifest import Manifest, read_manifest
from vllm_triage.ingest.readers import spool_stdin
from vllm_triage.ingest.sources import Source

if TYPE_CHECKING:  # the engine is imported by the pipeline, lazily
    from vllm_triage.engine.matcher import CompiledRules

# Environment artefacts are small. A log is read as text only this far: what the checklist looks
# for in its text (a template placeholder, an elision line, NCCL's INFO lines) is in pasted excerpts
# or near the start; the whole log is analysed by the triage, which streams it.
TEXT_LIMIT = 16 * 1024 * 1024
LOG_TEXT_LIMIT = 8 * 1024 * 1024
_NOT_A_LOG = ("no-log-in-bundle", "not-a-log")


@dataclass
class Trial:
    label: str
    path: str
    sources: list[Source]
    fingerprint: Fingerprint
    run: Run
    triage: dict[str, Any] | None
    manifest: dict[str, Any] = field(default_factory=dict)  # bundle.toml [run]
    manifest_file: str | None = None
    manifest_read: Manifest | None = None  # the parsed bundle.toml, for the line a key is on
    notes: list[str] = field(default_factory=list)
    _texts: dict[str, tuple[str, bool]] = field(default_factory=dict, repr=False)
    # Derived once and shared by the checklist and the report (bundle/check/placeholders.py).
    _placeholder_hits: list[Any] | None = field(default=None, repr=False)

    def of_role(self, *roles: Role) -> list[Source]:
        return [s for s in self.sources if s.role in roles]

    def text(self, source: Source) -> str:
        """The decoded text of a source ('' when empty or binary), read once."""
        if source.name not in self._texts:
            from vllm_triage.fingerprint.combine import read_text

            limit = LOG_TEXT_LIMIT if source.role == Role.VLLM_LOG else TEXT_LIMIT
            try:
                self._texts[source.name] = read_text(source, limit)
            except InputError:
                self._texts[source.name] = ("", False)
        return self._texts[source.name][0]

    def scope_of(self, source: Source) -> str | None:
        for entry in self.fingerprint.inputs:
            if entry.get("path") == source.name:
                return entry.get("scope")
        return source.scope

    def role_of_file(self, file: str | None) -> str | None:
        return next((s.role for s in self.sources if s.name == file), None)

    @property
    def first_error(self) -> dict[str, Any] | None:
        return self.triage.get("first_error") if self.triage else None

    @property
    def phase(self) -> str:
        return self.triage.get("phase", "none") if self.triage else "none"

    def manifest_line(self, key: str) -> int | None:
        """The line of `key = …` in bundle.toml, for evidence."""
        return self.manifest_read.line_of(key) if self.manifest_read is not None else None


def _label(path: str) -> str:
    if path == "-":
        return "<stdin>"
    return PurePosixPath(path.rstrip("/")).name or path


def load_trial(
    path: str,
    rule_dirs: list[str] | None = None,
    stdin: BinaryIO | None = None,
    compiled: CompiledRules | None = None,
) -> Trial:
    """One bundle (folder, archive, file, or - for stdin) as a trial. InputError only for unusable
    input. `compiled`: `pipeline.load_rules(rule_dirs)`, when the caller already made it."""
    from vllm_triage.pipeline import fingerprint_sources, gather, triage_sources

    spooled = None
    if path == "-":  # read once, in blocks up to --max-input: gathering and the triage each need the bytes
        spooled, _ = spool_stdin(stdin or sys.stdin.buffer)

    def stream() -> BinaryIO | None:
        return spooled() if spooled is not None else None

    sources = gather([path], stream())
    notes: list[str] = []
    # One pass: the triage of the gathered sources carries their fingerprint (pipeline.triage_sources
    # computes it), so the bundle is read, scanned and fingerprinted once, not gathered twice.
    triaged = None
    triage_note = None
    try:
        triaged = triage_sources(sources, rule_dirs, compiled)
    except InputError as exc:
        if exc.problem_id not in _NOT_A_LOG:
            raise
        triage_note = f"no failure analysis: {exc.message}"
    found = triaged.fingerprint if triaged is not None else None
    if found is None:
        try:
            found = fingerprint_sources(sources, rule_dirs)
        except InputError as exc:
            if exc.problem_id in ("empty-input", "binary-input", "corrupt-archive", "unreadable-path"):
                raise
            found = Fingerprint()
            notes.append(f"no fingerprint: {exc.message}")
    if triage_note:
        notes.append(triage_note)
    result: dict[str, Any] | None = triaged.to_json() if triaged is not None else None
    trial = Trial(_label(path), path, sources, found, Run(label=_label(path), path=path), result, notes=notes)
    _read_manifest(trial)
    _fill_run(trial)
    return trial


def _read_manifest(trial: Trial) -> None:
    manifest = next((s for s in trial.sources if s.role == Role.MANIFEST), None)
    if manifest is None:
        return
    trial.manifest_read = read_manifest(manifest)
    trial.manifest_file = manifest.name
    if isinstance(trial.manifest_read.document.get("run"), dict):
        trial.manifest = trial.manifest_read.run()
        if trial.manifest.get("label"):
            trial.label = str(trial.manifest["label"])


def _fill_run(trial: Trial) -> None:
    """The compare Run of the trial: the same data `diff` and `series` judge."""
    run = trial.run
    run.label = trial.label
    run.inputs = [{"path": s.name, "role": s.role or Role.UNKNOWN} for s in trial.sources]
    run.fingerprint = trial.fingerprint.to_json()
    run.triage = trial.triage
    run.signals = read_signals(trial.sources)
    run.notes = list(trial.notes)
    for name, attribute in ((NODE, "node"), (STARTED, "started")):
        found = trial.fingerprint.get(name)
        if found is not None and found.value not in (None, ""):
            kind = "knob" if name in trial.fingerprint.knobs else "fact"
            setattr(run, attribute, Entry(name, str(found.value), found.source.to_json(), kind))
    label = trial.fingerprint.get(LABEL)
    if label is not None and label.value:
        run.label = trial.label = str(label.value)


def load_trials(
    paths: list[str],
    rule_dirs: list[str] | None = None,
    stdin: BinaryIO | None = None,
    compiled: CompiledRules | None = None,
) -> list[Trial]:
    """The trials named: several paths in order, or the trial folders of one series folder
    (ordered by their recorded start, as `series` orders them)."""
    from vllm_triage.compare.series import trial_paths

    chosen, from_folder = trial_paths(paths)
    trials = [load_trial(p, rule_dirs, stdin, compiled) for p in chosen]
    if from_folder:
        trials.sort(key=_start_key)
    seen: dict[str, int] = {}
    for trial in trials:  # labels must tell trials apart
        seen[trial.label] = seen.get(trial.label, 0) + 1
    for number, trial in enumerate(trials, 1):
        if seen[trial.label] > 1:
            trial.label = trial.run.label = f"T{number} ({trial.label})"
    return trials


def _start_key(trial: Trial) -> tuple[int, str, str]:
    started = trial.run.started.value if trial.run.started is not None else None
    return (0, str(started), trial.path) if started else (1, "", trial.path)
