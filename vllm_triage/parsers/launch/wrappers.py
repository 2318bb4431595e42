"""Where vLLM starts inside an argv: env assignments and wrapper commands (sudo, nohup,
systemd-run, srun, numactl, uv run, conda run …) skipped, up to `vllm serve`, the api_server
module, docker/podman run or `sh -c`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from vllm_triage.parsers.launch.lexer import ASSIGNMENT, Token

_PYTHON = re.compile(r"^python(?:\d+(?:\.\d+)?)?(?:\.exe)?$")


_API_SERVER_MODULES = {
    "vllm.entrypoints.openai.api_server": "api_server_module",
    "vllm.entrypoints.api_server": "api_server_module",  # the old demo server; same engine args
}


_SHELLS = {"bash", "sh", "zsh", "dash", "ash"}


# Wrapper commands that run the command after them: {name: options that take a value}.
_WRAPPERS: dict[str, set[str]] = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"},
    "nohup": set(),
    "exec": set(),
    "time": set(),
    "command": set(),
    "nice": {"-n"},
    "ionice": {"-c", "-n"},
    "chrt": set(),
    "unbuffer": set(),
    "stdbuf": {"-i", "-o", "-e"},
    "env": {"-u", "-C", "-S", "--unset", "--chdir"},
    "numactl": {"-C", "-N", "-m", "-p", "-i"},
    "srun": {"-N", "-n", "-p", "-c", "-w", "-t", "-J", "-A"},
    "uvx": {"--from", "--with", "--python", "-p"},
}


# Two-word wrappers: `uv run`, `conda run`, … and the options of theirs that take a value.
_RUNNERS: dict[tuple[str, str], set[str]] = {
    ("uv", "run"): {
        "--with",
        "--python",
        "-p",
        "--env-file",
        "--project",
        "--directory",
        "--package",
        "--extra",
        "--group",
        "--index",
        "--index-url",
        "--with-requirements",
    },
    ("conda", "run"): {"-n", "--name", "-p", "--prefix", "--cwd"},
    ("mamba", "run"): {"-n", "--name", "-p", "--prefix"},
    ("micromamba", "run"): {"-n", "--name", "-p", "--prefix"},
    ("poetry", "run"): set(),
    ("pipenv", "run"): set(),
    ("pdm", "run"): set(),
    ("hatch", "run"): set(),
    ("pixi", "run"): {"-e", "--environment"},
}


# Positional arguments a wrapper takes before the command (timeout 600 cmd, taskset -c 0-7 cmd).
_WRAPPER_POSITIONALS = {"timeout": 1, "taskset": 1}


@dataclass
class Anchor:
    kind: str  # vllm_serve | api_server_module | docker_run | podman_run | shell_c
    index: int  # index of the program word
    args_from: int  # index of the first argument after the program (and subcommand)
    prefix_env: list[Token] = field(default_factory=list)
    wrappers: list[str] = field(default_factory=list)


def basename(word: str) -> str:
    return re.split(r"[\\/]", word)[-1]


def _skip_wrapper(words: list[Token], index: int) -> tuple[int, str] | None:
    """If words[index] starts a wrapper, the index after it and its description."""
    name = basename(words[index].text)
    following = words[index + 1].text if index + 1 < len(words) else ""
    if (name, following) in _RUNNERS:
        value_options = _RUNNERS[(name, following)]
        cursor, described = index + 2, f"{name} {following}"
        while cursor < len(words) and words[cursor].text.startswith("-"):
            option = words[cursor].text
            if option in ("-n", "--name") and cursor + 1 < len(words):
                described += f" -n {words[cursor + 1].text}"
            cursor += 2 if option in value_options and "=" not in option else 1
        return cursor, described
    if name in _WRAPPERS or name in _WRAPPER_POSITIONALS:
        value_options = _WRAPPERS.get(name, set())
        cursor = index + 1
        while cursor < len(words) and words[cursor].text.startswith("-") and words[cursor].text != "--":
            takes_value = words[cursor].text in value_options
            # `srun --ntasks 1 vllm serve`: an unlisted long option may take a value too, but
            # never the program we are looking for.
            if not takes_value and words[cursor].text.startswith("--") and "=" not in words[cursor].text:
                takes_value = cursor + 1 < len(words) and not _is_program(words[cursor + 1].text)
                takes_value = takes_value and not words[cursor + 1].text.startswith("-")
            cursor += 2 if takes_value else 1
        if cursor < len(words) and words[cursor].text == "--":
            cursor += 1
        cursor += _WRAPPER_POSITIONALS.get(name, 0)
        return cursor, name
    return None


def _is_program(word: str) -> bool:
    name = basename(word)
    return (
        name in ("vllm", "docker", "podman", "nvidia-docker") or name in _SHELLS or bool(_PYTHON.match(name))
    )


def find_anchor(words: list[Token]) -> Anchor | None:
    """Locate the program that starts vLLM, skipping env assignments and wrapper commands."""
    prefix_env: list[Token] = []
    wrappers: list[str] = []
    index = 0
    while index < len(words):
        word = words[index].text
        name = basename(word)
        following = words[index + 1].text if index + 1 < len(words) else ""
        if ASSIGNMENT.match(word):
            prefix_env.append(words[index])
            index += 1
            continue
        anchor = _program_anchor(words, index, name, following)
        if anchor:
            anchor.prefix_env, anchor.wrappers = prefix_env, wrappers
            return anchor
        skipped = _skip_wrapper(words, index)
        if skipped is None:
            return None
        index, described = skipped
        wrappers.append(described)
    return None


def _program_anchor(words: list[Token], index: int, name: str, following: str) -> Anchor | None:
    if name in ("docker", "podman", "nvidia-docker"):
        kind = "podman_run" if name == "podman" else "docker_run"
        if following == "run":
            return Anchor(kind, index, index + 2)
        if following == "container" and index + 2 < len(words) and words[index + 2].text == "run":
            return Anchor(kind, index, index + 3)
        return None
    if name in ("vllm", "vllm.exe") and following == "serve":
        return Anchor("vllm_serve", index, index + 2)
    if _PYTHON.match(name):
        return _python_anchor(words, index)
    if name in _SHELLS and following.startswith("-") and following.endswith("c") and index + 2 < len(words):
        return Anchor("shell_c", index, index + 2)
    return None


def _python_anchor(words: list[Token], index: int) -> Anchor | None:
    cursor = index + 1
    while cursor < len(words):
        word = words[cursor].text
        if word == "-m" and cursor + 1 < len(words):
            module = words[cursor + 1].text
            if module in _API_SERVER_MODULES:
                return Anchor(_API_SERVER_MODULES[module], index, cursor + 2)
            if (
                module == "vllm.entrypoints.cli.main"
                and cursor + 2 < len(words)
                and words[cursor + 2].text == "serve"
            ):
                return Anchor("vllm_serve", index, cursor + 3)
            return None
        if word.startswith("-m") and word[2:] in _API_SERVER_MODULES:
            return Anchor(_API_SERVER_MODULES[word[2:]], index, cursor + 1)
        if word.replace("\\", "/").endswith("vllm/entrypoints/openai/api_server.py"):
            return Anchor("api_server_module", index, cursor + 1)
        if not word.startswith("-"):
            return None  # a script that is not vLLM's
        cursor += 2 if word in ("-X", "-W") else 1
    return None
