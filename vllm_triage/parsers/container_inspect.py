"""`docker inspect`, `docker container inspect`, `docker image inspect` and `podman inspect` JSON.

Pastes of this JSON are rarely whole: an array or a bare object, 2- or 4-space indents, a jq
piece (`.HostConfig.DeviceRequests`, `{"Image": …}`), the middle elided by the user (`...` or `…`
lines), blockquoted (`> `), or cut by a paste limit mid-string. `json.loads` gives up on all but
the first two and gives no line numbers, so the text is read with the tolerant reader of
parsers/tolerant_json.py, which keeps the line of every value and never fails.

This module recognises inspect output and sorts its records (container, image, jq pieces); the
fields are read by parsers/inspect_fields.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from vllm_triage.core.roles import Role
from vllm_triage.parsers.base import ParseResult, clean_paste
from vllm_triage.parsers.inspect_fields import Extractor, Remapper, is_env_list, node_keys
from vllm_triage.parsers.inspect_format import has_format_command, read_format_output
from vllm_triage.parsers.registry import parser
from vllm_triage.parsers.tolerant_json import MAX_DEPTH, JsonReading, Node, read_json

KIND_CONTAINER = "container_inspect.container"
KIND_IMAGE = "container_inspect.image"
KIND_PIECE = "container_inspect.piece"
KIND_UNKNOWN = "container_inspect.unknown"


# ---------------------------------------------------------------------------------------------
# Recognising inspect output

# Keys only Docker/Podman inspect output carries (case matters: Kubernetes uses `image`, `env`).
_INSPECT_KEYS = re.compile(
    r'"(?:HostConfig|GraphDriver|NetworkSettings|RepoDigests|RepoTags|DeviceRequests|OOMKilled|'
    r"ShmSize|IpcMode|ResolvConfPath|HostnamePath|HostsPath|LogPath|RestartCount|MountLabel|"
    r'ProcessLabel|AppArmorProfile|ExecIDs|Entrypoint|OnBuild|RootFS|ImageDigest|ImageName)"\s*:'
)
_PIECE_KEYS = re.compile(
    r'"(?:Config|State|Mounts|Image|Env|Cmd|Args|Path|ExitCode|Capabilities|DeviceIDs)"\s*:'
)


def looks_like(text: str) -> bool:
    """True for inspect JSON or a recognisable piece of it (not any JSON: not a request body), or
    for `docker inspect --format '{{json .Config.Env}}' vllm` and what it printed."""
    return _looks_like_json(text) or has_format_command(text)


def _looks_like_json(text: str) -> bool:
    if not text:
        return False
    head = "\n".join(line.text for line in clean_paste(text[:400_000]))
    first = head.lstrip()[:1]
    device_request = '"Capabilities"' in head and ('"DeviceIDs"' in head or '"Count"' in head)
    if first not in ("{", "[", '"'):
        # Mixed pastes (a sentence, then the JSON) still count when several inspect keys appear,
        # or when the JSON is a DeviceRequest list (`docker inspect X | jq '.[0].HostConfig.DeviceRequests'`
        # shown under the command that printed it): Driver, Count, DeviceIDs, Capabilities are the
        # fields of Docker's container.DeviceRequest, together in no other format.
        return len(set(_INSPECT_KEYS.findall(head))) >= 3 or device_request and '"Driver"' in head
    if _INSPECT_KEYS.search(head):
        return True
    # jq pieces: `.HostConfig.DeviceRequests`, `.State`, `{"Image": …, "Env": …}`
    pieces = set(_PIECE_KEYS.findall(head))
    return device_request or len(pieces) >= 2 and not re.search(r'"(?:messages|prompt|model)"\s*:', head)


# ---------------------------------------------------------------------------------------------
# Parsing


@parser(Role.CONTAINER_INSPECT, looks_like=looks_like, sniff=30)
def parse(text: str, file: str = "<inspect>") -> ParseResult:
    """Read docker/podman inspect JSON into knobs, facts and problems; never raises."""
    result = ParseResult(kind=KIND_UNKNOWN)
    try:
        _parse_into(result, text or "", file)
    except Exception as error:  # the parser contract: odd input becomes a note, never a traceback
        result.notes.append(f"inspect JSON could not be read completely ({type(error).__name__})")
    return result


def _parse_into(result: ParseResult, text: str, file: str) -> None:
    formatted = read_format_output(text) if has_format_command(text) else None
    if formatted is not None:
        result.notes.extend(formatted.notes)
    if formatted is not None and formatted.pieces:
        # One JSON value a line, each on the line its command's output was read from.
        body = "\n".join(piece for piece, _ in formatted.pieces)
        line_map = [number for _, numbers in formatted.pieces for number in numbers]
    elif formatted is not None and not _looks_like_json(text):
        # Commands whose output cannot be read: the rest of the paste is no inspect JSON, and
        # reading megabytes of it as JSON would only cost time.
        result.notes.append("no docker/podman inspect fields found")
        return
    else:
        body, line_map = _clean(text)
    reading = read_json(body)
    remap = Remapper(line_map)
    _note_reading(result, reading, remap)
    # Each `--format` command printed fields of its own object (`docker image inspect IMG`, then
    # `docker inspect CONTAINER`): each is classified alone, so an image's fields do not hide the
    # container's. Whole inspect output is one record set.
    groups = [[value] for value in reading.values] if formatted and formatted.pieces else [reading.values]
    extractor = Extractor(result, file, remap)
    read_any = False
    for values in groups:
        container, image, pieces, containers = _classify(values)
        if containers > 1:
            result.notes.append(f"{containers} containers in this output: only the first one is read")
        if container is not None:
            result.kind = KIND_CONTAINER
            extractor.container(container)
        if image is not None:
            result.kind = KIND_IMAGE if result.kind in (KIND_UNKNOWN, KIND_PIECE) else result.kind
            extractor.image(image)
        for piece in pieces:
            result.kind = KIND_PIECE if result.kind == KIND_UNKNOWN else result.kind
            extractor.piece(piece)
        read_any = read_any or container is not None or image is not None or bool(pieces)
    if not read_any:
        result.notes.append("no docker/podman inspect fields found")
        return
    extractor.finish()


def _clean(text: str) -> tuple[str, list[int]]:
    """Paste debris removed (blockquotes, fences, prompts); returns the JSON text and, for each
    of its lines, the line number in the original file."""
    lines = clean_paste(text)
    start = next((i for i, line in enumerate(lines) if line.text.strip()), 0)
    if lines and not lines[start].text.lstrip().startswith(("{", "[", '"')):
        # The command or a sentence before the JSON (`docker inspect x | jq …`, "it shows:"):
        # the JSON starts on the first line that opens an object or an array.
        start = next((i for i, line in enumerate(lines) if line.text.lstrip()[:1] in ("{", "[")), start)
        lines = lines[start:]
    return "\n".join(line.text for line in lines), [line.number for line in lines]


def _note_reading(result: ParseResult, reading: JsonReading, remap: Remapper) -> None:
    if reading.truncated:
        result.notes.append("the JSON is cut short: read as far as it goes")
    if reading.elided:
        lines = ", ".join(str(remap(line)) for line in reading.elided[:5])
        result.notes.append(f"parts elided by the user (line {lines}): fields there are unknown")


def _walk(node: Node, depth: int = 0) -> Iterator[Node]:
    yield node
    if depth > MAX_DEPTH:
        return
    if isinstance(node.value, dict):
        children = list(node.value.values())
    elif isinstance(node.value, list):
        children = node.value
    else:
        return
    for child in children:
        yield from _walk(child, depth + 1)


_CONTAINER_KEYS = {
    "State",
    "HostConfig",
    "GraphDriver",
    "NetworkSettings",
    "Mounts",
    "Path",
    "Args",
    "RestartCount",
    "ResolvConfPath",
    "HostnamePath",
    "ExecIDs",
}
_IMAGE_KEYS = {"RepoTags", "RepoDigests", "RootFS", "ContainerConfig", "DockerVersion"}


def _classify(values: list[Node]) -> tuple[Node | None, Node | None, list[Node], int]:
    """The first container record, the first image record, any jq pieces, and how many
    container records there were (`docker inspect a b` prints several)."""
    container = image = None
    containers = 0
    for top in values:
        for node in _walk(top):
            keys = node_keys(node)
            if len(keys & _CONTAINER_KEYS) >= 2 or ("Id" in keys and keys & _CONTAINER_KEYS):
                containers += 1
                container = container or node
            elif keys & _IMAGE_KEYS and ("Id" in keys or "Config" in keys):
                image = image or node
    pieces = []
    if container is None and image is None:
        pieces = [top for top in values if _is_piece(top)]
    return container, image, pieces, containers


_PIECE_FIELDS = {
    "Image",
    "Config",
    "Env",
    "Cmd",
    "Entrypoint",
    "Args",
    "Path",
    "State",
    "Status",
    "ExitCode",
    "OOMKilled",
    "DeviceRequests",
    "Runtime",
    "ShmSize",
    "IpcMode",
    "HostConfig",
    "NetworkMode",
    "Privileged",
    "CapAdd",
    "Mounts",
    "Binds",
    "Devices",
    "Name",
    "Driver",
    "Count",
    "DeviceIDs",
    "Capabilities",
    "Destination",
    "ImageName",
}


def _is_piece(node: Node) -> bool:
    if isinstance(node.value, dict):
        return bool(node_keys(node) & _PIECE_FIELDS)
    if isinstance(node.value, list):
        return any(_is_piece(item) for item in node.value) or is_env_list(node)
    return False


# ---------------------------------------------------------------------------------------------
# Small helpers
