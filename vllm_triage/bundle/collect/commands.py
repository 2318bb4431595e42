"""The exact command that collects a missing item, for the scene the bundle came from.

A bundle says where the server ran: bundle.toml's `[run]` (written by `vllm-triage collect`:
container, runtime, pod, namespace), else docker inspect's container name and the launch
command's launcher. The commands of rules/checklist.toml are filled for that scene, so a person can
paste them as they are; a value the bundle does not know stays a visible `<container>`.
"""

from __future__ import annotations

from dataclasses import dataclass

from vllm_triage.bundle.trials import Trial
from vllm_triage.core.roles import Role
from vllm_triage.parsers.launch import launchers

_CONTAINER_LAUNCHERS = launchers.CONTAINER_RUNTIME
_HOST_LAUNCHERS = launchers.ON_A_HOST
# Where a command runs, in the order they are offered for each kind of scene.
_PLACES = {
    "container": ("container", "log", "host", "manifest", "method"),
    "pod": ("pod", "log", "host", "manifest", "method"),
    "host": ("host", "log", "manifest", "method"),
    "unknown": ("container", "host", "log", "manifest", "method"),
}


@dataclass(frozen=True)
class Scene:
    kind: str  # container | pod | host | unknown
    runtime: str = "docker"
    container: str | None = None
    pod: str | None = None
    namespace: str | None = None
    model: str | None = None

    @property
    def tokens(self) -> dict[str, str]:
        container = self.container or "<container>"
        pod = self.pod or "<pod>"
        ns = f" -n {self.namespace}" if self.namespace else ""
        if self.kind == "pod":
            execute = f"kubectl exec {pod}{ns} --"
            logs = (
                f"kubectl logs {pod}{ns} --timestamps --all-containers > vllm.log   # "
                f"--previous after a restart"
            )
        else:
            execute = f"{self.runtime} exec {container}"
            logs = (
                f"{self.runtime} logs -t {container} > vllm.log 2>&1"
                if self.kind in ("container", "unknown")
                else "journalctl -u <unit> -o short-iso --no-pager > vllm.log   # or the server's "
                "stdout+stderr from its start"
            )
        return {
            "{runtime}": self.runtime,
            "{container}": container,
            "{pod}": pod,
            "{ns}": ns,
            "{exec}": execute,
            "{logs}": logs,
            "{model}": self.model or "<model>",
        }

    def fill(self, template: str) -> str:
        # Plain replacement, not str.format: docker's Go templates ({{.Image}}) stay as they are.
        text = template
        for token, value in self.tokens.items():
            text = text.replace(token, value)
        return text

    def places(self) -> tuple[str, ...]:
        return _PLACES[self.kind]

    @property
    def target(self) -> str:
        """The `vllm-triage collect` option naming this scene."""
        if self.kind == "pod":
            ns = f" --namespace {self.namespace}" if self.namespace else ""
            return f"--pod {self.pod or '<pod>'}{ns}"
        if self.kind in ("container", "unknown"):
            return f"--container {self.container or '<container>'}"
        return ""


def scene_of(trial: Trial) -> Scene:
    run = trial.manifest
    fp = trial.fingerprint
    model = fp.value("arg.served_model_name") or fp.value("arg.model") or fp.value("engine.model")
    if isinstance(model, list):
        model = model[0] if model else None
    model = str(model) if model else None
    if run.get("pod"):
        return Scene("pod", "kubectl", pod=str(run["pod"]), namespace=_opt(run.get("namespace")), model=model)
    name = _opt(run.get("container")) or _opt(fp.value("container.name"))
    runtime = _opt(run.get("runtime"))
    launcher = str(fp.value("launcher") or "")
    if launcher in launchers.IN_A_POD:
        return Scene("pod", "kubectl", model=model)
    if name or runtime or launcher in _CONTAINER_LAUNCHERS or trial.of_role(Role.CONTAINER_INSPECT):
        return Scene(
            "container", runtime or _CONTAINER_LAUNCHERS.get(launcher, "docker"), container=name, model=model
        )
    if launcher in _HOST_LAUNCHERS:
        return Scene("host", model=model)
    return Scene("unknown", model=model)


def _opt(value: object) -> str | None:
    return str(value) if value not in (None, "") else None
