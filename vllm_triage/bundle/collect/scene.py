"""What `collect` captures, step by step, and the manifest that describes it.

Layout of a collected bundle (roles in bundle.toml):

    bundle.toml                          the manifest: [run], [[file]] path/role, [[step]]
    host/nvidia-smi.txt                  nvidia_smi.host   (also -L, topo -m, -q, driver version)
    container/inspect.json               container_inspect (docker/podman inspect)
    container/image-inspect.json         container_inspect (the image that actually ran: RepoDigests)
    container/nvidia-smi.txt             nvidia_smi.container
    container/collect-env.txt            collect_env
    container/vllm.log                   vllm_log          (docker logs -t, stdout and stderr)
    pod/pod.json, pod/describe.txt,      container_inspect, unknown,
    pod/vllm.log, pod/vllm-previous.log  vllm_log (kubectl logs --timestamps --all-containers [--previous])
    pod/nvidia-smi.txt, pod/collect-env.txt
    logs/<name>                          vllm_log          (--log FILE: a server log not in a container)
    journal/<unit>.log                   vllm_log          (--journal UNIT: journalctl -u UNIT
                                                             -o short-iso-precise)
    launch-command.sh                    launch_command    (what followed `--`, recorded, never run)
    environment.env                      environment       (the environment collect ran in)
    steps/<step>.stderr.txt              unknown           (what a step printed on stderr)
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from vllm_triage import __version__
from vllm_triage.bundle.collect import manifest
from vllm_triage.bundle.collect.run import DEFAULT_TIMEOUT_S, Collector, CollectResult, Host, Step
from vllm_triage.bundle.layout import prepare_out_dir
from vllm_triage.ingest.manifest import MANIFEST_NAME

COLLECT_ENV_COMMANDS = (["vllm", "collect-env"], ["python3", "-m", "vllm.collect_env"])
HEADER = (
    "Captured by vllm-triage collect: what the tools printed, secrets included.\n"
    "Run `vllm-triage redact THIS_FOLDER --out SHARE_FOLDER` before sending it to anyone."
)


def _utc(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class Request:
    out: str
    container: str | None = None
    pod: str | None = None
    namespace: str | None = None
    runtime: str | None = None  # docker | podman; None: docker, else podman
    timeout: float = DEFAULT_TIMEOUT_S
    launch: list[str] = field(default_factory=list)
    label: str | None = None
    force: bool = False
    logs: list[str] = field(default_factory=list)  # --log FILE: a `vllm serve` log outside a container
    journals: list[str] = field(default_factory=list)  # --journal UNIT: a systemd unit's journal


def collect(request: Request, host: Host | None = None) -> CollectResult:
    host = host or Host()
    root = prepare_out_dir(request.out, [], request.force)
    captured = host.now()
    collector = Collector(root, request.timeout, host)
    collector_name = host.hostname()
    run: dict = {
        "label": request.label,
        "node": collector_name,
        "collector": collector_name,
        "captured": _utc(captured),
        "tool": f"vllm-triage {__version__}",
        "timeout_s": request.timeout,
    }
    _host_steps(collector, host)
    if request.container:
        run.update(_container_steps(collector, host, request.container, request.runtime))
    elif request.pod:
        run.update(_pod_steps(collector, request.pod, request.namespace))
    _log_steps(collector, request)
    if request.launch:
        collector.record(
            "launch-command",
            "recorded from the arguments after --, not run",
            "launch-command.sh",
            "launch_command",
            f"# recorded by vllm-triage collect at {_utc(captured)} (not "
            f"run)\n{shlex.join(request.launch)}\n",
        )
    collector.record(
        "environment",
        "recorded from the environment collect ran in",
        "environment.env",
        "environment",
        "".join(f"{name}={value}\n" for name, value in sorted(host.environ.items())),
    )
    target = request.container or request.pod or "host"
    run["label"] = request.label or f"{target}-{captured.strftime('%Y%m%dT%H%M%SZ')}"
    run["finished"] = _utc(host.now())
    result = collector.result
    result.run = run
    result.required_failed = required_failures(result.steps, request)
    text = manifest.dumps(run, result.files, [s.to_manifest() for s in result.steps], header=HEADER)
    collector.write_text(MANIFEST_NAME, text)
    return result


def _log_steps(collector: Collector, request: Request) -> None:
    used: set[str] = set()
    for given in request.logs:
        name = Path(given).name or "vllm.log"
        while name in used:  # two logs of the same name from different folders
            name = f"_{name}"
        used.add(name)
        collector.read(f"log.{name}", Path(given), f"logs/{name}", "vllm_log")
    for unit in request.journals:
        collector.run(
            f"journal.{unit}",
            ["journalctl", "-u", unit, "-o", "short-iso-precise", "--no-pager"],
            f"journal/{unit.replace('/', '_')}.log",
            "vllm_log",
        )


def required_failures(steps: list[Step], request: Request) -> list[Step]:
    """The steps a bundle cannot do without that did not succeed: the host's nvidia-smi, and the
    server log of every source named (for a pod, the current or the previous container's log)."""
    by_name = {step.name: step for step in steps}
    groups: list[list[str]] = [["host.nvidia-smi"]]
    if request.container:
        groups.append(["container.logs"])
    if request.pod:
        groups.append(["pod.logs", "pod.logs-previous"])
    groups.extend([name] for name in by_name if name.startswith(("log.", "journal.")))
    failed = []
    for group in groups:
        present = [by_name[n] for n in group if n in by_name]
        if present and not any(step.status == "ok" for step in present):
            failed.append(present[0])
    return failed


def _host_steps(collector: Collector, host: Host) -> None:
    # nvidia-smi's own error text ("couldn't communicate with the NVIDIA driver") is evidence.
    for name, argv, output in (
        ("host.nvidia-smi", ["nvidia-smi"], "host/nvidia-smi.txt"),
        ("host.nvidia-smi-L", ["nvidia-smi", "-L"], "host/nvidia-smi-L.txt"),
        ("host.nvidia-smi-topo", ["nvidia-smi", "topo", "-m"], "host/nvidia-smi-topo-m.txt"),
        ("host.nvidia-smi-q", ["nvidia-smi", "-q"], "host/nvidia-smi-q.txt"),
    ):
        collector.run(name, argv, output, "nvidia_smi.host", keep_failed_output=True)
    collector.read(
        "host.driver-version",
        host.proc_driver_version,
        "host/proc-driver-nvidia-version.txt",
        "nvidia_smi.host",
    )


def _container_steps(collector: Collector, host: Host, container: str, runtime: str | None) -> dict:
    chosen = runtime or ("docker" if host.which("docker") or not host.which("podman") else "podman")
    inspect = collector.run(
        "container.inspect", [chosen, "inspect", container], "container/inspect.json", "container_inspect"
    )
    details = _first_json_object(collector.root / "container/inspect.json") if inspect.status == "ok" else {}
    # The image ID (not the tag) names what actually ran: the tag may point elsewhere since.
    image = details.get("Image") or (details.get("Config") or {}).get("Image") or details.get("ImageName")
    if image:
        collector.run(
            "container.image-inspect",
            [chosen, "image", "inspect", str(image)],
            "container/image-inspect.json",
            "container_inspect",
        )
    else:
        status = "missing" if inspect.status == "missing" else "failed"
        reason = inspect.reason if status == "missing" else f"no image known: `{inspect.command}` gave none"
        collector.result.steps.append(
            Step("container.image-inspect", f"{chosen} image inspect", status, None, 0.0, reason)
        )
    collector.run(
        "container.nvidia-smi",
        [chosen, "exec", container, "nvidia-smi"],
        "container/nvidia-smi.txt",
        "nvidia_smi.container",
        keep_failed_output=True,
    )
    collector.run_with_fallback(
        "container.collect-env",
        [[chosen, "exec", container, *c] for c in COLLECT_ENV_COMMANDS],
        "container/collect-env.txt",
        "collect_env",
    )
    collector.run(
        "container.logs",
        [chosen, "logs", "-t", container],
        "container/vllm.log",
        "vllm_log",
        merge_stderr=True,
    )
    state = details.get("State") or {}
    return {"container": container, "runtime": chosen, "started": state.get("StartedAt") or None}


def _pod_steps(collector: Collector, pod: str, namespace: str | None) -> dict:
    ns = ["-n", namespace] if namespace else []
    got = collector.run(
        "pod.get", ["kubectl", "get", "pod", pod, *ns, "-o", "json"], "pod/pod.json", "container_inspect"
    )
    collector.run("pod.describe", ["kubectl", "describe", "pod", pod, *ns], "pod/describe.txt", "unknown")
    logs = ["kubectl", "logs", pod, *ns, "--timestamps", "--all-containers"]
    collector.run("pod.logs", logs, "pod/vllm.log", "vllm_log")
    # A pod that crash-looped holds the failure in the previous container's log, not the current one.
    collector.run("pod.logs-previous", [*logs, "--previous"], "pod/vllm-previous.log", "vllm_log")
    collector.run(
        "pod.nvidia-smi",
        ["kubectl", "exec", pod, *ns, "--", "nvidia-smi"],
        "pod/nvidia-smi.txt",
        "nvidia_smi.container",
        keep_failed_output=True,
    )
    collector.run_with_fallback(
        "pod.collect-env",
        [["kubectl", "exec", pod, *ns, "--", *c] for c in COLLECT_ENV_COMMANDS],
        "pod/collect-env.txt",
        "collect_env",
    )
    details = _first_json_object(collector.root / "pod/pod.json") if got.status == "ok" else {}
    spec, status = details.get("spec") or {}, details.get("status") or {}
    run = {"pod": pod, "namespace": namespace, "started": status.get("startTime") or None}
    if spec.get("nodeName"):
        run["node"] = spec["nodeName"]  # the failing node is the pod's, not the one kubectl ran on
    return run


def _first_json_object(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return {}
    if isinstance(data, list):
        data = data[0] if data else {}
    return data if isinstance(data, dict) else {}
