"""From paths to results: the one call each command makes."""

from __future__ import annotations

from typing import Any, BinaryIO

from vllm_triage.analysis.triage import TriageResult, analyse_log, choose
from vllm_triage.core.errors import InputError, TriageError
from vllm_triage.core.finding import Finding
from vllm_triage.core.provenance import Provenance
from vllm_triage.core.roles import Role
from vllm_triage.engine import rules as rules_mod
from vllm_triage.engine import user_rules
from vllm_triage.engine.matcher import CompiledRules, compile_rules
from vllm_triage.engine.scan import LineCuts, scan
from vllm_triage.fingerprint import data as check_data
from vllm_triage.fingerprint.checks import run_checks
from vllm_triage.fingerprint.combine import combine
from vllm_triage.fingerprint.model import Fingerprint
from vllm_triage.ingest.decode import SNIFF_BYTES, check_text, decode_all
from vllm_triage.ingest.limits import LIMITS, human
from vllm_triage.ingest.skips import skipped_of
from vllm_triage.ingest.sources import Source, collect
from vllm_triage.parsers.roles import assign_roles, log_score


def load_rules(extra_dirs: list[str] | None = None) -> CompiledRules:
    ruleset = rules_mod.load(extra_dirs)
    if extra_dirs:
        user_rules.vet(list(extra_dirs), ruleset)  # what `rules check` rejects is never run
    return compile_rules(ruleset)


def gather(paths: list[str], stdin: BinaryIO | None = None) -> list[Source]:
    return assign_roles(collect(paths, stdin))


# A log can hide in a file sniffed as something else (an issue paste: collect_env, then the log).
_MAY_HOLD_A_LOG = (None, "unknown", "collect_env", "launch_command")


def _log_sources(sources: list[Source]) -> list[Source]:
    logs = [s for s in sources if s.role == Role.VLLM_LOG]
    if logs:
        return logs
    readable = []
    for source in sources:
        head = source.head(SNIFF_BYTES)
        if len(sources) == 1:
            check_text(head, source.name)  # a lone empty / binary file → InputError
        elif not head.strip():
            continue
        if source.role in _MAY_HOLD_A_LOG and log_score(decode_all(head, "utf-8")) > 0:
            readable.append(source)
    if readable:
        return readable
    if len(sources) == 1:
        source = sources[0]
        if source.role in (None, Role.UNKNOWN):
            message = (
                f"{source.name} does not look like a vLLM log (no log lines, tracebacks or "
                f"vLLM messages in it)"
            )
        else:
            message = f"{source.name} is not a vLLM log (it looks like {source.role} output)"
        raise InputError("not-a-log", message, "use `vllm-triage fingerprint` for environment artefacts")
    raise InputError(
        "no-log-in-bundle", "the input holds no vLLM log", "add the server log (docker logs -t) to the bundle"
    )


def triage(
    paths: list[str],
    rule_dirs: list[str] | None = None,
    stdin: BinaryIO | None = None,
    compiled: CompiledRules | None = None,
) -> TriageResult:
    return triage_sources(gather(paths, stdin), rule_dirs, compiled)


def triage_sources(
    sources: list[Source], rule_dirs: list[str] | None = None, compiled: CompiledRules | None = None
) -> TriageResult:
    """Triage already-gathered sources; the result carries the bundle's fingerprint too, so
    callers that need both (diff, fleet) read every file once. `compiled` is `load_rules(rule_dirs)`
    made once by a caller that triages many inputs (fleet scans: ≈ 8 ms a bundle otherwise)."""
    compiled = compiled or load_rules(rule_dirs)
    logs = _log_sources(sources)
    analyses, cuts = [], []
    for source in logs:
        scanned = scan(source, compiled)
        analyses.append(analyse_log(scanned, compiled))
        # Only the cut lines outlive the loop: a scan's retained rows are freed once analysed.
        cuts.append(LineCuts(scanned.file, scanned.cut_lines, scanned.cut_count))
    inputs: list[dict[str, Any]] = [
        {"path": s.name, "role": s.role or Role.UNKNOWN, "lines": None} for s in sources
    ]
    for entry in inputs:
        for analysis in analyses:
            if analysis.file == entry["path"]:
                entry["lines"] = analysis.lines
    result = TriageResult(inputs=inputs, analyses=analyses, chosen=choose(analyses))
    result.findings.extend(input_findings(sources, cuts))
    found, findings, vllm_version = _environment_findings(sources, rule_dirs)
    result.fingerprint = found
    result.findings.extend(findings)
    result.vllm_version = vllm_version
    result.known_issue = _known_issue(result, vllm_version, rule_dirs)
    return result


def input_findings(sources: list[Source], scans: list[LineCuts]) -> list[Finding]:
    """What was not read in full: inputs skipped while collecting (a FIFO, an unreadable file, an
    encrypted member) and lines cut to --max-line. The triage stands, but says what it missed."""
    findings = [
        Finding(
            "input-skipped",
            "warning",
            skip.describe(),
            [Provenance(skip.name, None)],
            "Copy the file into the bundle as a regular, readable file if it matters.",
        )
        for skip in skipped_of(sources)
    ]
    for scanned in scans:
        if not scanned.cut_count:
            continue
        lines = ", ".join(str(n) for n in scanned.cut_lines[:5])
        more = f" and {scanned.cut_count - 5} more" if scanned.cut_count > 5 else ""
        findings.append(
            Finding(
                "line-truncated",
                "info",
                f"{scanned.cut_count} line(s) longer than {human(LIMITS.max_line)} were cut to that length "
                f"before matching (line {lines}{more})",
                [Provenance(scanned.file, n) for n in scanned.cut_lines],
                "A line that long is data, not a log line; raise --max-line to read it whole.",
            )
        )
    return findings


def _known_issue(result: TriageResult, vllm_version: str | None, rule_dirs: list[str] | None) -> dict | None:
    """The best match in the known-issue catalogue, unless this vLLM version already has the fix."""
    if result.chosen is None or result.chosen.first_error is None:
        return None
    from vllm_triage.analysis.known_issues import best_match

    try:
        return best_match(result.chosen.first_error.to_json(), vllm_version, tuple(rule_dirs or ()))
    except Exception:  # the catalogue is an extra; a broken entry must not cost the triage
        return None


def fingerprint_sources(sources: list[Source], rule_dirs: list[str] | None = None) -> Fingerprint:
    data = check_data.load(rule_dirs)
    found = combine(sources, data)
    found.notes.extend(skip.describe() for skip in skipped_of(sources))
    run_checks(found, data)
    return found


def fingerprint(
    paths: list[str], rule_dirs: list[str] | None = None, stdin: BinaryIO | None = None
) -> Fingerprint:
    return fingerprint_sources(gather(paths, stdin), rule_dirs)


# Findings of the fingerprint that say nothing about the failure being triaged.
_NOT_FOR_TRIAGE = {"gpu-scope-unstated"}


def _environment_findings(
    sources: list[Source], rule_dirs: list[str] | None
) -> tuple[Fingerprint | None, list[Finding], str | None]:
    """The compatibility and hygiene findings of the bundle being triaged, and the vLLM version
    that ran. An extra: whatever goes wrong here must never cost the user the triage itself."""
    try:
        found = fingerprint_sources(sources, rule_dirs)
    except TriageError:
        return None, [], None  # nothing in the input to fingerprint: no findings to add
    except Exception as exc:
        failed = Finding(
            "fingerprint-failed",
            "info",
            f"the environment checks could not run ({type(exc).__name__}: {exc})",
            [],
            "Run `vllm-triage fingerprint` on the same input for details.",
        )
        return None, [failed], None
    version = found.facts.get("vllm.version")
    findings = [f for f in found.findings if f.id not in _NOT_FOR_TRIAGE]
    return found, findings, str(version.value) if version is not None and version.value else None
