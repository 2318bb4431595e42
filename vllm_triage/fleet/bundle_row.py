"""One bundle → its rows: a run record, its findings, its knobs and facts (long format).

`bundle_rows(path)` is a pure function of the bundle's path and content: no global state, no
output, no exception escapes (a bundle that cannot be analysed becomes a run with status
"error"). That is what lets the same function run in a process pool here, or as a Spark/Ray map
over a shared filesystem (docs/fleet.md), and produce the same rows.
"""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vllm_triage import __version__
from vllm_triage.analysis import known_issues
from vllm_triage.analysis.signature import normalise, signature, signature_hash
from vllm_triage.core.errors import TriageError
from vllm_triage.fleet.bundles import BundleRef, content_hash, is_archive, mtime

if TYPE_CHECKING:
    from vllm_triage.engine.matcher import CompiledRules

# Enough of the verbatim first-error line to recognise it; the whole block is in the bundle.
MAX_TEXT = 2000


@dataclass
class BundleRows:
    run: dict[str, Any]
    findings: list[dict[str, Any]] = field(default_factory=list)
    knobs: list[dict[str, Any]] = field(default_factory=list)

    def rows(self, table: str) -> list[dict[str, Any]]:
        return [self.run] if table == "runs" else getattr(self, table)


def ref_for(path: str) -> BundleRef:
    resolved = Path(path).resolve()
    if resolved.is_dir():
        return BundleRef(str(resolved), "folder")
    return BundleRef(str(resolved), "archive" if is_archive(resolved) else "file")


def bundle_rows(
    path: str | BundleRef,
    rule_dirs: tuple[str, ...] = (),
    run_id: str | None = None,
    scan_id: str = "",
    scanned_at: datetime | None = None,
    compiled: CompiledRules | None = None,
) -> BundleRows:
    """Analyse one bundle. `run_id` may be passed when the caller already hashed the content;
    `compiled` (`pipeline.load_rules(rule_dirs)`, made once per worker) saves loading and compiling
    the rules again for every bundle. Neither changes the rows."""
    ref = path if isinstance(path, BundleRef) else ref_for(path)
    run: dict[str, Any] = {
        "run_id": run_id,
        "scan_id": scan_id,
        "scanned_at": scanned_at or datetime.now(timezone.utc),
        "tool_version": __version__,
        "source_path": ref.path,
        "bundle_kind": ref.kind,
        "status": "ok",
    }
    try:
        if run_id is None:
            run["run_id"], run["bundle_bytes"] = content_hash(ref)
        else:
            run["bundle_bytes"] = sum(p.stat().st_size for p in _paths(ref))
        return _analyse(ref, run, list(rule_dirs), compiled)
    except TriageError as exc:
        return _failed(ref, run, exc.problem_id, exc.one_line())
    except Exception as exc:  # a bug or an unreadable file must cost one run, not the scan
        return _failed(ref, run, "internal-error", f"{type(exc).__name__}: {exc}")


def _paths(ref: BundleRef) -> list[Path]:
    from vllm_triage.fleet.bundles import bundle_files

    return [p for _, p in bundle_files(ref)]


def _failed(ref: BundleRef, run: dict[str, Any], error_id: str, message: str) -> BundleRows:
    if run.get("run_id") is None:
        # Unreadable content has no hash; the path stands in so the failure is still one row.
        run["run_id"] = signature_hash(f"unreadable:{ref.path}")
    run.update(
        status="error", error_id=error_id, error_message=message[:MAX_TEXT], verdict="unreadable", failed=None
    )
    _started(run, None, ref)
    return BundleRows(run)


def _analyse(
    ref: BundleRef, run: dict[str, Any], rule_dirs: list[str], compiled: CompiledRules | None
) -> BundleRows:
    from vllm_triage.pipeline import triage

    # A shallow copy per bundle: the matcher may keep per-run state on the object (which engine
    # a pattern runs in after an overrun), and one bundle's state must not leak into the next.
    result = triage([ref.path], rule_dirs, compiled=copy.copy(compiled) if compiled else None)
    triaged = result.to_json()
    if result.fingerprint is not None:  # read with the triage: the bundle is not gathered twice
        fingerprint, fp_error = result.fingerprint.to_json(), None
    else:
        fingerprint, fp_error = _fingerprint(ref.path, rule_dirs)
    manifest = _manifest_run(ref)

    value = _lookup(fingerprint)
    run.update(
        label=_text(manifest.get("label")),
        node=_text(manifest.get("node")),
        model=_text(value("arg.model", "engine.model")),
        vllm_version=_text(value("vllm.version", "image.vllm_version")),
        torch_version=_text(value("torch.version")),
        cuda_build=_text(value("cuda.build")),
        host_driver=_text(value("host.driver_version")),
        container_driver=_text(value("container.driver_version")),
        image_ref=_text(value("image.ref")),
        image_digest=_text(value("image.digest")),
        gpu_model=_most_common(value("host.gpu_models", "container.gpu_models")),
        gpu_count=_int(value("host.gpu_count", "container.gpu_count")),
        fingerprint_error=fp_error,
    )
    _started(
        run,
        manifest.get("started") or value("container.started_at"),
        ref,
        "manifest" if manifest.get("started") else "container",
    )
    _verdict(run, triaged, tuple(rule_dirs))
    findings = [_finding_row(run["run_id"], run["scan_id"], f, ref.path) for f in triaged.get("findings", [])]
    run["errors"] = sum(1 for f in findings if f["severity"] == "error")
    run["warnings"] = sum(1 for f in findings if f["severity"] == "warning")
    knobs = _knob_rows(run["run_id"], run["scan_id"], fingerprint, ref.path)
    return BundleRows(run, findings, knobs)


def _verdict(run: dict[str, Any], triaged: dict[str, Any], rule_dirs: tuple[str, ...]) -> None:
    first = triaged.get("first_error")
    run.update(
        phase=triaged.get("phase"),
        phase_reason=triaged.get("phase_reason"),
        ready=bool(triaged.get("ready")),
        last_milestone=triaged.get("last_milestone"),
        first_missing_milestone=triaged.get("first_missing_milestone"),
        consequences=len(triaged.get("consequences") or []),
    )
    if not first:
        run.update(verdict="ok", failed=False)
        return
    category = first.get("category")
    message = first.get("message") or first.get("text") or ""
    sig = signature(category, message)
    run.update(
        verdict="hang" if category == "hang" else "failed",
        failed=True,
        category=category,
        rule=first.get("rule"),
        first_error_file=_inside(first.get("file"), run["source_path"]),
        first_error_line=first.get("line"),
        first_error_process=first.get("process"),
        first_error_text=(first.get("text") or "")[:MAX_TEXT],
        message=normalise(message),
        signature=sig,
        signature_hash=signature_hash(sig),
    )
    match = known_issues.best_match(first, run.get("vllm_version"), rule_dirs)
    if match:
        run.update(
            known_issue_id=match["id"],
            known_issue_ref=match["ref"],
            known_issue_score=match["score"],
            known_issue_fixed_in=match["fixed_in"],
        )


def _fingerprint(path: str, rule_dirs: list[str]) -> tuple[dict[str, Any], str | None]:
    """The fingerprint JSON ({knobs, facts, findings}); an empty one, with the reason, when the
    environment cannot be read — the triage of the log still stands."""
    try:
        from vllm_triage.pipeline import fingerprint
    except ImportError as exc:  # fingerprint not wired in this build
        return {}, f"fingerprint unavailable: {exc}"
    try:
        return fingerprint([path], rule_dirs).to_json(), None
    except TriageError as exc:
        return {}, exc.one_line()
    except Exception as exc:
        return {}, f"{type(exc).__name__}: {exc}"


def _manifest_run(ref: BundleRef) -> dict[str, Any]:
    """The `[run]` table of the bundle's bundle.toml (label, node, started), or {}."""
    from vllm_triage.ingest.manifest import MANIFEST_NAME, is_manifest, read_manifest
    from vllm_triage.ingest.sources import collect

    if ref.kind == "file":
        return {}
    if ref.kind == "folder":
        manifest = Path(ref.path) / MANIFEST_NAME
        if not manifest.is_file():
            return {}
    for source in collect([ref.path]):
        if is_manifest(source.name):
            return read_manifest(source).run()
    return {}


def _lookup(fingerprint: dict[str, Any]) -> Callable[..., Any]:
    knobs, facts = fingerprint.get("knobs", {}), fingerprint.get("facts", {})

    def value(*names: str) -> Any:
        for name in names:
            entry = knobs.get(name) or facts.get(name)
            if entry is not None and entry.get("value") not in (None, "", []):
                return entry["value"]
        return None

    return value


def _knob_rows(run_id: str, scan_id: str, fingerprint: dict[str, Any], root: str) -> list[dict[str, Any]]:
    rows = []
    for kind in ("knobs", "facts"):
        for name, entry in fingerprint.get(kind, {}).items():
            raw = entry.get("value")
            source = entry.get("source") or {}
            rows.append(
                {
                    "run_id": run_id,
                    "scan_id": scan_id,
                    "kind": kind[:-1],
                    "name": name,
                    "value": raw if isinstance(raw, str) else json.dumps(raw, default=str),
                    "value_type": _type_name(raw),
                    "source_file": _inside(source.get("file"), root),
                    "source_line": _int(source.get("line")),
                    "note": entry.get("note"),
                }
            )
    return rows


def _finding_row(run_id: str, scan_id: str, finding: dict[str, Any], root: str) -> dict[str, Any]:
    evidence = finding.get("evidence") or []
    first = evidence[0] if evidence and isinstance(evidence[0], dict) else {}
    return {
        "run_id": run_id,
        "scan_id": scan_id,
        "finding_id": finding.get("id"),
        "severity": finding.get("severity"),
        "message": finding.get("message"),
        "advice": finding.get("advice"),
        "evidence_file": _inside(first.get("file"), root),
        "evidence_line": _int(first.get("line")),
        "evidence_count": len(evidence),
    }


def _inside(name: str | None, root: str) -> str | None:
    """A file name relative to its bundle (`vllm.log`, not `/mnt/fleet/run-7/vllm.log`), so rows
    from two machines that mounted the fleet elsewhere compare equal; source_path has the rest."""
    if not name:
        return name
    for prefix in (root + "!", root + "/"):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _started(run: dict[str, Any], given: Any, ref: BundleRef, source: str = "manifest") -> None:
    """When the run started: the manifest's `started`, else the container's start, else the
    bundle's newest mtime (when it was collected: better than nothing for first/last seen)."""
    when = _timestamp(given)
    if when is None:
        try:
            newest = mtime(ref)
        except OSError:
            newest = None
        when = datetime.fromtimestamp(newest, timezone.utc) if newest else None
        run["started_at"], run["started_source"] = when, "mtime" if newest else None
        return
    run["started_at"], run["started_source"] = when, source


_FRACTION = re.compile(r"(\.\d{6})\d+")


def _timestamp(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if not isinstance(value, str) or not value.strip():
        return None
    text = _FRACTION.sub(r"\1", value.strip()).replace("Z", "+00:00")  # docker's nanoseconds
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def _most_common(value: Any) -> str | None:
    if isinstance(value, list):
        names = [str(v) for v in value if v]
        return Counter(names).most_common(1)[0][0] if names else None
    return _text(value)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict"}.get(
        type(value), "str"
    )
