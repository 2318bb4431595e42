"""Compatibility checks over a Fingerprint: what makes a run fail before vLLM settings matter.

Driver vs the image's CUDA build, the container's view of the GPUs vs the host's, GPUs vs the
parallel sizes, GPUs already in use. The thresholds and tables are data (rules/compat/*.toml);
hygiene checks are in hygiene.py and model recipes in recipes.py. `run_checks` runs them all.
"""

from __future__ import annotations

from typing import Any

from vllm_triage.core.finding import Finding
from vllm_triage.core.provenance import Sourced
from vllm_triage.fingerprint import hygiene, recipes
from vllm_triage.fingerprint.data import CheckData
from vllm_triage.fingerprint.model import Fingerprint
from vllm_triage.fingerprint.values import as_int, cuda_major_minor, driver_tuple, version_tuple
from vllm_triage.fingerprint.views import first, host_driver, multi_node, parallel_gpus, visible_gpus

BASE_FIRST = (
    "Fix base compatibility before anything else; memory, context length and caching settings do not "
    "matter until it holds."
)


def run_checks(fp: Fingerprint, data: CheckData) -> None:
    for check in (
        driver_vs_cuda,
        container_driver,
        container_gpus,
        gpus_vs_parallel,
        gpu_occupied,
        *hygiene.CHECKS,
        recipes.check_recipes,
    ):
        fp.findings.extend(check(fp, data))


def driver_vs_cuda(fp: Fingerprint, data: CheckData) -> list[Finding]:
    build = fp.get("cuda.build")
    cuda = cuda_major_minor(build.value) if build is not None else None
    if build is None or cuda is None:
        return []
    how = f" ({build.note})" if build.note else ""
    found = host_driver(fp)
    if found is None:
        return _cuda_vs_supported(fp, cuda, how)
    scope, driver = found
    have = driver_tuple(driver.value)
    row = data.driver_for(cuda)
    major = int(cuda.split(".")[0])
    floor = data.cuda_family.get(major)
    if have is None or (row is None and floor is None):
        return []
    needed = row.min_driver if row is not None else str(floor)
    if have >= (driver_tuple(needed) or ()):
        return []
    branch = f"r{row.branch}" if row is not None else f"r{needed.split('.')[0]}"
    below_family = floor is not None and have < (driver_tuple(floor) or ())
    why = (
        f"nothing built with CUDA {major}.x runs below driver {floor}"
        if below_family
        else f"on this driver CUDA {cuda} runs only through minor-version compatibility: the "
        f"NVIDIA container "
        f"toolkit refuses the image (NVIDIA_REQUIRE_CUDA=cuda>={cuda}) and PTX-compiled kernels fail"
    )
    return [
        Finding(
            "driver-too-old-for-cuda",
            "error",
            f"The image is built for CUDA {cuda}{how}, which needs NVIDIA driver {branch} or newer "
            f"({needed}); "
            f"the driver is {driver.value} (r{have[0]}, {scope} nvidia-smi): {why}. A host on "
            f"r{have[0]} is not an "
            f"equivalent base for a CUDA {cuda} image.",
            [driver.source, build.source],
            f"Use an image built for the host's driver{_image_for(have, data)}, or upgrade the "
            f"host driver to "
            f"{branch}+. {BASE_FIRST}",
        )
    ]


def _image_for(have: tuple[int, ...], data: CheckData) -> str:
    """The newest CUDA build this driver runs fully, as a tag suffix hint (`-cu129`)."""
    fitting = [row for row in data.cuda_driver if have >= (driver_tuple(row.min_driver) or ())]
    if not fitting:
        return ""
    best = max(fitting, key=lambda row: version_tuple(row.cuda) or ())
    return f" (CUDA {best.cuda} or older, e.g. a -cu{best.cuda.replace('.', '')} tag)"


def _cuda_vs_supported(fp: Fingerprint, cuda: str, how: str) -> list[Finding]:
    """No driver version, but nvidia-smi's "CUDA Version" (the newest CUDA the driver runs)."""
    found = first(fp, ".cuda_version", ("host", "gpu", "container"))
    build = fp.get("cuda.build")
    if found is None or build is None:
        return []
    supported = version_tuple(found[1].value)
    if supported is None or (version_tuple(cuda) or ()) <= supported:
        return []
    return [
        Finding(
            "driver-too-old-for-cuda",
            "error",
            f"The image is built for CUDA {cuda}{how}, but the driver supports CUDA {found[1].value} at most "
            f"({found[0]} nvidia-smi).",
            [found[1].source, build.source],
            f"Use an image built for CUDA {found[1].value} or older, or upgrade the host driver. "
            f"{BASE_FIRST}",
        )
    ]


def container_driver(fp: Fingerprint, data: CheckData) -> list[Finding]:
    host, inside = fp.get("host.driver_version"), fp.get("container.driver_version")
    if host is None or inside is None or str(host.value).strip() == str(inside.value).strip():
        return []
    return [
        Finding(
            "container-driver-differs",
            "warning",
            f"nvidia-smi inside the container reports driver {inside.value}, the host "
            f"{host.value}. A container "
            "sees the host's kernel driver; a different version means user-space driver libraries "
            "inside the image "
            "(or compat libraries on LD_LIBRARY_PATH), or captures from different machines.",
            [host.source, inside.source],
            "Let the NVIDIA container toolkit mount the host's driver libraries (do not install a "
            "driver in the "
            "image), and take both captures on the same node for the same run.",
        )
    ]


def container_gpus(fp: Fingerprint, data: CheckData) -> list[Finding]:
    inside = fp.get("container.gpu_count")
    if inside is None or as_int(inside.value) is None:
        return []
    seen = as_int(inside.value) or 0
    host = fp.get("host.gpu_count")
    host_count = as_int(host.value) if host is not None else None
    advice = (
        "Look at the container runtime (--runtime nvidia, --gpus, CDI --device nvidia.com/gpu=…) and "
        "NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES before any memory setting: vLLM cannot use a GPU the "
        "container does not see."
    )
    evidence = [inside.source] + ([host.source] if host is not None else []) + fp.where("container.gpus")
    if seen == 0:
        on_host = f" while the host has {host_count}" if host_count else ""
        return [
            Finding(
                "no-gpu-in-container",
                "error",
                f"No GPU is visible inside the container{on_host}.",
                evidence,
                advice,
            )
        ]
    if host_count is None or seen >= host_count:
        return []
    requested = as_int(fp.value("container.gpus_requested"))
    if requested is not None and requested == seen:
        return []  # the selection given to the container explains the difference
    return [
        Finding(
            "fewer-gpus-in-container",
            "warning",
            f"The container sees {seen} GPU(s), the host has {host_count}"
            + (
                f", and the container was given {fp.value('container.gpus')}"
                if fp.get("container.gpus")
                else ""
            )
            + ".",
            evidence,
            advice,
        )
    ]


def gpus_vs_parallel(fp: Fingerprint, data: CheckData) -> list[Finding]:
    need = parallel_gpus(fp)
    if need.value <= 1:
        return []
    visible = visible_gpus(fp)
    if visible is None or visible.value >= need.value:
        return []
    elsewhere = multi_node(fp)
    return [
        Finding(
            "fewer-gpus-than-parallel",
            "info" if elsewhere else "error",
            f"{need.how} needs {need.value} GPUs but only {visible.value} are visible ({visible.how})"
            + ("; the launch spans nodes, so the rest may come from other nodes." if elsewhere else "."),
            need.evidence + visible.evidence,
            "Give the container/process as many GPUs as tensor × pipeline parallel size (check --gpus, "
            "NVIDIA_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES), or lower the parallel sizes.",
        )
    ]


def gpu_occupied(fp: Fingerprint, data: CheckData) -> list[Finding]:
    """Memory in use or compute processes on a GPU before the server started: a shared node.

    Every nvidia-smi snapshot is judged on its own (a bundle may hold one taken before the start and
    one taken during the run); a snapshot is one file of one scope."""
    findings = []
    for scope in ("host", "gpu", "container"):
        used_by_file = _by_file(fp, f"{scope}.gpu_memory_used_mib")
        procs_by_file = _by_file(fp, f"{scope}.gpu_process_list")
        totals_by_file = _by_file(fp, f"{scope}.gpu_memory_total_mib")
        uuids = fp.value(f"{scope}.gpu_uuids") or []
        for file in dict.fromkeys([*used_by_file, *procs_by_file]):
            finding = _occupied_snapshot(
                scope, used_by_file.get(file), procs_by_file.get(file), totals_by_file.get(file), uuids, data
            )
            if finding is not None:
                findings.append(finding)
    return findings


def _by_file(fp: Fingerprint, name: str) -> dict[str, Sourced]:
    out: dict[str, Sourced] = {}
    for candidate in fp.candidates.get(name, []):
        out.setdefault(candidate.sourced.source.file, candidate.sourced)
    return out


def _occupied_snapshot(
    scope: str,
    used: Sourced | None,
    procs: Sourced | None,
    totals: Sourced | None,
    uuids: list[str],
    data: CheckData,
) -> Finding | None:
    used_list = used.value if used is not None and isinstance(used.value, list) else []
    total = totals.value if totals is not None and isinstance(totals.value, list) else []
    per_gpu = _processes_by_gpu(procs.value if procs is not None else [], uuids)
    busy: list[str] = []
    all_vllm = True
    keys: list[Any] = sorted(set(range(len(used_list))) | {k for k in per_gpu if isinstance(k, int)})
    keys += [k for k in per_gpu if not isinstance(k, int)]
    for key in keys:
        mib = used_list[key] if isinstance(key, int) and key < len(used_list) else None
        held = per_gpu.get(key, [])
        if not held and (mib is None or mib < data.occupied_min_used_mib):
            continue
        label = f"GPU {key}" if isinstance(key, int) else f"GPU {key or '(index not shown)'}"
        of = f" of {total[key]} MiB" if isinstance(key, int) and key < len(total) and total[key] else ""
        text = f"{label}: {mib} MiB{of} in use" if mib is not None else label
        if held:
            names = ", ".join(_describe(p) for p in held[:4])
            text += f"{',' if mib is not None else ':'} {len(held)} process(es) ({names})"
        busy.append(text)
        all_vllm = all_vllm and bool(held) and all(_is_vllm(p, data) for p in held)
    if not busy:
        return None
    evidence = [s.source for s in (used, procs) if s is not None]
    if all_vllm:
        return Finding(
            "gpu-occupied-by-vllm",
            "info",
            f"{'; '.join(busy)} — held by vLLM's own processes: this {scope} snapshot was taken while the "
            "server ran, not before it started.",
            evidence,
            "For the baseline, capture nvidia-smi before starting the server to see what else uses the GPUs.",
        )
    return Finding(
        "gpu-occupied",
        "warning",
        f"GPU memory is already in use ({scope} nvidia-smi): {'; '.join(busy)}. If this was "
        f"captured before the "
        "server started, another workload shares these GPUs.",
        evidence,
        "Run the trial on idle GPUs (or select other GPUs with --gpus / CUDA_VISIBLE_DEVICES). "
        "vLLM sizes its "
        "KV cache from gpu_memory_utilization × total memory, so memory held by others makes startup fail "
        "or vary between trials.",
    )


def _processes_by_gpu(processes: Any, uuids: list[str]) -> dict[Any, list[dict[str, Any]]]:
    """Compute processes by GPU index; by UUID when the index is not known (compute-apps CSV)."""
    out: dict[Any, list[dict[str, Any]]] = {}
    for process in processes if isinstance(processes, list) else []:
        if not isinstance(process, dict) or str(process.get("type") or "C").upper() == "G":
            continue  # graphics-only processes (a desktop's display) hold little and are not a workload
        key = process.get("gpu")
        if key is None:
            uuid = process.get("gpu_uuid")
            key = uuids.index(uuid) if uuid in uuids else uuid
        out.setdefault(key, []).append(process)
    return out


def _describe(process: dict[str, Any]) -> str:
    mib = process.get("used_mib")
    return f"pid {process.get('pid')} {process.get('name')}" + (f" {mib} MiB" if mib is not None else "")


def _is_vllm(process: dict[str, Any], data: CheckData) -> bool:
    return data.vllm_process is not None and bool(data.vllm_process.search(str(process.get("name") or "")))
