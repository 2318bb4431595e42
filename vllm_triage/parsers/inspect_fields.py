"""The fingerprint names read from docker/podman inspect records (reference: vllm-anatomy.md
§5.1, §7.1, §4.7 end): `Config.Image` is the reference the container was created from, the
top-level `Image` the image ID; `Config.Env` holds the image's and the user's variables;
`Path`+`Args` is what ran (read by the one argv reader of parsers/launch/argv.py);
`State.ExitCode` 137 with `OOMKilled` is the cgroup memory limit, without it a SIGKILL from outside.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from vllm_triage.core.finding import Finding
from vllm_triage.core.provenance import Sourced
from vllm_triage.parsers.base import ParseResult
from vllm_triage.parsers.launch.argv import read_argv, split_command
from vllm_triage.parsers.tolerant_json import MAX_DEPTH, Node


@dataclass
class Remapper:
    numbers: list[int]

    def __call__(self, line: int) -> int | None:
        if 1 <= line <= len(self.numbers):
            return self.numbers[line - 1]
        return None


def node_keys(node: Node) -> set[str]:
    return set(node.value) if isinstance(node.value, dict) else set()


def is_env_list(node: Node) -> bool:
    items = node.value if isinstance(node.value, list) else []
    return bool(items) and all(isinstance(item.value, str) and _ENV_ITEM.match(item.value) for item in items)


_ENV_ITEM = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


_SHA_ID = re.compile(r"^(?:sha256:)?[0-9a-f]{64}$")


_ZERO_TIME = "0001-01-01T00:00:00Z"


# Image-baked variables that describe the image itself (vllm-anatomy.md §7.1).
_IMAGE_ENV_FACTS = {
    "CUDA_VERSION": "image.cuda_version",
    "NVIDIA_REQUIRE_CUDA": "image.nvidia_require_cuda",
    "NCCL_VERSION": "image.nccl_version",
    "VLLM_BUILD_COMMIT": "image.vllm_build_commit",
    "VLLM_BUILD_PIPELINE": "image.vllm_build_pipeline",
    "VLLM_USAGE_SOURCE": "image.vllm_usage_source",
}


_IMAGE_LABEL_FACTS = {
    "ai.vllm.build.commit": "image.vllm_build_commit",
    "ai.vllm.build.pipeline": "image.vllm_build_pipeline",
    "ai.vllm.image.tag": "image.tag_label",
    "org.opencontainers.image.version": "image.version_label",
    "org.opencontainers.image.revision": "image.revision_label",
}


class Extractor:
    """Turns inspect records into the fingerprint's names; the first value read for a name wins,
    so the container's own fields beat those of an image record pasted next to it."""

    def __init__(self, result: ParseResult, file: str, remap: Remapper) -> None:
        self.result = result
        self.file = file
        self.remap = remap
        self.argv: tuple[list[str], list[int]] | None = None
        self.entrypoint: Node | None = None
        self.cmd: Node | None = None
        self.runtime: str | None = None

    # -- output helpers
    def knob(self, name: str, value: Any, node: Node, note: str | None = None) -> None:
        if name not in self.result.knobs:
            self.result.knob(name, value, self.file, self.remap(node.line), note)

    def fact(self, name: str, value: Any, node: Node, note: str | None = None) -> None:
        if name not in self.result.facts:
            self.result.fact(name, value, self.file, self.remap(node.line), note)

    # -- records
    def container(self, record: Node) -> None:
        self._image_fields(record, top_level=True)
        self._mounts(record.get("Mounts"))  # before HostConfig.Binds: it also names volumes
        config = record.get("Config")
        if config is not None:
            self._config(config)
        host = record.get("HostConfig")
        if host is not None:
            self._host_config(host)
        else:
            # An elision (`.....` for the middle) hides HostConfig's opening line, so its fields
            # read as members of whatever object was open (State): DeviceRequests is HostConfig's
            # alone and is taken by its name wherever it landed.
            self._device_requests(_find_key(record, "DeviceRequests"))
        state = record.get("State")
        if state is not None:
            self._state(state)
        self._identity(record)
        self._ran(record)

    def image(self, record: Node) -> None:
        identifier = record.get("Id")
        if identifier is not None and isinstance(identifier.value, str) and _SHA_ID.match(identifier.value):
            self.knob("image.id", _image_id(identifier.value), identifier)
        tags = record.get("RepoTags")
        if tags is not None and isinstance(tags.value, list) and tags.value:
            first = tags.value[0]
            if isinstance(first.value, str):
                self.knob("image.ref", first.value, first)
        self._repo_digests(record.get("RepoDigests"))
        config = record.get("Config")
        if config is not None:
            self._image_config(config)

    def piece(self, node: Node) -> None:
        """A jq-filtered fragment: read each field by its own name, wherever it sits."""
        if isinstance(node.value, list):
            if is_env_list(node):
                self._env(node)
                return
            if any(node_keys(item) & {"Driver", "Count", "DeviceIDs", "Capabilities"} for item in node.value):
                self._device_requests(node)
                return
            if any("Destination" in node_keys(item) for item in node.value):
                self._mounts(node)
                return
            for item in node.value:
                if isinstance(item.value, dict):
                    self.piece(item)
            return
        self._image_fields(node, top_level=False)
        self._config(node.get("Config") or node)
        self._host_config(node.get("HostConfig") or node)
        self._state(node.get("State") or node)
        self._identity(node)
        self._mounts(node.get("Mounts"))
        self._ran(node)

    # -- field groups
    def _image_fields(self, record: Node, top_level: bool) -> None:
        image = record.get("Image")
        if image is not None and isinstance(image.value, str) and image.value:
            # The container's top-level "Image" is the ID; a jq piece's "Image" may be either.
            if _SHA_ID.match(image.value):
                self.knob("image.id", _image_id(image.value), image)
            elif not top_level:
                self._image_ref(image)
        name = record.get("ImageName")  # podman: the reference the container was created from
        if name is not None and isinstance(name.value, str) and name.value:
            self._image_ref(name)
        digest = record.get("ImageDigest")  # podman
        if digest is not None and isinstance(digest.value, str) and digest.value.startswith("sha256:"):
            self.knob("image.digest", digest.value, digest)
        self._repo_digests(record.get("RepoDigests"))

    def _image_ref(self, node: Node) -> None:
        reference = str(node.value)
        if _SHA_ID.match(reference):
            self.knob("image.id", _image_id(reference), node)
            return
        self.knob("image.ref", reference, node)
        if "@sha256:" in reference:
            self.knob("image.digest", reference.split("@", 1)[1], node, note=f"from {reference}")

    def _repo_digests(self, node: Node | None) -> None:
        if node is None or not isinstance(node.value, list):
            return
        digests = [item for item in node.value if isinstance(item.value, str) and "@sha256:" in item.value]
        if not digests:
            return
        reference = self.result.knobs.get("image.ref")
        repository = _repository(str(reference.value)) if reference else None
        chosen = next((d for d in digests if _repository(d.value) == repository), digests[0])
        self.knob(
            "image.digest", chosen.value.split("@", 1)[1], chosen, note=f"from RepoDigests {chosen.value}"
        )

    def _image_config(self, config: Node) -> None:
        """An image's own Config holds its defaults, not a container's settings: image facts."""
        env = config.get("Env")
        for item in env.value if env is not None and isinstance(env.value, list) else []:
            name, _, value = str(item.value).partition("=")
            if name in _IMAGE_ENV_FACTS:
                self.fact(_IMAGE_ENV_FACTS[name], value, item)
        for key, name in (("Entrypoint", "image.entrypoint"), ("Cmd", "image.cmd")):
            node = config.get(key)
            if node is not None and node.value not in (None, "", []):
                self.fact(name, _string_list(node.value, split=key == "Entrypoint"), node)
        self._labels(config.get("Labels"))

    def _labels(self, labels: Node | None) -> None:
        if labels is not None and isinstance(labels.value, dict):
            for label, name in _IMAGE_LABEL_FACTS.items():
                node = labels.value.get(label)
                if node is not None and isinstance(node.value, str) and node.value:
                    self.fact(name, node.value, node)

    def _config(self, config: Node) -> None:
        image = config.get("Image")
        if image is not None and isinstance(image.value, str) and image.value:
            self._image_ref(image)
        self._env(config.get("Env"))
        entrypoint = config.get("Entrypoint")
        if entrypoint is not None and entrypoint.value not in (None, "", []):
            self.entrypoint = self.entrypoint or entrypoint
            self.knob("container.entrypoint", _string_list(entrypoint.value, split=True), entrypoint)
        cmd = config.get("Cmd")
        if cmd is not None and cmd.value not in (None, "", []):
            self.cmd = self.cmd or cmd
            self.knob("container.cmd", _string_list(cmd.value, split=False), cmd)
        self._create_command(config.get("CreateCommand"))
        self._labels(config.get("Labels"))

    def _env(self, env: Node | None) -> None:
        if env is None or not isinstance(env.value, list):
            return
        for item in env.value:
            if not isinstance(item.value, str) or "=" not in item.value:
                continue
            name, _, value = item.value.partition("=")
            if not _ENV_ITEM.match(item.value):
                continue
            self.knob(f"env.{name}", value, item)
            if name in _IMAGE_ENV_FACTS:
                self.fact(_IMAGE_ENV_FACTS[name], value, item)

    def _host_config(self, host: Node) -> None:
        self._device_requests(host.get("DeviceRequests"))
        self._cdi_devices(host.get("Devices"))
        runtime = host.get("Runtime")
        if runtime is not None and isinstance(runtime.value, str) and runtime.value:
            self.runtime = runtime.value
            self.knob("container.runtime", runtime.value, runtime)
        shm = host.get("ShmSize")
        if shm is not None and isinstance(shm.value, int) and not isinstance(shm.value, bool):
            self.knob("container.shm_size", shm.value, shm, note=_mib(shm.value))
        for key, name in (("IpcMode", "container.ipc"), ("NetworkMode", "container.network")):
            node = host.get(key)
            if node is not None and isinstance(node.value, str) and node.value:
                self.knob(name, node.value, node)
        privileged = host.get("Privileged")
        if privileged is not None and isinstance(privileged.value, bool):
            self.knob("container.privileged", privileged.value, privileged)
        cap_add = host.get("CapAdd")
        if cap_add is not None and isinstance(cap_add.value, list) and cap_add.value:
            self.knob("container.cap_add", _string_list(cap_add.value, split=False), cap_add)
        binds = host.get("Binds")
        if binds is not None and isinstance(binds.value, list) and binds.value:
            mounts = [":".join(str(b.value).split(":")[:2]) for b in binds.value if isinstance(b.value, str)]
            if mounts:
                self.knob("container.mounts", mounts, binds, note="from HostConfig.Binds")

    def _device_requests(self, requests: Node | None) -> None:
        if requests is None or not isinstance(requests.value, list):
            return
        gpu_requests = [
            (r, r.plain()) for r in requests.value if isinstance(r.value, dict) and _is_gpu_request(r)
        ]
        # A container made through the API may hold one request per GPU, each naming its device
        # (`DeviceIDs: ["GPU-a…"]`, then `["GPU-c…"]`): together they select what
        # `--gpus '"device=GPU-a…,GPU-c…"'` would.
        named = [
            (r, p["DeviceIDs"])
            for r, p in gpu_requests
            if isinstance(p.get("DeviceIDs"), list) and p["DeviceIDs"]
        ]
        if len(named) > 1 and len(named) == len(gpu_requests):
            first = named[0][0]
            self.knob(
                "container.gpus",
                ",".join(str(device) for _, ids in named for device in ids),
                first.get("DeviceIDs") or first,
                note=f"from {len(named)} HostConfig.DeviceRequests entries",
            )
            return
        for request, plain in gpu_requests:
            count = plain.get("Count")
            ids = plain.get("DeviceIDs")
            if isinstance(ids, list) and ids:
                gpus = ",".join(str(device) for device in ids)
            elif count == -1:
                gpus = "all"
            elif isinstance(count, int) and count > 0:
                gpus = str(count)
            else:
                continue
            # point at the field that made the selection, not at the request's opening brace
            chosen = request.get("DeviceIDs") if isinstance(ids, list) and ids else request.get("Count")
            self.knob("container.gpus", gpus, chosen or request, note="from HostConfig.DeviceRequests")
            self.fact(
                "container.gpu_request",
                {"driver": plain.get("Driver") or None, "count": count, "device_ids": ids},
                request,
            )
            return

    def _cdi_devices(self, devices: Node | None) -> None:
        """Podman/CDI: `--device nvidia.com/gpu=all` shows up as a device path on the host side."""
        if devices is None or not isinstance(devices.value, list):
            return
        selected: list[str] = []
        first: Node | None = None
        for device in devices.value:
            plain = device.plain()
            path = plain.get("PathOnHost", "") if isinstance(plain, dict) else str(plain or "")
            match = re.match(r"^nvidia\.com/gpu=(\S+)$", str(path)) or re.match(
                r"^/dev/nvidia(\d+)$", str(path)
            )
            if match:
                selected.append(match.group(1))
                first = first or device
        if selected and first is not None:
            self.knob("container.gpus", ",".join(selected), first, note="from HostConfig.Devices")

    def _create_command(self, command: Node | None) -> None:
        """Podman records the `podman run` words; CDI GPU selections are only visible there."""
        if command is None or not isinstance(command.value, list):
            return
        words = [str(item.value) for item in command.value]
        for index, word in enumerate(words):
            option, has_value, value = word.partition("=")
            if option not in ("--device", "--gpus"):
                continue
            if not has_value:
                value = words[index + 1] if index + 1 < len(words) else ""
            selection = value[len("nvidia.com/gpu=") :] if value.startswith("nvidia.com/gpu=") else value
            if option == "--gpus" or value.startswith("nvidia.com/gpu="):
                self.knob("container.gpus", selection, command, note=f"from CreateCommand {option} {value}")
                return

    def _state(self, state: Node) -> None:
        status = state.get("Status")
        if status is not None and isinstance(status.value, str) and status.value:
            self.fact("container.status", status.value, status)
        exit_code = state.get("ExitCode")
        # A running (or never started) container reports ExitCode 0: no exit to record.
        live = status is not None and status.value in ("running", "created", "paused")
        if exit_code is not None and type(exit_code.value) is int and not live:
            self.fact("container.exit_code", exit_code.value, exit_code)
        oom = state.get("OOMKilled")
        if oom is not None and isinstance(oom.value, bool):
            self.fact("container.oom_killed", oom.value, oom)
        for key, name in (("StartedAt", "container.started_at"), ("FinishedAt", "container.finished_at")):
            node = state.get(key)
            if node is not None and isinstance(node.value, str) and node.value and node.value != _ZERO_TIME:
                self.fact(name, node.value, node)

    def _identity(self, record: Node) -> None:
        name = record.get("Name")
        if name is not None and isinstance(name.value, str) and name.value:
            self.fact("container.name", name.value.lstrip("/"), name)
        created = record.get("Created")
        if created is not None and isinstance(created.value, str) and created.value:
            self.fact("container.created", created.value, created)
        identifier = record.get("Id")
        if (
            identifier is not None
            and isinstance(identifier.value, str)
            and re.fullmatch(r"[0-9a-f]{12,64}", identifier.value)
        ):
            self.fact("container.id", identifier.value, identifier)

    def _mounts(self, mounts: Node | None) -> None:
        if mounts is None or not isinstance(mounts.value, list):
            return
        pairs = []
        for mount in mounts.value:
            plain = mount.plain()
            if not isinstance(plain, dict) or not plain.get("Destination"):
                continue
            # A named volume is given by name on the command line (`-v hf-cache:/root/.cache`).
            source = (
                plain.get("Name")
                if plain.get("Type") == "volume" and plain.get("Name")
                else plain.get("Source")
            )
            pairs.append(f"{source or ''}:{plain['Destination']}")
        if pairs:
            self.knob("container.mounts", pairs, mounts)

    def _ran(self, record: Node) -> None:
        """Remember what actually ran: `Path` + `Args` (Docker resolves Entrypoint+Cmd into them)."""
        path = record.get("Path")
        args = record.get("Args")
        if path is None or not isinstance(path.value, str) or not path.value or self.argv is not None:
            return
        words, lines = [path.value], [path.line]
        if args is not None and isinstance(args.value, list):
            for item in args.value:
                if isinstance(item.value, (str, int, float)):
                    words.append(str(item.value))
                    lines.append(item.line)
        self.argv = (words, lines)

    # -- after all records
    def finish(self) -> None:
        self._gpus_from_runtime()
        self._vllm_args()
        self._problems()

    def _gpus_from_runtime(self) -> None:
        # With `--runtime nvidia` and no --gpus, NVIDIA_VISIBLE_DEVICES selects the GPUs.
        if "container.gpus" in self.result.knobs or self.runtime != "nvidia":
            return
        visible = self.result.knobs.get("env.NVIDIA_VISIBLE_DEVICES")
        if visible is not None and visible.value:
            self.result.knobs["container.gpus"] = Sourced(
                visible.value, visible.source, "from NVIDIA_VISIBLE_DEVICES with runtime nvidia"
            )

    def _vllm_args(self) -> None:
        # The same reader as a pasted command line: one wrapper list, one lexer for `sh -c`.
        # Its problems (an unknown flag …) are the launch command's to report, not repeated here.
        words, lines = self._command()
        launch = read_argv(words, lines, self.file)
        if launch is None:
            return
        for dest, value in launch.args.items():
            line = self.remap(value.line) if value.line else None
            self.result.knob(f"arg.{dest}", value.value, self.file, line, value.note)

    def _command(self) -> tuple[list[str], list[int]]:
        if self.argv is not None:
            return self.argv
        words: list[str] = []
        lines: list[int] = []
        for node in (self.entrypoint, self.cmd):
            if node is None:
                continue
            if isinstance(node.value, list):
                for item in node.value:
                    words.append(str(item.value))
                    lines.append(item.line)
            elif isinstance(node.value, str):
                split = split_command(node.value)
                words.extend(split)
                lines.extend([node.line] * len(split))
        return words, lines

    def _problems(self) -> None:
        exit_code = self.result.facts.get("container.exit_code")
        oom = self.result.facts.get("container.oom_killed")
        oom_killed = bool(oom and oom.value is True)
        evidence = [s.source for s in (exit_code, oom) if s is not None]
        if oom_killed:
            self.result.problems.append(
                Finding(
                    "container-oom-killed",
                    "error",
                    "the container was killed by the kernel OOM killer (State.OOMKilled=true"
                    + (f", exit code {exit_code.value})" if exit_code else ")"),
                    evidence,
                    "the container hit its memory limit (host RAM, not GPU memory): raise --memory or "
                    "lower CPU-side memory use (e.g. weight loading into RAM, --swap-space, "
                    "--cpu-offload-gb)",
                )
            )
        elif exit_code is not None and exit_code.value == 137:
            self.result.problems.append(
                Finding(
                    "container-killed",
                    "error",
                    "the container exited with 137 (SIGKILL) without OOMKilled: killed from outside",
                    evidence,
                    "look for who sent SIGKILL: `docker kill`/`stop` timeout, a liveness probe, an "
                    "orchestrator "
                    "or the host OOM killer acting outside the container's cgroup",
                )
            )


def _listed(value: Any) -> bool:
    return isinstance(value, list) and bool(value)


def _find_key(node: Node, key: str, depth: int = 0) -> Node | None:
    """The first value under `key` anywhere below `node` (no deeper than the reader nests)."""
    direct = node.get(key)
    if direct is not None or depth > MAX_DEPTH:
        return direct
    value = node.value
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return next((found for child in children if (found := _find_key(child, key, depth + 1))), None)


def _image_id(value: str) -> str:
    # Podman prints the bare hex ID; Docker prefixes "sha256:". One spelling lets runs compare.
    return value if value.startswith("sha256:") else f"sha256:{value}"


def _repository(reference: str) -> str:
    name = reference.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name = name[: len(name) - len(last)] + last.split(":", 1)[0]
    return re.sub(r"^(?:docker\.io/)?(?:library/)?", "", name)


def _string_list(value: Any, split: bool) -> list[str]:
    if isinstance(value, list):
        return [str(item.value if isinstance(item, Node) else item) for item in value]
    if isinstance(value, str):
        # Podman 4 prints Entrypoint as one string.
        return split_command(value) if split else [value]
    return [str(value)]


def _mib(size: int) -> str:
    return f"{size / 2**20:g} MiB"


def _is_gpu_request(request: Node) -> bool:
    plain = request.plain()
    capabilities = json.dumps(plain.get("Capabilities") or [])
    return "gpu" in capabilities or str(plain.get("Driver") or "").lower() in ("nvidia", "cdi")
