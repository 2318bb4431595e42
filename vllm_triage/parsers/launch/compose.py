"""docker-compose services: image, entrypoint and command, environment, GPUs from
`deploy.resources.reservations.devices` or `gpus:`."""

from __future__ import annotations

import json
import re
from typing import Any

from vllm_triage.parsers.base import ParseResult
from vllm_triage.parsers.launch.analyse import container_command
from vllm_triage.parsers.launch.docker import gpus_from_visible_devices, set_image
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

_COMPOSE_VAR = re.compile(r"\$\{([A-Za-z_]\w*)(?::?-([^}]*))?\}|\$\$")


def _compose_interpolate(text: str, notes: list[str], line: int | None) -> str:
    """Compose substitutes ${VAR} from the host/.env (not visible here): keep the default when
    one is given, else keep the reference as written; `$$` is a literal `$`."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        if match.group(2) is not None:
            notes.append(f"line {line}: ${{{match.group(1)}}} read as its default {match.group(2)!r}")
            return match.group(2)
        return match.group(0)

    return _COMPOSE_VAR.sub(replace, text)


def parse_compose(text: str, file: str) -> ParseResult:
    result = ParseResult(kind=f"{KIND_PREFIX}.compose")
    ctx = Context(file)
    found = []
    for doc in load_yaml(text, ctx.notes):
        found.extend(_compose_services(doc))
    vllm = [
        item
        for item in found
        if mentions_vllm(item[2].get("image"), item[2].get("command"), item[2].get("entrypoint"))
    ]
    if not vllm:
        result.notes.append("no vLLM service found in the compose file")
        result.notes.extend(ctx.notes)
        return result
    # A stack runs vLLM beside its clients (a UI, a proxy) whose commands name the vLLM service:
    # the service that starts the server comes first, then one on a vLLM image, then the rest.
    vllm.sort(key=lambda item: _starts_vllm(item[2]))
    doc, path, service = vllm[0]
    launch = _compose_launch(doc, path, service, ctx)
    emit(launch, result, file)
    for _doc, other_path, _service in vllm[1:]:
        result.notes.append(f"service {other_path[-1]} also runs vLLM; the first one ({path[-1]}) was read")
    result.notes.extend(ctx.notes)
    return result


_VLLM_PROGRAM = re.compile(
    r"""(?:^|[\s/"'\[,])vllm["']?\s*,?\s*["']?serve\b|vllm\.entrypoints\.|vllm/entrypoints/""", re.I
)


def _starts_vllm(service: dict[str, Any]) -> int:
    """0: its entrypoint/command starts vLLM; 1: it runs a vLLM image; 2: it only names vLLM."""
    program = json.dumps([service.get("entrypoint"), service.get("command")], default=str)
    if _VLLM_PROGRAM.search(program):
        return 0
    image = yaml_scalar(service.get("image")).rsplit("/", 1)[-1].lower()
    return 1 if "vllm" in image.split(":", 1)[0] else 2


def _compose_services(doc: YamlDoc) -> list[tuple[YamlDoc, Path, dict[str, Any]]]:
    data = doc.data
    if not isinstance(data, dict):
        return []
    if isinstance(data.get("services"), dict):
        return [
            (doc, ("services", name), svc) for name, svc in data["services"].items() if isinstance(svc, dict)
        ]
    if "image" in data or "command" in data:  # a lone service body
        return [(doc, (), data)]
    return [(doc, (name,), svc) for name, svc in data.items() if isinstance(svc, dict)]


def _compose_launch(doc: YamlDoc, path: Path, service: dict[str, Any], ctx: Context) -> Launch:
    launch = Launch("compose", doc.line((*path, "image")) or doc.line(path) or 1)
    if path:
        launch.notes.append(f"service {path[-1]}")
    _compose_environment(launch, doc, path, service.get("environment"))
    env_files = service.get("env_file")
    if env_files:
        items = env_files if isinstance(env_files, list) else [env_files]
        paths = [item.get("path", "") if isinstance(item, dict) else yaml_scalar(item) for item in items]
        launch.container["env_files"] = Value(paths, doc.line((*path, "env_file")))
    _compose_container(launch, doc, path, service)
    image_text = yaml_scalar(service.get("image")).strip()
    image = Token(_compose_interpolate(image_text, ctx.notes, launch.line), doc.line((*path, "image")))
    if image_text:
        set_image(launch, image)
    elif "build" in service:
        launch.notes.append("the service is built locally (build:), no image reference")

    def expand(text: str, line: int | None) -> str:
        return _compose_interpolate(text, ctx.notes, line)

    entrypoint = command_tokens(doc, (*path, "entrypoint"), service.get("entrypoint"), ctx.notes, expand)
    args = command_tokens(doc, (*path, "command"), service.get("command"), ctx.notes, expand, entrypoint)
    container_command(launch, image, entrypoint, args, ctx, Shell())
    return launch


def _compose_environment(launch: Launch, doc: YamlDoc, path: Path, environment: Any) -> None:
    where = (*path, "environment")
    if isinstance(environment, dict):
        for name, value in environment.items():
            if value is None:
                launch.notes.append(
                    f"environment {name} is passed from the host; its value is not in the file"
                )
            else:
                launch.env[str(name)] = Value(yaml_scalar(value), doc.line((*where, str(name))))
    elif isinstance(environment, list):
        for index, item in enumerate(environment):
            name, eq, value = yaml_scalar(item).partition("=")
            if eq:
                launch.env[name] = Value(value, doc.line((*where, index)))
            else:
                launch.notes.append(
                    f"environment {name} is passed from the host; its value is not in the file"
                )


def _compose_container(launch: Launch, doc: YamlDoc, path: Path, service: dict[str, Any]) -> None:
    gpus = _compose_gpus(service)
    if gpus is not None:
        value, gpu_path = gpus
        launch.container["gpus"] = Value(value, doc.line((*path, *gpu_path)))
    for key, name in (
        ("runtime", "runtime"),
        ("shm_size", "shm_size"),
        ("ipc", "ipc"),
        ("network_mode", "network"),
    ):
        if service.get(key) is not None:
            launch.container[name] = Value(yaml_scalar(service[key]), doc.line((*path, key)))
    volumes = service.get("volumes")
    if isinstance(volumes, list) and volumes:
        items = [
            f"{v.get('source', '')}:{v.get('target', '')}" if isinstance(v, dict) else yaml_scalar(v)
            for v in volumes
        ]
        launch.container["volumes"] = Value(items, doc.line((*path, "volumes", 0)))
    gpus_from_visible_devices(launch)


def _compose_gpus(service: dict[str, Any]) -> tuple[str, Path] | None:
    """deploy.resources.reservations.devices (count / device_ids), or the newer `gpus:` key."""
    devices = dig(service, "deploy", "resources", "reservations", "devices")
    if isinstance(devices, list):
        for index, device in enumerate(devices):
            if not isinstance(device, dict):
                continue
            base: Path = ("deploy", "resources", "reservations", "devices", index)
            if device.get("device_ids") is not None:
                ids = device["device_ids"]
                text = ",".join(yaml_scalar(i) for i in ids) if isinstance(ids, list) else yaml_scalar(ids)
                # docker's own spelling: a bare "0" would read as a GPU count, not GPU 0
                return f"device={text}", (*base, "device_ids")
            if device.get("count") is not None:
                return yaml_scalar(device["count"]), (*base, "count")
            if "gpu" in json.dumps(device.get("capabilities", [])):
                return "all", base  # capabilities [gpu] with neither count nor ids: all GPUs
    for index, device in enumerate(items_of(service.get("devices"))):
        if "nvidia.com/gpu" in yaml_scalar(device):  # CDI device names, as with --device
            return yaml_scalar(device), ("devices", index)
    gpus = service.get("gpus")
    if gpus is not None:
        return (yaml_scalar(gpus) if not isinstance(gpus, list) else json.dumps(gpus)), ("gpus",)
    return None
