"""Kubernetes container specs (Pod, Deployment, StatefulSet, Job …): image, command/args,
env, GPU resources, /dev/shm volumes."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from vllm_triage.parsers.base import ParseResult
from vllm_triage.parsers.launch.analyse import container_command
from vllm_triage.parsers.launch.docker import set_image
from vllm_triage.parsers.launch.lexer import Token
from vllm_triage.parsers.launch.model import KIND_PREFIX, Context, Launch, Shell, Value, emit
from vllm_triage.parsers.launch.yaml_doc import (
    Path,
    YamlDoc,
    command_tokens,
    dig,
    items_of,
    load_yaml,
    mentions_vllm,
    yaml_scalar,
)


def parse_kubernetes(text: str, file: str) -> ParseResult:
    result = ParseResult(kind=f"{KIND_PREFIX}.kubernetes")
    ctx = Context(file)
    candidates = []
    for doc in load_yaml(text, ctx.notes):
        for pod_path, pod, container_path, container in containers_in(doc.data):
            if mentions_vllm(container.get("image"), container.get("command"), container.get("args")):
                candidates.append((doc, pod_path, pod, container_path, container))
    if not candidates:
        result.notes.append("no vLLM container found in the Kubernetes spec")
        result.notes.extend(ctx.notes)
        return result
    doc, pod_path, pod, container_path, container = candidates[0]
    launch = _k8s_launch(doc, pod_path, pod, container_path, container, ctx)
    emit(launch, result, file)
    for other in candidates[1:]:
        result.notes.append(f"container {other[4].get('name')} also runs vLLM; the first one was read")
    result.notes.extend(ctx.notes)
    return result


def containers_in(data: Any) -> Iterable[tuple[Path, dict[str, Any], Path, dict[str, Any]]]:
    """(pod path, pod, container path, container) for every container in a document; a fragment
    is read for what it holds: a bare `- name: … image: …` list, or one container mapping."""
    if isinstance(data, list) and any(isinstance(item, dict) and "image" in item for item in data):
        for index, item in enumerate(data):
            if isinstance(item, dict):
                yield (), {}, (index,), item
        return
    if isinstance(data, dict) and "image" in data and "containers" not in data and _container_keys(data):
        yield (), {}, (), data
        return
    if isinstance(data, dict) and set(data) <= {"args", "command"} and data:
        yield (), {}, (), data  # one container's argument list pasted alone
        return
    for pod_path, pod in _pod_specs(data, ()):
        for index, container in enumerate(items_of(pod.get("containers"))):
            if isinstance(container, dict):
                yield pod_path, pod, (*pod_path, "containers", index), container


def _container_keys(data: dict[str, Any]) -> bool:
    """Keys a Kubernetes container has and a compose service has not."""
    env = data.get("env")
    return any(key in data for key in ("args", "volumeMounts", "resources", "imagePullPolicy")) or (
        isinstance(env, list) and any(isinstance(item, dict) and "name" in item for item in env)
    )


def _pod_specs(data: Any, path: Path) -> Iterable[tuple[Path, dict[str, Any]]]:
    """Every mapping holding `containers:` (Pod, Deployment, StatefulSet, Job, LeaderWorkerSet…)."""
    if isinstance(data, dict):
        if isinstance(data.get("containers"), list):
            yield path, data
        for key, value in data.items():
            if key != "containers":
                yield from _pod_specs(value, (*path, key))
    elif isinstance(data, list):
        for index, item in enumerate(data):
            yield from _pod_specs(item, (*path, index))


_K8S_VAR = re.compile(r"\$\(([A-Za-z_]\w*)\)")


def _k8s_launch(
    doc: YamlDoc, pod_path: Path, pod: dict[str, Any], path: Path, container: dict[str, Any], ctx: Context
) -> Launch:
    launch = Launch("kubernetes", doc.line((*path, "image")) or doc.line(path))
    if container.get("name"):
        launch.notes.append(f"container {container['name']}")
    k8s_env(launch, doc, path, container)
    _k8s_resources(launch, doc, path, pod_path, pod, container)
    image = Token(yaml_scalar(container.get("image")).strip(), doc.line((*path, "image")))
    if image.text:
        set_image(launch, image)

    def expand(text: str, line: int | None) -> str:
        # Kubernetes expands $(VAR) in command/args from the container's own env.
        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in launch.env:
                return match.group(0)
            ctx.notes.append(
                f"line {line}: $({name}) expanded from the container env (line {launch.env[name].line})"
            )
            return str(launch.env[name].value)

        return _K8S_VAR.sub(replace, text)

    entrypoint = command_tokens(doc, (*path, "command"), container.get("command"), ctx.notes, expand)
    args = command_tokens(doc, (*path, "args"), container.get("args"), ctx.notes, expand, entrypoint)
    container_command(launch, image, entrypoint, args, ctx, Shell())
    return launch


def k8s_env(launch: Launch, doc: YamlDoc, path: Path, container: dict[str, Any]) -> None:
    for index, item in enumerate(items_of(container.get("env"))):
        if not isinstance(item, dict) or "name" not in item:
            continue
        line = doc.line((*path, "env", index, "value")) or doc.line((*path, "env", index))
        if "value" in item:
            launch.env[str(item["name"])] = Value(yaml_scalar(item["value"]), line)
        elif "valueFrom" in item:
            source = json.dumps(item["valueFrom"], default=str)
            launch.notes.append(f"line {line}: env {item['name']} comes from {source}; value not in the spec")
    for item in items_of(container.get("envFrom")):
        if isinstance(item, dict):
            launch.notes.append(
                f"envFrom {json.dumps(item, default=str)}: those variables are not in the spec"
            )


def _k8s_resources(
    launch: Launch, doc: YamlDoc, path: Path, pod_path: Path, pod: dict[str, Any], container: dict[str, Any]
) -> None:
    for section in ("limits", "requests"):
        amounts = dig(container, "resources", section)
        for key, value in amounts.items() if isinstance(amounts, dict) else ():
            if str(key).endswith("/gpu") and "gpus" not in launch.container:
                launch.container["gpus"] = Value(
                    yaml_scalar(value), doc.line((*path, "resources", section, key)), f"{key} {section[:-1]}"
                )
    if pod.get("runtimeClassName"):
        launch.container["runtime"] = Value(
            yaml_scalar(pod["runtimeClassName"]), doc.line((*pod_path, "runtimeClassName"))
        )
    if pod.get("hostIPC"):
        launch.container["ipc"] = Value("host", doc.line((*pod_path, "hostIPC")))
    if pod.get("hostNetwork"):
        launch.container["network"] = Value("host", doc.line((*pod_path, "hostNetwork")))
    _k8s_volumes(launch, doc, path, pod_path, pod, container)


def _k8s_volumes(
    launch: Launch, doc: YamlDoc, path: Path, pod_path: Path, pod: dict[str, Any], container: dict[str, Any]
) -> None:
    volumes = {
        v.get("name"): (i, v) for i, v in enumerate(items_of(pod.get("volumes"))) if isinstance(v, dict)
    }
    mounts = [m for m in items_of(container.get("volumeMounts")) if isinstance(m, dict)]
    if mounts:
        launch.container["volumes"] = Value(
            [f"{m.get('name')}:{m.get('mountPath')}" for m in mounts], doc.line((*path, "volumeMounts", 0))
        )
    for mount in mounts:
        if mount.get("mountPath") != "/dev/shm" or mount.get("name") not in volumes:
            continue
        index, volume = volumes[mount["name"]]
        empty_dir = volume.get("emptyDir")
        empty_dir = empty_dir if isinstance(empty_dir, dict) else {}
        size = empty_dir.get("sizeLimit")
        line = doc.line((*pod_path, "volumes", index, "emptyDir"))
        launch.container["shm_size"] = Value(
            yaml_scalar(size) if size else "memory", line, "emptyDir (medium Memory) mounted at /dev/shm"
        )
