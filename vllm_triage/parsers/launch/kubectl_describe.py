"""`kubectl describe pod` output: what a Kubernetes user pastes when the vLLM pod will not start.

kubectl prints each container as a block of `Key:  value` lines (kubectl's describe.go,
`describeContainers`): `Image:` is the reference the pod asked for, `Image ID:` the digest the
node pulled (`docker.io/vllm/vllm-openai@sha256:…`), `Command:` and `Args:` one list item a line
(an item holding newlines — a `sh -c` script — one line per line of it), `Limits:` the
`nvidia.com/gpu` count, `Environment:` `NAME:  value` (or `<set to the key 'k' in secret 's'>`
for a `valueFrom`), and `Last State: Terminated` with its `Reason:` (`OOMKilled`, `Error`) and
`Exit Code:`. k9s shows the same text inside a box (`│` borders). The container that runs vLLM
(else the first) is read into the same launch a Deployment's YAML gives.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from vllm_triage.core.finding import Finding
from vllm_triage.core.provenance import Provenance
from vllm_triage.ingest.prefixes import strip_box
from vllm_triage.parsers.base import ParseResult, clean_paste
from vllm_triage.parsers.launch.analyse import container_command
from vllm_triage.parsers.launch.docker import set_image
from vllm_triage.parsers.launch.lexer import Token
from vllm_triage.parsers.launch.model import KIND_PREFIX, Context, Launch, Shell, Value, emit
from vllm_triage.parsers.launch.wrappers import awaits_script

# The key's own class holds no blank next to `\s`, and the value is whatever follows (trailing
# blanks cut in Python), so no part of the line is tried two ways.
_KEY = re.compile(r"^(?P<indent>[ \t]*)(?P<key>[A-Za-z](?:[\w./-]| (?! )){0,60}):(?:[ \t]+(?P<value>\S.*))?$")
# Keys only a described container has (kubectl's describeContainerBasicInfo / State / Restarts).
_DESCRIBE_KEYS = ("Container ID", "Image ID", "Host Port", "Restart Count", "Last State", "Ready")
_SECRET_REF = re.compile(r"^<set to the key '(?P<key>[^']*)' (?:in secret|of config map) '(?P<src>[^']*)'>")
_VLLM = re.compile(r"vllm|api_server", re.I)


@dataclass
class _Container:
    name: str | None
    indent: int
    image: Token
    image_id: Token | None = None
    lists: dict[str, list[Token]] = field(default_factory=dict)  # "Command" / "Args" → items
    env: dict[str, Value] = field(default_factory=dict)
    gpus: Value | None = None
    last_state: dict[str, Token] = field(default_factory=dict)  # Reason / Exit Code of the last run


def _lines(text: str) -> list[tuple[int, str]]:
    # k9s shows the text inside a box (`│` borders): the grammar's box cut takes them off.
    return [(line.number, strip_box(line.text).rstrip()) for line in clean_paste(text)]


def looks_like_describe(text: str) -> bool:
    """An `Image:` line and two keys only `kubectl describe` prints for a container, in text the
    launch sniffer has already cleaned of paste debris."""
    keys = set()
    image = False
    for raw in text[:200_000].splitlines():
        match = _KEY.match(strip_box(raw).rstrip())
        if match is None:
            continue
        key = match.group("key")
        image = image or (key == "Image" and match.group("value") is not None)
        if key in _DESCRIBE_KEYS:
            keys.add(key)
    return image and len(keys) >= 2


def _containers(lines: list[tuple[int, str]]) -> list[_Container]:
    containers: list[_Container] = []
    current: _Container | None = None
    section: str | None = None  # the open list or mapping under the container: Command, Environment …
    previous_name: str | None = None
    for number, line in lines:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        match = _KEY.match(line)
        if match is not None and match.group("key") == "Image" and match.group("value"):
            current = _Container(previous_name, indent, Token(match.group("value"), number))
            containers.append(current)
            section = None
            continue
        if match is not None and match.group("value") is None:
            previous_name = match.group("key")  # `  vllm:` names the container block below it
        if current is None:
            continue
        if indent < current.indent:
            current, section = None, None  # back at the pod's level (`Conditions:`, `Volumes:`)
            continue
        if indent == current.indent:
            section = match.group("key") if match is not None else None
            if section == "Image ID" and match is not None and match.group("value"):
                current.image_id = Token(match.group("value"), number)
            if section == "Last State" and match is not None and match.group("value"):
                current.last_state["State"] = Token(match.group("value"), number)
            continue
        item = line.strip()
        if section in ("Command", "Args"):
            current.lists.setdefault(section, []).append(Token(item, number))
        elif section == "Environment" and match is not None and match.group("value"):
            current.env[match.group("key")] = Value(match.group("value"), number)
        elif section == "Limits" and match is not None and match.group("key").endswith("/gpu"):
            current.gpus = Value(match.group("value") or "", number, f"{match.group('key')} limit")
        elif section == "Last State" and match is not None and match.group("key") in ("Reason", "Exit Code"):
            current.last_state[match.group("key")] = Token(match.group("value") or "", number)
    return containers


def parse_kubectl_describe(text: str, file: str) -> ParseResult:
    result = ParseResult(kind=f"{KIND_PREFIX}.kubernetes")
    ctx = Context(file)
    containers = _containers(_lines(text))
    if not containers:
        result.notes.append("no container found in the kubectl describe output")
        return result

    def runs_vllm(c: _Container) -> bool:
        return bool(_VLLM.search(" ".join(t.text for t in itertools.chain([c.image], *c.lists.values()))))

    chosen = next((c for c in containers if runs_vllm(c)), containers[0])
    launch = Launch("kubernetes", chosen.image.line)
    launch.notes.append("kubectl describe pod" + (f", container {chosen.name}" if chosen.name else ""))
    for name, value in chosen.env.items():
        secret = _SECRET_REF.match(str(value.value))
        if secret:
            launch.notes.append(
                f"line {value.line}: env {name} comes from '{secret['src']}' key '{secret['key']}'; "
                "value not in the output"
            )
        elif not str(value.value).startswith("("):  # `(v1:status.podIP)`: a field reference
            launch.env[name] = value
    if chosen.gpus is not None:
        launch.container["gpus"] = chosen.gpus
    set_image(launch, chosen.image)
    if chosen.image_id is not None and "@sha256:" in chosen.image_id.text and launch.digest is None:
        digest = chosen.image_id.text.split("@", 1)[1]
        launch.digest = Value(digest, chosen.image_id.line, f"Image ID {chosen.image_id.text}")
    entrypoint = chosen.lists.get("Command", [])
    args = chosen.lists.get("Args", [])
    # A `sh -c` script is one item kubectl printed a line at a time: its lines are one script again.
    if entrypoint and awaits_script(entrypoint) and len(args) > 1:
        args = [Token("\n".join(t.text for t in args), args[0].line)]
    elif len(entrypoint) > 2 and awaits_script(entrypoint[:2]):
        entrypoint = [*entrypoint[:2], Token("\n".join(t.text for t in entrypoint[2:]), entrypoint[2].line)]
    container_command(launch, chosen.image, entrypoint, args, ctx, Shell())
    _last_state(launch, chosen, file)
    emit(launch, result, file)
    for other in containers:
        if other is not chosen and runs_vllm(other):
            result.notes.append(f"container {other.name} also runs vLLM; the first one was read")
    result.notes.extend(ctx.notes)
    return result


def _last_state(launch: Launch, container: _Container, file: str) -> None:
    """The previous run's end: the cgroup OOM killer (`OOMKilled`, 137) or another exit."""
    reason = container.last_state.get("Reason")
    code = container.last_state.get("Exit Code")
    if reason is None and code is None:
        return
    where = reason or code
    assert where is not None
    evidence = [Provenance(file, where.line)]
    if reason is not None and reason.text == "OOMKilled":
        launch.problems.append(
            Finding(
                "container-oom-killed",
                "error",
                "the container's last run was killed by the kernel OOM killer (Last State: Terminated, "
                f"Reason: OOMKilled{', Exit Code: ' + code.text if code else ''}): its memory limit is "
                "below what vLLM needs in host RAM",
                evidence,
                "raise the container's memory limit (resources.limits.memory); loading weights and "
                "--swap-space / --cpu-offload-gb use host RAM",
            )
        )
        return
    launch.notes.append(
        f"line {where.line}: the container's last run ended: "
        + ", ".join(f"{k} {v.text}" for k, v in container.last_state.items())
    )
