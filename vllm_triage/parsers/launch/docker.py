"""`docker run` / `podman run`: the client's options up to the image, which of them say what the
container gets (GPUs, env, volumes, shm, runtime), and what the image runs by default."""

from __future__ import annotations

import re

from vllm_triage.parsers.launch.lexer import Token
from vllm_triage.parsers.launch.model import Launch, Shell, Value, word_list
from vllm_triage.parsers.launch.vllm_args import is_option
from vllm_triage.parsers.launch.wrappers import Anchor, find_anchor
from vllm_triage.parsers.vllm_flags import (
    FlagMatch,
    resolve_flag,
)

_DOCKER_BOOL_LONG = frozenset(
    word_list("""--detach --interactive --tty --rm --init --privileged --read-only --publish-all
    --no-healthcheck --oom-kill-disable --sig-proxy --disable-content-trust --quiet --help
    --use-api-socket --env-host --replace --rootfs --read-only-tmpfs --no-hosts --tls-verify
    --http-proxy --env-merge-unused""")
)


_DOCKER_BOOL_SHORT = set("ditPq")


_DOCKER_VALUE_SHORT = set("evpwuhmlac")


_DOCKER_ALIASES = {
    "-e": "--env",
    "-v": "--volume",
    "-p": "--publish",
    "-w": "--workdir",
    "-u": "--user",
    "-h": "--hostname",
    "-m": "--memory",
    "-l": "--label",
    "-a": "--attach",
    "-c": "--cpu-shares",
    "--net": "--network",
}


_IMAGE_VERSION = re.compile(r"^v?(\d+)\.(\d+)")


# vllm/vllm-openai switched its entrypoint from the api_server module to `vllm serve` in
# PR #25967 (v0.11.0).
_SERVE_ENTRYPOINT_SINCE = (0, 11)


def docker_options(words: list[Token]) -> tuple[list[tuple[str, Token, Token | None]], int]:
    """docker run options up to the image: [(long option, option token, value token)], image index."""
    options: list[tuple[str, Token, Token | None]] = []
    index = 0
    while index < len(words):
        word = words[index]
        text = word.text
        if not text.startswith("-") or text == "-":
            return options, index
        if text == "--":
            return options, index + 1
        if text.startswith("--"):
            name, eq, inline = text.partition("=")
            if eq:
                options.append((name, word, Token(inline, word.line)))
            elif name in _DOCKER_BOOL_LONG:
                options.append((name, word, None))
            elif index + 1 < len(words):
                options.append((name, word, words[index + 1]))
                index += 1
            index += 1
            continue
        letters = text[1:]
        if all(letter in _DOCKER_BOOL_SHORT for letter in letters):
            index += 1
            continue
        value_at = next((i for i, letter in enumerate(letters) if letter in _DOCKER_VALUE_SHORT), None)
        if value_at is None:
            index += 1
            continue
        long = _DOCKER_ALIASES.get("-" + letters[value_at], "-" + letters[value_at])
        attached = letters[value_at + 1 :].lstrip("=")
        if attached:
            options.append((long, word, Token(attached, word.line)))
        elif index + 1 < len(words):
            options.append((long, word, words[index + 1]))
            index += 1
        index += 1
    return options, index


def image_entrypoint(ref: str) -> tuple[str | None, tuple[int, int] | None]:
    """What the image runs by default ("vllm_serve" | "api_server_module" | None) and its version."""
    name = ref.split("@", 1)[0]
    tag = ""
    if ":" in name.rsplit("/", 1)[-1]:
        name, tag = name.rsplit(":", 1)
    if not name.rsplit("/", 1)[-1].startswith("vllm-openai"):
        return None, None
    version_match = _IMAGE_VERSION.match(tag)
    if version_match:
        version = (int(version_match.group(1)), int(version_match.group(2)))
        return ("vllm_serve" if version >= _SERVE_ENTRYPOINT_SINCE else "api_server_module"), version
    return None, None  # latest, nightly, model tags: which entrypoint depends on when it was pulled


def _unquote_gpus(value: str) -> str:
    """`--gpus '"device=0,1"'`: the shell removes one layer of quotes, docker's CSV reader the
    second; the selection is what is left."""
    value = value.strip()
    while len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1].strip()
    return value


def runs_vllm(image: Token, args: list[Token], options: list[tuple[str, Token, Token | None]]) -> bool:
    """The image is a vLLM image, or what runs in it is vLLM: a vLLM program, or arguments that
    are (nearly all) vLLM flags. TGI's `--model-id`, sglang's `--model-path` are not."""
    if "vllm" in image.text.lower():
        return True
    entrypoint = [value for name, _option, value in options if name == "--entrypoint" and value is not None]
    program = entrypoint + args
    if program and not is_option(program[0].text) and find_anchor(program) is not None:
        return True
    flags = [token.text.split("=", 1)[0].split(".", 1)[0] for token in args if is_option(token.text)]
    known = [flag for flag in flags if isinstance(resolve_flag(flag), FlagMatch)]
    return bool(flags) and len(known) >= 0.8 * len(flags)


def docker_option(launch: Launch, name: str, value: Token, shell: Shell, anchor: Anchor) -> None:
    text = value.text
    if name == "--gpus":
        launch.container["gpus"] = Value(_unquote_gpus(text), value.line)
    elif name == "--device" and "gpu" in text and "/" in text and not text.startswith("/dev/"):
        previous = launch.container.get("gpus")
        joined = f"{previous.value},{text}" if previous else text
        launch.container["gpus"] = Value(joined, previous.line if previous else value.line, "CDI device")
    elif name in ("--runtime", "--shm-size", "--ipc", "--network"):
        launch.container[name[2:].replace("-", "_")] = Value(text, value.line)
    elif name in ("--volume", "--mount"):
        _append(launch.container, "volumes", text, value.line)
    elif name == "--env-file":
        _append(launch.container, "env_files", text, value.line)
    elif name == "--env":
        _docker_env(launch, value, shell, anchor)


def _docker_env(launch: Launch, value: Token, shell: Shell, anchor: Anchor) -> None:
    name, eq, env_value = value.text.partition("=")
    if eq:
        launch.env[name] = Value(env_value, value.line)
        return
    # `-e NAME` passes the client's own NAME through: an earlier export, or a prefix on docker.
    prefix = {t.text.partition("=")[0]: t for t in anchor.prefix_env}
    source = shell.exported.get(name)
    if name in prefix:
        source = Value(prefix[name].text.partition("=")[2], prefix[name].line)
    if source is not None:
        launch.env[name] = Value(
            source.value, value.line, f"passed from the host; value set at line {source.line}"
        )
    else:
        launch.notes.append(
            f"line {value.line}: -e {name} passes the host's {name}; its value is not in the paste"
        )


def _append(target: dict[str, Value], key: str, item: str, line: int | None) -> None:
    if key in target:
        target[key].value.append(item)
    else:
        target[key] = Value([item], line)


def gpus_from_visible_devices(launch: Launch) -> None:
    """Without --gpus, the NVIDIA runtime selects GPUs from NVIDIA_VISIBLE_DEVICES."""
    visible = launch.env.get("NVIDIA_VISIBLE_DEVICES")
    if "gpus" not in launch.container and visible is not None:
        runtime = launch.container.get("runtime")
        note = "from NVIDIA_VISIBLE_DEVICES" + (
            "" if runtime and runtime.value == "nvidia" else " (takes effect only with the NVIDIA runtime)"
        )
        launch.container["gpus"] = Value(visible.value, visible.line, note)


def set_image(launch: Launch, image: Token) -> None:
    launch.image = Value(image.text, image.line)
    if "@sha256:" in image.text:
        launch.digest = Value(image.text.split("@", 1)[1], image.line)
