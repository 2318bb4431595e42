"""From a path (bundle folder, archive, single log, or `-`) to a Run: the thin adapter between the
comparison, which works on JSON-shaped data, and the pipeline that builds it (fingerprint, triage,
runtime signals, the manifest's `[run]` table)."""

from __future__ import annotations

import sys
from pathlib import PurePosixPath
from typing import BinaryIO

from vllm_triage.compare.run import LABEL, NODE, STARTED, Entry, Run
from vllm_triage.compare.signals import read_signals
from vllm_triage.core.errors import InputError
from vllm_triage.core.roles import Role
from vllm_triage.ingest.manifest import read_manifest
from vllm_triage.ingest.readers import spool_stdin
from vllm_triage.ingest.sources import Source


def load_run(
    path: str, rule_dirs: list[str] | None = None, label: str | None = None, stdin: BinaryIO | None = None
) -> Run:
    """Read one run. InputError when the path is unusable or holds nothing to compare."""
    from vllm_triage.pipeline import fingerprint_sources, gather, triage_sources

    spooled = None
    if (
        path == "-"
    ):  # read once, in blocks up to --max-input: the fingerprint and the triage each need the bytes
        spooled, _ = spool_stdin(stdin or sys.stdin.buffer)

    def stream() -> BinaryIO | None:
        return spooled() if spooled is not None else None

    sources = gather([path], stream())
    run = Run(label=label or _default_label(path), path=path)
    run.inputs = [{"path": s.name, "role": s.role or Role.UNKNOWN} for s in sources]
    _manifest(run, sources, explicit_label=label is not None)
    try:
        run.fingerprint = fingerprint_sources(sources, rule_dirs).to_json()
    except InputError as exc:
        run.notes.append(f"no fingerprint: {exc.message}")
    try:
        run.triage = triage_sources(sources, rule_dirs).to_json()
    except InputError as exc:
        if exc.problem_id not in ("no-log-in-bundle", "not-a-log"):
            raise
        run.notes.append(f"no failure analysis: {exc.message}")
    if run.triage is None and not (run.fingerprint.get("knobs") or run.fingerprint.get("facts")):
        raise InputError(
            "nothing-to-compare",
            f"{path} holds neither a vLLM log nor an environment artefact",
            "give a bundle folder or archive, or a server log",
        )
    run.signals = read_signals(sources)
    _metadata_from_fingerprint(run, explicit_label=label is not None)
    if run.started is None:
        run.started = _started_fallback(run)
    return run


def _metadata_from_fingerprint(run: Run, explicit_label: bool) -> None:
    """The fingerprint reads bundle.toml too (host.node, run.label, run.start): its reading wins
    over ours, which stays as the fallback when there is no fingerprint."""
    for name, attribute in ((NODE, "node"), (STARTED, "started")):
        for kind in ("knobs", "facts"):
            item = (run.fingerprint.get(kind) or {}).get(name)
            if isinstance(item, dict) and item.get("value") not in (None, ""):
                setattr(run, attribute, Entry(name, str(item["value"]), item.get("source") or {}, kind[:-1]))
    label = (run.fingerprint.get("facts") or {}).get(LABEL)
    if not explicit_label and isinstance(label, dict) and label.get("value"):
        run.label = str(label["value"])


def _default_label(path: str) -> str:
    if path == "-":
        return "<stdin>"
    name = PurePosixPath(path.rstrip("/")).name
    return name or path


def _manifest(run: Run, sources: list[Source], explicit_label: bool) -> None:
    """`[run] label, node, started` from the bundle's bundle.toml, with the line they are on."""
    manifest = next((s for s in sources if s.role == Role.MANIFEST), None)
    if manifest is None:
        return
    read = read_manifest(manifest)
    if not isinstance(read.document.get("run"), dict):
        return
    table = read.run()
    if table.get("label") and not explicit_label:
        run.label = str(table["label"])
    for key, name, kind in (("node", NODE, "knob"), ("started", STARTED, "fact"), ("start", STARTED, "fact")):
        if table.get(key) not in (None, ""):
            entry = Entry(name, str(table[key]), {"file": manifest.name, "line": read.line_of(key)}, kind)
            if key == "node":
                run.node = entry
            else:
                run.started = entry


def _started_fallback(run: Run) -> Entry | None:
    """When the manifest does not say, the container's own start time orders a series."""
    facts = run.fingerprint.get("facts") or {}
    for name in ("container.started_at", "container.created"):
        item = facts.get(name)
        if isinstance(item, dict) and item.get("value"):
            return Entry(STARTED, str(item["value"]), item.get("source") or {}, "fact")
    return None
