"""Human guidance attached to a triage: what the failure means and the next step in the method."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vllm_triage.analysis.model import ErrorBlock
from vllm_triage.core.finding import Finding
from vllm_triage.core.provenance import Provenance

if TYPE_CHECKING:
    from vllm_triage.analysis.fatality import Survival
    from vllm_triage.analysis.root import Candidate

MAX_SURVIVED = 5

# The method's order: base compatibility → minimal start → single request → one feature at a time.
NEXT_STEP = {
    "container": "Fix GPU visibility first: nvidia-smi must list the GPUs inside the container "
    "(runtime, --gpus, "
    "NVIDIA_VISIBLE_DEVICES). Nothing about vLLM settings matters until it does.",
    "config": "Fix the launch command or model configuration: start minimal (model, dtype, tensor "
    "parallel size) "
    "with the image's own vLLM version, then add arguments back one at a time.",
    "cuda_init": "Fix base compatibility before anything else: host driver vs the image's CUDA build, fabric "
    "manager, NCCL/GPU communication. Do not change memory, context length or caching yet.",
    "weight_load": "Check the model files and how they are read: revision, load format, "
    "quantization, disk and "
    "download; repeat a minimal start with the same weights.",
    "engine_reserve": "Memory, compilation and CUDA graphs: change one setting per trial "
    "(gpu_memory_utilization, "
    "max_model_len, max_num_seqs, --enforce-eager as a diagnostic) after checking nothing else uses the GPU.",
    "request": "Reproduce with one request and concurrency 1, then reintroduce one feature at a time: prefix "
    "caching, long context, concurrency, multi-node. Keep the failing request with its parameters.",
}


def next_step(phase: str) -> Finding | None:
    text = NEXT_STEP.get(phase)
    if not text:
        return None
    return Finding("next-step", "info", f"Next step for a failure in {phase}", [], text)


def root_finding(block: ErrorBlock) -> Finding:
    evidence = [Provenance(block.row.file, block.row.line)]
    if block.kind == "consequence_only":
        return Finding(
            "only-consequence",
            "warning",
            "Only consequences of the failure are in this input "
            f"(line {block.row.line}: {block.row.message[:160]}); the root error was printed elsewhere.",
            evidence,
            "Collect the failing worker's or engine core's own output: the full `docker logs -t` (all "
            "processes and ranks, from the start), and the host's kernel log (dmesg) for OOM kills "
            "and Xid errors.",
        )
    if block.kind == "hang":
        return Finding(
            "hang",
            "warning",
            f"The log stops after {block.row.message[:120]!r} with no error: the next step never finished "
            "(a hang, or the process was killed from outside).",
            evidence,
            "Check whether the process was killed (exit code, OOM killer, orchestrator events) or is stuck "
            "(py-spy dump, NCCL_DEBUG=INFO for collectives); compare timestamps of the last lines "
            "of every rank.",
        )
    if block.kind == "died":
        return Finding("died-without-traceback", "error", block.explain, evidence, block.advice)
    severity = "warning" if block.kind == "warning" else "error"
    message = block.explain or f"{block.row.message[:200]} (no rule names this cause; see the block)"
    return Finding(f"root-cause.{block.category}", severity, message, evidence, block.advice)


def survived_findings(survived: list[tuple[Candidate, Survival]]) -> list[Finding]:
    """Errors the process went on after: worth knowing, never the root (DESIGN §3)."""
    out = []
    for candidate, survival in survived[:MAX_SURVIVED]:
        row = candidate.row
        out.append(
            Finding(
                "survived-error",
                "info",
                f"An error the server survived (line {row.line}: {row.message.strip()[:140]}): "
                f"{survival.reason}.",
                [Provenance(row.file, row.line), Provenance(row.file, survival.line)],
                "Not the cause of this failure; fix it only if it recurs or slows start-up.",
            )
        )
    return out


def earlier_warning_findings(warned: list[Candidate], block: ErrorBlock) -> list[Finding]:
    """Warnings a known rule names, logged before the failure by the process that then failed:
    not the root (the process went on past them), but often the reason for it."""
    out = []
    for candidate in warned[:MAX_SURVIVED]:
        row, rule = candidate.row, candidate.rule
        if rule is None or row.line >= block.row.line:
            continue
        out.append(
            Finding(
                "earlier-warning",
                "warning",
                f"Before the failure the same process warned (line {row.line}: {row.message.strip()[:140]}): "
                f"{rule.explain}",
                [Provenance(row.file, row.line)],
                rule.advice,
            )
        )
    return out
