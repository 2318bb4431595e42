"""Answers several checks need, each read from the best source a fingerprint has.

"How many GPUs could the server use?" has several partial answers (nvidia-smi inside the
container, the --gpus selection, CUDA_VISIBLE_DEVICES, the host's count); the smallest one known
is the limit. Each answer carries the provenance of the value that decided it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vllm_triage.core.provenance import Provenance, Sourced
from vllm_triage.fingerprint.model import Fingerprint
from vllm_triage.fingerprint.values import as_bool, as_int, visible_devices_count

# Scopes whose nvidia-smi tells what the server could see, best first.
SERVER_VIEW = ("container", "gpu", "host")
# Scopes whose nvidia-smi tells which driver the host runs (inside a container nvidia-smi shows
# the host's kernel driver too), best first.
DRIVER_VIEW = ("host", "gpu", "container")


@dataclass
class Answer:
    value: Any
    how: str
    evidence: list[Provenance] = field(default_factory=list)


def first(fp: Fingerprint, suffix: str, scopes: tuple[str, ...]) -> tuple[str, Sourced] | None:
    """The first `<scope><suffix>` present, with its scope."""
    for scope in scopes:
        found = fp.get(scope + suffix)
        if found is not None and found.value is not None:
            return scope, found
    return None


def visible_gpus(fp: Fingerprint) -> Answer | None:
    observed = fp.get("container.gpu_count")
    if observed is not None and as_int(observed.value) is not None:
        return Answer(as_int(observed.value), "GPUs nvidia-smi lists inside the container", [observed.source])
    limits: list[Answer] = []
    requested = fp.get("container.gpus_requested")
    if requested is not None:
        limits.append(
            Answer(
                requested.value,
                f"GPUs given to the container ({fp.value('container.gpus')})",
                [requested.source],
            )
        )
    cuda_visible = fp.get("env.CUDA_VISIBLE_DEVICES")
    count = visible_devices_count(cuda_visible.value) if cuda_visible is not None else None
    if count is not None and cuda_visible is not None:
        limits.append(Answer(count, f"CUDA_VISIBLE_DEVICES={cuda_visible.value}", [cuda_visible.source]))
    for scope, how in (("gpu", "GPUs nvidia-smi lists"), ("host", "GPUs on the host")):
        found = fp.get(f"{scope}.gpu_count")
        if found is not None and as_int(found.value) is not None:
            limits.append(Answer(as_int(found.value), how, [found.source]))
    return min(limits, key=lambda a: a.value) if limits else None


def parallel_size(fp: Fingerprint, name: str) -> tuple[int, Sourced | None]:
    """A parallel size from the arguments (or the engine banner); 1 when not given."""
    for key in (f"arg.{name}", f"engine.{name}"):
        found = fp.get(key)
        if found is not None and as_int(found.value):
            return as_int(found.value) or 1, found
    return 1, None


def parallel_gpus(fp: Fingerprint) -> Answer:
    """GPUs one server needs on this node: tensor × pipeline × (local) data parallel size."""
    total = 1
    parts: list[str] = []
    evidence: list[Provenance] = []
    for name, label in (
        ("tensor_parallel_size", "tensor parallel"),
        ("pipeline_parallel_size", "pipeline parallel"),
    ):
        size, found = parallel_size(fp, name)
        total *= size
        if found is not None:
            parts.append(f"{label} {size}")
            evidence.append(found.source)
    dp_local, found = parallel_size(fp, "data_parallel_size_local")
    if found is None:
        dp_local, found = parallel_size(fp, "data_parallel_size")
    if found is not None:
        total *= dp_local
        parts.append(f"data parallel {dp_local}")
        evidence.append(found.source)
    return Answer(total, " × ".join(parts) or "no parallelism", evidence)


def multi_node(fp: Fingerprint) -> bool:
    """The launch may take GPUs from other nodes (Ray, --nnodes, headless workers)."""
    backend = str(fp.value("arg.distributed_executor_backend", "")).lower()
    nodes = as_int(fp.value("arg.nnodes")) or 1
    return backend == "ray" or nodes > 1 or as_bool(fp.value("arg.headless")) is True


def host_driver(fp: Fingerprint) -> tuple[str, Sourced] | None:
    return first(fp, ".driver_version", DRIVER_VIEW)


def vllm_version(fp: Fingerprint) -> Sourced | None:
    """The vLLM release that ran: as it reported itself, else as the image tag names it."""
    return fp.get("vllm.version") or fp.get("image.vllm_version")
