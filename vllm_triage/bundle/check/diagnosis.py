"""Checklist items the diagnosis calls for: an NCCL or communication failure needs NCCL's own
INFO output, the container's shm/IPC settings and the GPU topology; a weight-load failure the load
format and the model revision; an out-of-memory failure the memory figures at start and the
gpu_memory_utilization in force (rules/checklist.toml `[[diagnosis]]` says which is which)."""

from __future__ import annotations

import re
from collections.abc import Callable

from vllm_triage.bundle.check.context import TrialContext, where
from vllm_triage.bundle.check.model import Verdict, failed, missing, passed
from vllm_triage.core.provenance import Provenance
from vllm_triage.core.roles import Role

_NCCL_INFO = re.compile(r"\bNCCL INFO\b")
_SCOPES = ("container", "gpu", "host")


def nccl_debug(ctx: TrialContext) -> Verdict:
    for source in ctx.trial.of_role(Role.VLLM_LOG):
        for number, line in enumerate(ctx.trial.text(source).splitlines(), 1):
            if _NCCL_INFO.search(line):
                return passed(
                    "NCCL INFO lines in the log (NCCL_DEBUG=INFO was on)", Provenance(source.name, number)
                )
    setting = ctx.fp.get("env.NCCL_DEBUG")
    if setting is not None and str(setting.value).upper() in ("INFO", "TRACE"):
        return failed(
            f"NCCL_DEBUG={setting.value} is set ({setting.source}) but the log holds no `NCCL INFO` line: "
            "the workers' output was not kept",
            [where(setting)],
            ("method", "log"),
        )
    return missing("no NCCL_DEBUG=INFO output in the log", ("method", "log"), [where(setting)])


def shm_ipc(ctx: TrialContext) -> Verdict:
    ipc, shm = ctx.fp.get("container.ipc"), ctx.fp.get("container.shm_size")
    if ipc is not None or shm is not None:
        parts = []
        if ipc is not None:
            parts.append(f"ipc={ipc.value}")
        if shm is not None:
            parts.append(f"shm_size={shm.value}" + (f" ({shm.note})" if shm.note else ""))
        return passed(", ".join(parts), where(ipc), where(shm))
    if ctx.scene.kind == "host":
        return passed("no container: the workers share the host's /dev/shm and IPC namespace")
    places = ("pod",) if ctx.scene.kind == "pod" else ("container",)
    return missing("the container's IPC mode and /dev/shm size are not recorded", places)


def gpu_topology(ctx: TrialContext) -> Verdict:
    for scope in _SCOPES:
        found = ctx.fp.get(f"{scope}.topology")
        if found is not None and found.value:
            return passed(f"GPU topology ({scope} view)", where(found))
    return missing("no GPU topology (nvidia-smi topo -m)", ("host",))


def load_format(ctx: TrialContext) -> Verdict:
    for name, how in (("arg.load_format", "argument"), ("engine.load_format", "engine banner")):
        found = ctx.fp.get(name)
        if found is not None and found.value not in (None, ""):
            return passed(f"load format {found.value} ({how})", where(found))
    return missing(
        "the load format is not recorded (the engine banner at the log's start, or --load-format)", ("log",)
    )


def model_revision(ctx: TrialContext) -> Verdict:
    model = ctx.fp.get("arg.model") or ctx.fp.get("engine.model")
    if model is None:
        return missing("the model is not recorded (launch command or log)", ("log", "host"))
    for name in ("arg.revision", "engine.revision"):
        found = ctx.fp.get(name)
        if found is not None and found.value not in (None, "", "None"):
            return passed(f"{model.value} at revision {found.value}", where(found))
    mutable = next((f for f in ctx.fp.findings if f.id == "model-mutable-reference"), None)
    if mutable is not None:
        return failed(
            f"{model.value} is a Hub repository loaded without --revision: its files may have changed since",
            list(mutable.evidence),
            ("host",),
        )
    return passed(f"{model.value} is a local path: its files are what was loaded", where(model))


def memory_at_start(ctx: TrialContext) -> Verdict:
    for scope in _SCOPES:
        used = next((c for c in ctx.read_by(f"{scope}.gpu_memory_used_mib", Role.NVIDIA_SMI)), None)
        if used is None or not used.sourced.value:
            continue
        total = ctx.fp.get(f"{scope}.gpu_memory_total_mib")
        text = f"GPU memory used ({scope}): {used.sourced.value} MiB"
        if total is not None:
            text += f" of {total.value} MiB"
        return passed(text, where(used))
    return missing("no GPU memory figures from before the start (nvidia-smi)", ("host",))


def gpu_memory_utilization(ctx: TrialContext) -> Verdict:
    found = ctx.fp.get("arg.gpu_memory_utilization")
    if found is not None and found.value not in (None, ""):
        return passed(f"gpu_memory_utilization {found.value}", where(found))
    for role, what in (
        (Role.VLLM_LOG, "the arguments the server logged"),
        (Role.LAUNCH_COMMAND, "the launch command"),
    ):
        given = ctx.names_read("arg.", role)
        if given:
            return passed(
                f"the default {ctx.data.default_gpu_memory_utilization} (not among {what})",
                where(ctx.first_read(given[0], role)),
            )
    return missing(
        "the gpu_memory_utilization in force is not recorded (the log's non-default args line, or the "
        "launch command)",
        ("log",),
    )


CHECKS: dict[str, Callable[[TrialContext], Verdict]] = {
    "nccl-debug": nccl_debug,
    "shm-ipc": shm_ipc,
    "gpu-topology": gpu_topology,
    "load-format": load_format,
    "model-revision": model_revision,
    "memory-at-start": memory_at_start,
    "gpu-memory-utilization": gpu_memory_utilization,
}
