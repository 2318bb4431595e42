"""Place a failure in its phase.

Order of evidence (DESIGN §3): a rule whose cause is intrinsically of one phase; the server
having been ready before the error (request); the traceback's frames (deepest strong frame);
the milestones reached before the error; what the consequences imply (engine never started /
was serving); weak request frames; and last, the rule's own phase for a bare snippet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vllm_triage.analysis.callpath import Frame, phase_from_frames, phase_from_source, serving_loop_logger
from vllm_triage.analysis.model import Milestone, Row
from vllm_triage.analysis.request_ids import SERVING_REQUEST_ID
from vllm_triage.core.phases import PHASES, phase_index
from vllm_triage.engine.rules import FrameHint, Rule

LOOKAHEAD_LINES = 50


def _second(ts: str | None) -> str | None:
    return ts[:14] if ts else None


def milestones_before(
    root: Row, milestones: list[Milestone], rows_by_line: dict[int, Row]
) -> list[Milestone]:
    """Milestones printed before the root; if none, those printed by other processes in the
    same second right after it (multi-process output interleaves within a second)."""
    before = [m for m in milestones if m.line < root.line]
    if before:
        return before
    second = _second(root.vllm_ts)
    if second is None:
        return []
    near = []
    for m in milestones:
        if root.line < m.line <= root.line + LOOKAHEAD_LINES:
            row = rows_by_line.get(m.line)
            if row is not None and _second(row.vllm_ts) == second:
                near.append(m)
    return near


def frame_phase(
    frames: Sequence[Frame | str], hints: list[FrameHint]
) -> tuple[FrameHint | None, FrameHint | None, bool]:
    """(strong hint, weak hint, the strong one is a bare name) of the deepest matching frames.
    `frames` are traceback frame lines (matched with their file) or bare function names (matched
    when unambiguous), outermost first; analysis.callpath.phase_from_frames gives the full verdict."""
    verdict = phase_from_frames(frames, hints)
    strong = verdict.strong.hint if verdict.strong else None
    weak = verdict.weak.hint if verdict.weak else None
    bare = bool(verdict.strong and verdict.strong.frame.bare)
    return strong, weak, bare  # type: ignore[return-value]  # callpath returns the FrameHints it was given


@dataclass(frozen=True)
class PhaseDecision:
    """The phase, why, how sure, and the other phase a careful reader could defend."""

    phase: str
    reason: str
    confidence: str  # high: milestones and call path agree; medium: one of them; low: a bare snippet
    alternative: str | None = None


def _milestone_phase(reached: list[Milestone]) -> tuple[str | None, Milestone | None]:
    if not reached:
        return None, None
    last = max(reached, key=lambda m: (phase_index(m.phase), m.line))
    return last.phase, last


# Packages whose frames say what step was running when no vLLM frame does: the Hub client only
# runs to find and fetch the model (DESIGN §3: weight_load even while ModelConfig is built).
COMPONENT_PHASES = {"huggingface_hub": "weight_load", "safetensors": "weight_load"}
# torch's DeviceContext (`with torch.device(...)`): vLLM's model loaders build the model inside one
# (`with target_device: model = initialize_model(…)`), so a frame of it with no vLLM frame to say
# more means model construction (ROCm's rotary-cache "invalid device function", NPU OOMs while
# building layers).
_DEVICE_CONTEXT = "torch/utils/_device.py"


def decide_phase(
    rule: Rule | None,
    frames: Sequence[Frame | str],
    hints: list[FrameHint],
    reached: list[Milestone],
    implied: set[str],
    source: str | None = None,
    message: str = "",
) -> PhaseDecision:
    strong, weak, bare = frame_phase(frames, hints)
    if source and serving_loop_logger(source, message):
        by_source: str | None = "request"
    else:
        by_source = phase_from_source(source, hints) if source else None
    evidence = _CallPath(
        strong,
        weak,
        bare,
        by_source,
        source.split(":")[0] if source else None,
        frozenset(f.package for f in frames if isinstance(f, Frame)),
        _import_time(frames),
        any(isinstance(f, Frame) and f.path.endswith(_DEVICE_CONTEXT) for f in frames),
    )
    phase, reason = _decide(rule, evidence, reached, implied)
    by_milestones, last = _milestone_phase(reached)
    by_frames = strong.phase if strong else None
    if any(m.name == "ready" for m in reached):
        by_milestones = "request"
    sources = {p for p in (by_milestones, by_frames) if p}
    alternative = next((p for p in (by_frames, by_milestones) if p and p != phase), None)
    if rule is not None and rule.phase_source == "rule" and rule.phase in PHASES:
        confidence = "high" if not sources or sources == {phase} else "medium"
    elif by_milestones and by_frames:
        confidence = "high" if by_milestones == by_frames else "medium"
        if by_milestones != by_frames and last is not None:
            reason += (
                f"; the milestones say {by_milestones} (last: {last.name}, line {last.line}),"
                f" the call path says {by_frames}"
            )
    elif sources:
        confidence = "medium"
    else:
        confidence = "low"
    if alternative is None and rule is not None and rule.phase in PHASES and rule.phase != phase:
        alternative = rule.phase
    return PhaseDecision(phase, reason, confidence, alternative)


@dataclass(frozen=True)
class _CallPath:
    """What the failing process's own code says: its deepest frames and where it logged from."""

    strong: FrameHint | None
    weak: FrameHint | None
    strong_bare: bool  # the strong frame is a name only (an executor's headline), no file
    by_source: str | None  # the phase of the logger's module, when it runs in one step only
    source_file: str | None
    packages: frozenset[str]
    import_time: bool  # vLLM's frames are all module bodies: it failed while being imported
    device_context: bool  # a tensor was made under torch's default-device context (see below)


def _import_time(frames: Sequence[Frame | str]) -> bool:
    """Whether the exception was raised while Python imported vLLM: every vLLM frame is a module
    body (`<module>`), so none of vLLM's functions, and no start-up step, had run yet."""
    located = [f for f in frames if isinstance(f, Frame) and f.package == "vllm"]
    return bool(located) and all(f.function == "<module>" for f in located)


def _decide(
    rule: Rule | None, path: _CallPath, reached: list[Milestone], implied: set[str]
) -> tuple[str, str]:
    """Return (phase, reason)."""
    if rule is not None and rule.phase_source == "rule" and rule.phase in PHASES:
        return rule.phase, f"rule {rule.id} places this cause in {rule.phase}"
    if any(m.name == "ready" for m in reached):
        return "request", "the server was ready before the error"
    # The call path before the milestones: milestones are printed by whichever process logs
    # progress (V1's EngineCore delegates loading to workers that print it), the traceback's
    # frames are the failing process's own; a disagreement is stated in the reason.
    strong, weak = path.strong, path.weak
    if strong and path.strong_bare:
        return strong.phase, f"the executor names the worker method that failed: {strong.function}()"
    if strong:
        return strong.phase, f"the traceback passes through {strong.function}() ({strong.file})"
    if path.by_source == "request":
        return "request", f"logged from {path.source_file} by V0's serving loop"
    if path.by_source:
        return path.by_source, f"logged from {path.source_file}, which runs only in {path.by_source}"
    if reached:
        last = max(reached, key=lambda m: (phase_index(m.phase), m.line))
        engine_rule = rule is not None and phase_index(rule.phase) >= phase_index("cuda_init")
        if rule is not None and engine_rule and phase_index(last.phase) < phase_index("cuda_init"):
            # A CUDA/weights/memory error needs a running engine: its banner is just not in the input.
            return rule.phase, f"rule {rule.id}: the engine had started (its banner is not in the input)"
        return last.phase, f"last milestone reached: {last.name} (line {last.line})"
    if path.import_time and rule is None:
        # Nothing of vLLM ran: the installed build does not fit torch / CUDA / the platform (an
        # extension that did not load, a kernel library of another platform). Base compatibility.
        return "cuda_init", "raised while Python imported vLLM (only module bodies in its frames)"
    if "request" in implied and "startup" not in implied:
        return "request", "the consequences show the engine was serving"
    if SERVING_REQUEST_ID in implied and "startup" not in implied:
        return "request", "the failing process names a request the API server had accepted"
    if weak and "startup" not in implied:
        return weak.phase, f"the traceback passes through {weak.function}() ({weak.file})"
    for package, phase in COMPONENT_PHASES.items():
        if package in path.packages and not (rule is not None and rule.phase_source == "rule"):
            return (
                phase,
                f"the traceback passes through {package}, which runs only to find and fetch the model",
            )
    if path.device_context and not (rule is not None and rule.phase_source == "rule"):
        return (
            "weight_load",
            "a tensor was created under torch's default-device context, which vLLM sets while "
            "building the model",
        )
    if rule is not None and rule.phase in PHASES:
        phase = rule.phase
        if phase == "request" and "startup" in implied:
            phase = "engine_reserve"
        return phase, f"rule {rule.id} (no milestones in the input)"
    return "engine_reserve", "no milestones, frames or rule: placed in start-up by default"
