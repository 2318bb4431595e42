"""Triage: from log sources to the root error block, its phase, consequences and findings."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from vllm_triage import __version__
from vllm_triage.analysis.blocks import (
    Block,
    StreamIndex,
    block_around,
    frames_above,
    frames_of_following_traceback,
)
from vllm_triage.analysis.callpath import (
    Frame,
    complete_cut_frame,
    executor_method,
    parse_frames,
    phase_from_frames,
    split_tracebacks,
)
from vllm_triage.analysis.cause_line import line_naming_the_cause
from vllm_triage.analysis.echo import echoed_survivor
from vllm_triage.analysis.fatality import FatalityJudge, Survival
from vllm_triage.analysis.findings import earlier_warning_findings, next_step, root_finding, survived_findings
from vllm_triage.analysis.gone_past import (
    answered_by_handler,
    answers_to_survived_requests,
    asgi_request_error,
    client_error_survived,
    lone_lines_gone_past,
    warnings_gone_past,
)
from vllm_triage.analysis.milestones import first_missing, milestones_reached, shutdown_line
from vllm_triage.analysis.model import Consequence, ErrorBlock, LogAnalysis, Milestone, Row
from vllm_triage.analysis.phase import PhaseDecision, decide_phase, milestones_before
from vllm_triage.analysis.quiet_end import died_silently, hang
from vllm_triage.analysis.quoted_ahead import quoted_ahead
from vllm_triage.analysis.request_ids import SERVING_REQUEST_ID, serving_by_request_id
from vllm_triage.analysis.root import Candidate, collect_candidates
from vllm_triage.analysis.runs import runs
from vllm_triage.analysis.servers import servers
from vllm_triage.core.finding import Finding
from vllm_triage.core.phases import NO_FAILURE, phase_index
from vllm_triage.core.provenance import Provenance
from vllm_triage.engine.matcher import CompiledRules
from vllm_triage.engine.rules import FrameHint
from vllm_triage.engine.scan import ScanResult

MAX_CONSEQUENCES = 25
CUT_REASON = "the traceback is cut before its exception line (read from its source line)"
IMPLIED_LOOKBACK_LINES = 20
_OOM_CATEGORIES = ("oom_",)
_CUDA_FAULTS = ("illegal_memory_access", "cuda_kernel_fault", "device_side_assert", "cuda_error")


def rows_of(frame: pl.DataFrame) -> list[Row]:
    return [
        Row(
            file=r["file"],
            line=r["line"],
            raw=r["raw"],
            message=r["message"] or "",
            level=r["level"],
            process=r["process"],
            pid=r["pid"],
            rank=r["rank"],
            source=r["source"],
            vllm_ts=r["vllm_ts"],
            transport_ts=r["transport_ts"],
            marker=r["marker"],
            cls=r["cls"],
            exc=bool(r["exc"]),
            tb=bool(r["tb"]),
            service=r.get("service"),
        )
        for r in frame.iter_rows(named=True)
    ]


SCHEMA = "vllm-triage.triage/1"


def _row_json(row: Row) -> dict[str, Any]:
    """A line as the parser split it: a renderer shows the prefix once and the messages under it
    (it must not parse the raw line again)."""
    return {
        "line": row.line,
        "process": row.process,
        "pid": row.pid,
        "rank": row.rank,
        "level": row.level,
        "source": row.source,
        "timestamp": row.timestamp,
        "message": row.message,
    }


@dataclass
class TriageResult:
    inputs: list[dict]
    analyses: list[LogAnalysis]
    chosen: LogAnalysis | None
    findings: list[Finding] = field(default_factory=list)
    vllm_version: str | None = None  # what ran, from the log banner / collect_env
    known_issue: dict | None = None  # best match in the known-issue catalogue
    fingerprint: Any = None  # the bundle's Fingerprint, when its artefacts could be read

    @property
    def phase(self) -> str:
        return self.chosen.phase if self.chosen else NO_FAILURE

    def to_json(self, requests: dict[str, int] | None = None) -> dict[str, Any]:
        """The triage JSON contract (DESIGN §4), schema vllm-triage.triage/1. `requests`: what the
        server answered ({"ok", "failed", "received"}), when it was read."""
        chosen = self.chosen
        block = chosen.first_error if chosen else None
        first_error = block.to_json() if block else None
        if block is not None and first_error is not None:
            first_error["block_lines"] = block.lines
            first_error["block_rows"] = [_row_json(r) for r in block.rows]
        findings = [f.to_json() for f in (chosen.findings if chosen else [])]
        findings += [f.to_json() for f in self.findings]
        consequences = []
        for c in chosen.consequences if chosen else []:
            entry = c.to_json()
            entry.update(message=c.row.message, process=c.row.process, level=c.row.level)
            consequences.append(entry)
        return {
            "schema": SCHEMA,
            "tool_version": __version__,
            "inputs": self.inputs,
            "phase": self.phase,
            "phase_reason": chosen.phase_reason if chosen else "no vLLM log",
            "phase_confidence": chosen.phase_confidence if chosen else "low",
            "phase_alternative": chosen.phase_alternative if chosen else None,
            "milestones": [m.to_json() for m in chosen.milestones] if chosen else [],
            "last_milestone": chosen.milestones[-1].name if chosen and chosen.milestones else None,
            "first_missing_milestone": chosen.first_missing if chosen else None,
            "ready": chosen.ready if chosen else False,
            "requests": requests,
            "first_error": first_error,
            "vllm_version": self.vllm_version,
            "known_issue": self.known_issue,
            "consequences": consequences,
            "findings": findings,
            "logs": [
                {
                    "file": a.file,
                    "lines": a.lines,
                    "phase": a.phase,
                    "first_error_line": a.first_error.row.line if a.first_error else None,
                }
                for a in self.analyses
            ],
        }


def analyse_log(scan: ScanResult, compiled: CompiledRules) -> LogAnalysis:
    """The log's first error and phase. A log of several compose services is several servers'
    logs, and a log of a server stopped and started again is several runs: each is read alone and
    the one that failed is reported (as `choose` ranks them)."""
    rules = compiled.ruleset.by_id()
    parts = [
        (service, number, run)
        for service, rows in servers(rows_of(scan.frame))
        for number, run in enumerate(runs(rows, rules), start=1)
    ]
    if len(parts) == 1:
        return _analyse_rows(parts[0][2], scan, compiled)
    analyses = [(service, number, _analyse_rows(run, scan, compiled)) for service, number, run in parts]
    chosen = choose([analysis for _, _, analysis in analyses])
    assert chosen is not None  # several parts: several analyses
    if chosen.first_error is not None:
        service, number, _ = next(part for part in analyses if part[2] is chosen)
        of_service = [n for s, n, _ in analyses if s == service]
        where = [f"compose service {service}"] if service is not None else []
        if len(of_service) > 1:
            where.append(f"run {number} of {len(of_service)}: the server was stopped and started again")
        chosen.phase_reason = f"{chosen.phase_reason} ({'; '.join(where)})"
    return chosen


def _analyse_rows(rows: list[Row], scan: ScanResult, compiled: CompiledRules) -> LogAnalysis:
    rules = compiled.ruleset.by_id()
    index = StreamIndex(rows)
    milestones = milestones_reached(rows, rules)
    missing = first_missing(milestones, compiled.ruleset.milestone_order)
    ready_line = next((m.line for m in milestones if m.name == "ready"), None)
    stop = shutdown_line(rows, rules)
    candidates = collect_candidates(rows, rules, index, stop, compiled.ruleset.teardown_functions)
    judge = FatalityJudge(
        rows,
        rules,
        compiled.ruleset.milestone_order,
        [
            c.row.line
            for c in candidates.consequences
            if c.rule is not None and c.rule.extra.get("engine_gone")
        ],
    )
    survived: list[tuple[Candidate, Survival]] = []
    seen_warnings: dict[tuple[str, str], tuple[int, Survival]] = {}  # (rule, message) → first survived
    hints = compiled.ruleset.frames
    candidates.drop_survived(lambda c: _survival(c, index, judge, survived, seen_warnings, hints))
    roots, warned = warnings_gone_past(lone_lines_gone_past(candidates.roots, index, survived))
    candidates.consequences = answers_to_survived_requests(candidates.consequences, survived, index)
    consequences = candidates.consequences

    chosen: Candidate | None = None
    kind = "root"
    if roots:
        chosen = roots[0]
        echoed = echoed_survivor(chosen, survived)
        if echoed is not None:
            # The survivor was the same exception, echoed by the logger that reported it fatal.
            survived = [pair for pair in survived if pair[0] is not echoed]
            roots.insert(0, echoed)
            chosen = echoed
    else:
        chosen, kind = candidates.stand_in()
    if chosen is None:
        quoted = quoted_ahead(survived, index, judge)
        if quoted is not None:
            # The only cause in the input, quoted above a log that stops without error.
            survived = [pair for pair in survived if pair[0] is not quoted]
            chosen, kind = quoted, "root"

    if kind == "consequence_only":
        relay = _quoted_root(consequences, compiled)
        if relay is not None:
            chosen, kind = relay, "root"

    findings: list[Finding] = []
    block: ErrorBlock | None = None
    decision = PhaseDecision(NO_FAILURE, "no error found", "high")
    if chosen is not None and kind == "consequence_only" and ready_line is None:
        wrapper = next(
            (
                c
                for c in consequences
                if c.rule is not None and c.rule.extra.get("wraps_root") and _traceback_cut(index, c)
            ),
            None,
        )
        if wrapper is not None:
            # The failing process printed its own failure; the paste lost the traceback under it.
            chosen = wrapper
        else:
            stalled = chosen.rule is not None and bool(chosen.rule.extra.get("stall"))
            died = died_silently(chosen, milestones, judge, stalled)
            if died is not None:
                block, decision = died
    if block is None and chosen is not None:
        block, decision = _error_block(chosen, kind, index, compiled, milestones, consequences, roots)
    elif block is None:
        block, decision = hang(milestones, judge, ready_line, stop, rules, compiled.ruleset.milestone_order)
        cut = candidates.cut
        if block is None and cut is not None and ready_line is None and answered_by_handler(cut) is None:
            # Not healthy: the input ends inside a traceback the process died of, cut above its
            # exception line (the weakest evidence, so only when nothing else was found). After
            # ready it may as well be a request's error the server answered and survived; so is
            # one the OpenAI request handlers logged (serving_*.py catch, log and answer), ready
            # line pasted or not.
            chosen = cut
            block, decision = _error_block(chosen, "root", index, compiled, milestones, consequences, roots)
    phase, reason = decision.phase, decision.reason
    cons = _consequence_list(consequences, chosen)
    if block is not None:
        findings.append(root_finding(block))
        findings.extend(_secondary_findings(block, roots))
        findings.extend(earlier_warning_findings(warned, block))
    findings.extend(survived_findings(survived))
    if block is not None:
        step = next_step(phase)
        if step:
            findings.append(step)
    return LogAnalysis(
        file=scan.file,
        lines=scan.total_lines,
        phase=phase,
        milestones=milestones,
        first_missing=missing,
        first_error=block,
        consequences=cons,
        findings=findings,
        ready=ready_line is not None,
        phase_reason=reason,
        phase_confidence=decision.confidence if block is not None else "high",
        phase_alternative=decision.alternative if block is not None else None,
    )


def _error_block(
    chosen: Candidate,
    kind: str,
    index: StreamIndex,
    compiled: CompiledRules,
    milestones: list[Milestone],
    consequences: list[Candidate],
    roots: list[Candidate],
) -> tuple[ErrorBlock, PhaseDecision]:
    block = block_around(index, chosen.row)
    # The most specific rule anywhere in the block names the cause (a generic headline may open a
    # block whose exception line a rule knows).
    rule = chosen.rule if chosen.kind in ("rule", "consequence", "cut") else None
    if chosen.kind != "consequence":
        best = max(
            (
                c
                for c in roots
                if c.rule is not None
                and block.start <= c.row.line <= block.end
                and c.row.stream == chosen.row.stream
            ),
            key=lambda c: c.rule.priority if c.rule else 0,
            default=None,
        )
        if (
            best is not None
            and best.rule is not None
            and (rule is None or best.rule.priority > rule.priority)
        ):
            rule = best.rule
    row = line_naming_the_cause(chosen, block, roots) if kind == "root" else chosen.row
    rows_by_line = {r.line: r for r in index.rows}
    reached = milestones_before(chosen.row, milestones, rows_by_line)
    hints = compiled.ruleset.frames
    frames = call_path(block, hints) or parse_frames(frames_of_following_traceback(index, block))
    if index.rows and block.end == index.rows[-1].line:
        frames = complete_cut_frame(frames, index.rows[-1].message, hints)
    method = executor_method(r.message for r in block.rows)
    if method is not None:
        frames = [method, *frames]  # outermost: the traceback's own frames say more when present
    verdict = phase_from_frames(frames, hints)
    # Processes interleave: the API server may report the dead engine a few lines before the
    # engine's own traceback reaches the log, so consequences just before the root count too.
    implied = {
        c.rule.implies
        for c in consequences
        if c.rule and c.rule.implies and c.row.line > chosen.row.line - IMPLIED_LOOKBACK_LINES
    }
    if kind == "root" and serving_by_request_id(index, block, chosen.row):
        implied.add(SERVING_REQUEST_ID)
    if kind == "consequence_only":
        implied |= {chosen.rule.implies} if chosen.rule and chosen.rule.implies else set()
    decision = decide_phase(
        rule if kind != "consequence_only" else None,
        frames,
        hints,
        reached,
        implied,
        source=row.source,
        message=row.message,
    )
    if chosen.kind == "cut":
        # Without the exception line the type and message are read from a source line: say so.
        decision = dataclasses.replace(
            decision,
            reason=f"{decision.reason}; {CUT_REASON}",
            confidence="low",
        )
    phase = decision.phase
    generic = {
        "exception": "python_exception",
        "headline": "logged_exception",
        "plain_error": "error_line",
        "cut": "cut_traceback",
    }
    category = (
        rule.category.replace("{phase}", phase) if rule else generic.get(chosen.kind, "logged_exception")
    )
    if kind == "warning":
        category = rule.category if rule else "warning_exception"
    lines = [r.raw for r in block.rows]
    return (
        ErrorBlock(
            row=row,
            start=block.start,
            end=block.end,
            lines=lines,
            rows=list(block.rows),
            rule=rule.id if rule else None,
            category=category,
            phase=phase,
            explain=rule.explain if rule else "",
            advice=rule.advice if rule else "",
            kind=kind,
            component=verdict.component,
        ),
        decision,
    )


def call_path(block: Block, hints: list[FrameHint]) -> list[Frame]:
    """The frames that place the block: for a chained exception, those of the first traceback
    (the cause is printed first) that passes through a start-up step; else all of them."""
    chain = split_tracebacks(r.message for r in block.rows)
    for frames in chain:
        if phase_from_frames(frames, hints).strong is not None:
            return frames
    return [f for frames in chain for f in frames]


def _survival(
    candidate: Candidate,
    index: StreamIndex,
    judge: FatalityJudge,
    out: list[tuple[Candidate, Survival]],
    warned: dict[tuple[str, str], tuple[int, Survival]],
    hints: list[FrameHint],
) -> bool:
    handled = None
    key = _warning_key(candidate)
    if key is not None and key in warned:
        # A warning another process of the run already went past. vLLM logs import-time warnings
        # (`Failed to import from vllm._C …`, the platform probe) once per process that imports it:
        # a spawned engine prints them again before its prefix is set up, so its copy has no
        # process to follow. (Errors are not carried over: a retry that failed once and then for
        # good is fatal.)
        line, earlier = warned[key]
        reason = f"the same warning was survived at line {line} ({earlier.reason})"
        out.append((candidate, Survival(earlier.line, reason)))
        return True
    if candidate.kind != "consequence":
        died = judge.died_soon_after(candidate.row.line)
        handled = (
            answered_by_handler(candidate)
            or asgi_request_error(index, candidate.row, died)
            or client_error_survived(
                candidate.row, judge.ready_line, lone=not frames_above(index, candidate.row), died=died
            )
        )
    if handled is not None:
        # Cheap, so first: a day of serving can log thousands of per-request errors. The access
        # line that answered it, when there is one, is the better evidence to cite.
        survival: Survival | None = judge.answer_after(candidate.row.line) or handled
    else:
        block = block_around(index, candidate.row)
        # A traceback's later lines are part of the error; for a one-line error the block walk may
        # have absorbed unprefixed lines that follow it (an access log line is no continuation).
        end = block.end if any(r.tb for r in block.rows) else candidate.row.line
        doomed = candidate.rule is not None and bool(candidate.rule.extra.get("doomed"))
        step = phase_from_frames(call_path(block, hints), hints).strong
        raised_in = step.hint.phase if step is not None else None
        survival = judge.survived(candidate.row, end, doomed, raised_in) or (
            judge.never_used_after(candidate.row) if doomed else None
        )
    if survival is not None:
        out.append((candidate, survival))
        if key is not None:
            warned.setdefault(key, (candidate.row.line, survival))
    return survival is not None


def _warning_key(candidate: Candidate) -> tuple[str, str] | None:
    """What makes two rule-matched warnings the same one (looked up, not searched: a day of
    serving can survive thousands of candidates)."""
    if candidate.row.level != "WARNING" or candidate.rule is None:
        return None
    return candidate.rule.id, candidate.row.message


_RELAY_TAIL = "', please check"


def _quoted(message: str) -> str:
    """What a relay quotes: from its first quote to `', please check …` (or the end of the line,
    when the quoted error goes on over more lines). String search, not a lazy pattern: linear on
    a line of a million quotes."""
    start = message.find("'")
    if start < 0:
        return ""
    end = message.find(_RELAY_TAIL, start + 1)
    body = message[start + 1 : end] if end >= 0 else message[start + 1 :]
    return body.removesuffix("'")


def _quoted_root(consequences: list[Candidate], compiled: CompiledRules) -> Candidate | None:
    """A relay that quotes the failing process's exception, when that process's own traceback is
    not in the input (`RuntimeError: Worker failed with error 'NPU out of memory. Tried to
    allocate …'`): the line names the cause, so it stands for the root, classified by what it quotes."""
    by_id = compiled.ruleset.by_id()
    for candidate in consequences:
        if candidate.rule is None or not candidate.rule.extra.get("quotes_root"):
            continue
        text = _quoted(candidate.row.message)
        if not text:
            continue
        quoted = pl.DataFrame({"message": [text]}).select(compiled.class_expr().alias("id"))
        rule_id = quoted["id"][0]
        rule = by_id.get(rule_id) if rule_id else None
        return Candidate(candidate.row, rule if rule is not None and rule.kind == "error" else None, "rule")
    return None


def _traceback_cut(index: StreamIndex, candidate: Candidate) -> bool:
    """The headline opens a traceback that ends before its exception line (a cut paste)."""
    block = block_around(index, candidate.row)
    return any(r.tb for r in block.rows) and not any(r.exc for r in block.rows if r.line > candidate.row.line)


def _consequence_list(consequences: list[Candidate], chosen: Candidate | None) -> list[Consequence]:
    out: dict[tuple[str, str], Consequence] = {}
    for c in consequences:
        if chosen is not None and c.row.line == chosen.row.line:
            continue
        key = (c.rule.id if c.rule else "", c.row.message[:80])
        if key in out:
            out[key].count += 1
        elif len(out) < MAX_CONSEQUENCES:
            out[key] = Consequence(c.row, c.rule.id if c.rule else "")
    return list(out.values())


def _secondary_findings(block: ErrorBlock, roots: list[Candidate]) -> list[Finding]:
    findings = []
    later = [c for c in roots if c.row.line > block.end]
    if block.category in _CUDA_FAULTS or block.category.startswith("cuda"):
        ooms = [c for c in later if c.rule and c.rule.category.startswith(_OOM_CATEGORIES)]
        if ooms:
            findings.append(
                Finding(
                    "oom-after-cuda-error",
                    "info",
                    f"An out-of-memory error follows the CUDA error (line {ooms[0].row.line}); "
                    f"after a CUDA fault "
                    "the context is unusable and allocations fail: the OOM is a consequence, not a "
                    "memory problem.",
                    [Provenance(ooms[0].row.file, ooms[0].row.line)],
                    "Fix the CUDA error first; do not tune memory settings for this OOM.",
                )
            )
    same = [
        c
        for c in later
        if c.rule and block.rule and c.rule.id == block.rule and c.row.stream != block.row.stream
    ]
    if same:
        processes = sorted({c.row.process or "main" for c in same})
        findings.append(
            Finding(
                "same-error-other-processes",
                "info",
                f"The same error is reported by {len(same)} more line(s) from "
                f"{', '.join(processes[:6])}: one cause, "
                "several ranks.",
                [Provenance(c.row.file, c.row.line) for c in same[:5]],
                "",
            )
        )
    if block.start == 1 and block.kind == "root" and block.row.line > 1:
        findings.append(
            Finding(
                "paste-starts-mid-block",
                "info",
                "The input starts inside the error block: its beginning (headline, outer frames) was cut.",
                [Provenance(block.row.file, 1)],
                "Paste the log from the server's start, or at least from the first ERROR line of the block.",
            )
        )
    return findings


def choose(analyses: list[LogAnalysis]) -> LogAnalysis | None:
    """Across several logs of one run: a root beats a stand-in, then the earliest phase."""
    if not analyses:
        return None
    ranked = {"root": 0, "died": 1, "consequence_only": 1, "plain_error": 2, "warning": 3, "hang": 4}

    def key(a: LogAnalysis) -> tuple[int, int, int]:
        if a.first_error is None:
            return (9, 9, 0)
        return (ranked.get(a.first_error.kind, 5), phase_index(a.phase), a.first_error.row.line)

    return min(analyses, key=key)
