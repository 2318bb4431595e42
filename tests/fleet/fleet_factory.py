"""Synthetic fleets for the fleet tests and benchmarks/bench_fleet.py.

Bundles are built from our own templates (tests/fixtures/fleet/), varied deterministically by index
over scenarios (phases), vLLM versions, drivers, GPUs, images and nodes, so a test can say what
every run must come out as.
"""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from string import Template

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "fleet"


@dataclass(frozen=True)
class Scenario:
    name: str
    parts: tuple[str, ...]
    phase: str
    category: str | None


SCENARIOS = (
    Scenario("healthy", ("head.log", "tail-healthy.log"), "none", None),
    Scenario("kv-cache", ("head.log", "tail-kv-cache.log"), "engine_reserve", "max_seq_len_exceeds_kv_cache"),
    Scenario("nccl", ("head.log", "tail-nccl.log"), "cuda_init", "nccl_init_failed"),
    Scenario("weights-corrupt", ("head.log", "tail-weights-corrupt.log"), "weight_load", "weights_corrupt"),
    Scenario("illegal-access", ("head.log", "tail-illegal-access.log"), "request", "illegal_memory_access"),
    Scenario("bf16", ("head.log", "tail-bf16.log"), "config", "dtype_unsupported_on_gpu"),
    Scenario("hang-weights", ("head.log", "tail-hang-weights.log"), "weight_load", "hang"),
    Scenario("no-platform", ("full-no-platform.log",), "container", "no_platform_detected"),
)
# Appears only in the last runs of a fleet: the "new signature since" case.
LATE = Scenario(
    "trust-remote-code", ("full-trust-remote-code.log",), "weight_load", "trust_remote_code_required"
)

VERSIONS = ("0.8.5", "0.9.2", "0.10.1", "0.10.2", "0.11.0")
DRIVERS = (("535.154.05", "12.2"), ("550.54.15", "12.4"), ("570.124.06", "12.8"), ("575.57.08", "12.9"))
GPUS = ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA L40S")
NODES = ("gpu-a01", "gpu-b02", "gpu-c03", "gpu-d04", "gpu-e05")
START = datetime(2026, 10, 1, 8, 0, tzinfo=timezone.utc)
LATE_RUNS = 5


@dataclass(frozen=True)
class BundleSpec:
    index: int
    path: Path
    label: str
    scenario: Scenario
    version: str
    node: str
    driver: str
    gpu: str
    image: str
    started: datetime


def _template(name: str) -> Template:
    return Template((TEMPLATES / f"{name}.tmpl").read_text(encoding="utf-8"))


def spec_for(index: int, total: int, root: Path, archive_every: int = 7) -> BundleSpec:
    scenario = LATE if index >= total - LATE_RUNS else SCENARIOS[index % len(SCENARIOS)]
    # bf16 alternates across the fix (0.9.0) so the version gating is exercised both ways.
    version = (
        ("0.8.5", "0.9.2")[(index // len(SCENARIOS)) % 2] if scenario.name == "bf16" else VERSIONS[index % 5]
    )
    node = NODES[(index * 3) % len(NODES)]
    driver = DRIVERS[index % len(DRIVERS)][0]
    image = f"vllm/vllm-openai:v{version}"
    if index % 4 == 0:
        image += "@sha256:" + f"{index:02x}" * 32
    label = f"run-{index:04d}-{scenario.name}"
    archived = archive_every and index % archive_every == archive_every - 1
    path = root / node / (f"{label}.tar.gz" if archived else label)
    return BundleSpec(
        index,
        path,
        label,
        scenario,
        version,
        node,
        driver,
        GPUS[index % len(GPUS)],
        image,
        START + timedelta(hours=6 * index),
    )


def bundle_files(spec: BundleSpec) -> dict[str, str]:
    """The bundle's files (name → text)."""
    driver, cuda = next(d for d in DRIVERS if d[0] == spec.driver)
    when = spec.started
    values = {
        "version": spec.version,
        "model": "meta-llama/Llama-3.1-70B-Instruct" if spec.index % 2 else "Qwen/Qwen2.5-7B-Instruct",
        "max_len": 32768,
        "tp": 2,
        "kv_need": "10.00",
        "label": spec.label,
        "driver": driver,
        "cuda_version": cuda,
        "gpu_name": spec.gpu,
        "image": spec.image,
        "image_cuda": "12.8.1" if spec.version >= "0.9" else "12.4.1",
        "image_id": f"{spec.index:064x}",
        "container_id": f"{spec.index + 1:064x}",
        "exit_code": 0 if spec.scenario.name == "healthy" else 1,
        "started": when.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "md": when.strftime("%m-%d"),
        **{f"t{k}": (when + timedelta(seconds=20 * k)).strftime("%H:%M:%S") for k in range(5)},
    }
    log = "".join(_template(part).substitute(values) for part in spec.scenario.parts)
    manifest = (
        f'[run]\nlabel = "{spec.label}"\nnode = "{spec.node}"\nstarted = "{when.isoformat()}"\n\n'
        '[[file]]\npath = "vllm.log"\nrole = "vllm_log"\n\n'
        '[[file]]\npath = "nvidia-smi-host.txt"\nrole = "nvidia_smi.host"\n\n'
        '[[file]]\npath = "docker-inspect.json"\nrole = "container_inspect"\n'
    )
    return {
        "bundle.toml": manifest,
        "vllm.log": log,
        "nvidia-smi-host.txt": _template("nvidia-smi-host.txt").substitute(values),
        "docker-inspect.json": _template("docker-inspect.json").substitute(values),
    }


def write_bundle(spec: BundleSpec) -> Path:
    files = bundle_files(spec)
    spec.path.parent.mkdir(parents=True, exist_ok=True)
    if spec.path.name.endswith(".tar.gz"):
        with tarfile.open(spec.path, "w:gz") as tar:
            for name, text in files.items():
                data = text.encode("utf-8")
                info = tarfile.TarInfo(f"{spec.label}/{name}")
                info.size, info.mtime = len(data), int(spec.started.timestamp())
                tar.addfile(info, io.BytesIO(data))
    else:
        spec.path.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (spec.path / name).write_text(text, encoding="utf-8")
    return spec.path


# How many bundles the session's fleet holds (the issue asks for at least 50).
FLEET_SIZE = 54


def make_fleet(root: Path, count: int, archive_every: int = 7) -> list[BundleSpec]:
    specs = [spec_for(i, count, root, archive_every) for i in range(count)]
    for spec in specs:
        write_bundle(spec)
    return specs


def write_corrupt_archive(path: Path) -> Path:
    """A .tar.gz cut in the middle, as an interrupted copy leaves it."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = b"INFO 10-01 08:00:00 [api_server.py:1] vLLM API server version 0.10.2\n" * 2000
        info = tarfile.TarInfo("broken/vllm.log")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    blob = buffer.getvalue()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(blob[: len(blob) // 2])
    return path
