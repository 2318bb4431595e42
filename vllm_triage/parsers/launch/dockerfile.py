"""A Dockerfile that builds a vLLM server image, read as what its container runs.

Docker's reference (Dockerfile instructions): `FROM image [AS name]` starts a stage, the last
stage is the image; `ENV key=value …` (or the legacy `ENV key value`) sets the container's
environment; `ENTRYPOINT` and `CMD` are JSON arrays (exec form) or a command line run by
`/bin/sh -c` (shell form). The container runs ENTRYPOINT + CMD; with no ENTRYPOINT of its own the
base image's applies, so `FROM vllm/vllm-openai` + `CMD ["--model", …]` hands CMD to vLLM's own
entrypoint. A line ending in `\\` continues on the next one.

The launcher is what runs vLLM in the container: `vllm_serve` or `api_server_module`, the image
is the FROM of the last stage, ENV the environment. A build-time ARG is no runtime setting.
"""

from __future__ import annotations

import json
import re

from vllm_triage.parsers.base import ParseResult, clean_paste
from vllm_triage.parsers.launch.analyse import analyse, container_command
from vllm_triage.parsers.launch.docker import image_entrypoint, set_image
from vllm_triage.parsers.launch.launchers import API_SERVER_MODULE, VLLM_SERVE
from vllm_triage.parsers.launch.lexer import Token, unquote_simple
from vllm_triage.parsers.launch.model import KIND_PREFIX, Context, Launch, Shell, Value, emit
from vllm_triage.parsers.launch.wrappers import find_anchor

INSTRUCTION = re.compile(
    r"^\s*(FROM|ENV|ENTRYPOINT|CMD|ARG|RUN|EXPOSE|WORKDIR|COPY|ADD|USER|LABEL)\s+(.*)$", re.I
)
# What an ENTRYPOINT/CMD that starts vLLM names: vLLM itself, or --model handed to the image's own.
_STARTS_VLLM = re.compile(r"vllm|api_server|--model", re.I)
# A Dockerfile line that starts vLLM: an ENTRYPOINT/CMD naming it, or handing it --model.
# `[ \t]`, not `\s`: under re.M a `^\s*` runs across every blank line from every line start. One
# blank after the keyword, not `[ \t]+`: `+` and the `.*` after it could share a run of blanks
# in every way, each tried when the line has no vLLM word (quadratic in the run).
LAUNCH_LINE = re.compile(r"^[ \t]*(?:ENTRYPOINT|CMD)[ \t].*(?:vllm|api_server|--model)", re.I | re.M)
# An ENTRYPOINT/CMD continued with `\` onto later lines: `CMD ["--host", "0.0.0.0", \` with the
# model on a line of its own. Only these need the continued lines joined to be judged.
_CONTINUED_LAUNCH = re.compile(r"^[ \t]*(?:ENTRYPOINT|CMD)[ \t].*\\[ \t]*$", re.I | re.M)
_FROM_LINE = re.compile(r"^[ \t]*FROM[ \t]+\S", re.I | re.M)
_EXEC_FORM = re.compile(r"^[ \t]*(?:ENTRYPOINT|CMD)[ \t]+\[", re.I | re.M)
_ENV_PAIR = re.compile(r"""([A-Za-z_][\w.-]*)=("(?:[^"\\]|\\.)*"|'[^']*'|\S*)""")


def looks_like(text: str) -> bool:
    """A Dockerfile (or the part of one pasted) whose ENTRYPOINT/CMD starts vLLM, judged on the
    instruction as docker reads it: continued lines joined."""
    if not (_FROM_LINE.search(text) or _EXEC_FORM.search(text)):
        return False
    if LAUNCH_LINE.search(text):
        return True
    if not _CONTINUED_LAUNCH.search(text):
        return False
    commands = [rest for keyword, rest, _ in _instructions(text) if keyword in ("ENTRYPOINT", "CMD")]
    return any(_STARTS_VLLM.search(rest) for rest in commands)


def _instructions(text: str) -> list[tuple[str, str, int]]:
    """(INSTRUCTION, arguments, line) with continued lines joined."""
    out: list[tuple[str, str, int]] = []
    pending: tuple[str, list[str], int] | None = None
    for line in clean_paste(text):
        body = line.text.rstrip()
        if pending is not None:
            if body.lstrip().startswith("#"):
                continue  # comment lines inside a continued instruction are dropped by docker
            pending[1].append(body.removesuffix("\\").strip())
            if not body.endswith("\\"):
                out.append((pending[0], " ".join(pending[1]), pending[2]))
                pending = None
            continue
        match = INSTRUCTION.match(body)
        if not match:
            continue
        keyword, rest = match.group(1).upper(), match.group(2)
        if rest.endswith("\\"):
            pending = (keyword, [rest.removesuffix("\\").strip()], line.number)
        else:
            out.append((keyword, rest.strip(), line.number))
    if pending is not None:
        out.append((pending[0], " ".join(pending[1]), pending[2]))
    return out


def _command(rest: str, line: int, notes: list[str]) -> list[Token]:
    """ENTRYPOINT/CMD words: the JSON exec form item by item, the shell form through `/bin/sh -c`."""
    if rest.startswith("["):
        try:
            items = json.loads(rest)
        except ValueError:
            items = None
        if isinstance(items, list) and all(isinstance(item, str) for item in items):
            return [Token(item, line) for item in items]
        notes.append(f"line {line}: exec form that is no JSON array of strings; read as a shell command")
    return [Token("/bin/sh", line), Token("-c", line), Token(rest, line)]


def parse_dockerfile(text: str, file: str) -> ParseResult:
    result = ParseResult(kind=f"{KIND_PREFIX}.dockerfile")
    ctx = Context(file)
    image: Token | None = None
    env: dict[str, Value] = {}
    entrypoint: list[Token] | None = None
    cmd: list[Token] = []
    for keyword, rest, line in _instructions(text):
        if keyword == "FROM":
            image = Token(rest.split()[0], line)  # a new stage: what came before was another image
            env, entrypoint, cmd = {}, None, []
        elif keyword == "ENV":
            pairs = _ENV_PAIR.findall(rest)
            if pairs and "=" in rest.split()[0]:
                for name, value in pairs:
                    env[name] = Value(unquote_simple(value), line)
            elif rest.split():
                name, _, value = rest.partition(" ")
                env[name] = Value(unquote_simple(value.strip()), line)
        elif keyword == "ENTRYPOINT":
            entrypoint, cmd = _command(rest, line, ctx.notes), []  # a new ENTRYPOINT resets CMD
        elif keyword == "CMD":
            cmd = _command(rest, line, ctx.notes)
    if entrypoint is None and not cmd:
        result.notes.append("no ENTRYPOINT or CMD in the Dockerfile")
        return result
    program = (entrypoint or []) + cmd
    anchor = find_anchor(program) if entrypoint or cmd and not cmd[0].text.startswith("-") else None
    if anchor is None and image is not None:
        default, _ = image_entrypoint(image.text)
        launcher = default or VLLM_SERVE
        if default is None:
            ctx.notes.append(
                f"line {image.line}: {image.text} keeps its own entrypoint; taken to be vllm serve "
                "(vLLM images before v0.11 ran the api_server module)"
            )
    else:
        # what the program runs, through a `/bin/sh -c` of the shell form too
        inner = analyse(program, Shell(), Context(file)) if anchor is not None else None
        starts_vllm = inner is not None and inner.launcher in (VLLM_SERVE, API_SERVER_MODULE)
        launcher = inner.launcher if inner is not None and starts_vllm else ""
    if not launcher:
        result.notes.append("the Dockerfile's ENTRYPOINT/CMD does not start vLLM")
        return result
    launch = Launch(launcher, program[0].line if program else None)
    launch.env.update(env)
    image_token = image or Token("", None)
    if image is not None:
        set_image(launch, image)
    container_command(launch, image_token, entrypoint or [], cmd, ctx, Shell())
    for name, value in env.items():
        launch.env.setdefault(name, value)
    emit(launch, result, file)
    result.notes.extend(ctx.notes)
    return result
