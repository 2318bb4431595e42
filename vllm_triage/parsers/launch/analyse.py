"""From the words of one simple command to a Launch: vLLM run directly, through `sh -c`, or in a
container (whose own command or image entrypoint is read in turn); shell assignments on the way."""

from __future__ import annotations

from vllm_triage.core.finding import Finding
from vllm_triage.core.provenance import Provenance
from vllm_triage.parsers.launch.config_file import read_config_file
from vllm_triage.parsers.launch.docker import (
    docker_option,
    docker_options,
    gpus_from_visible_devices,
    image_entrypoint,
    runs_vllm,
    set_image,
)
from vllm_triage.parsers.launch.launchers import SLURM, SLURM_STARTS
from vllm_triage.parsers.launch.lexer import ASSIGNMENT, Simple, Token, simple_commands, tokenize
from vllm_triage.parsers.launch.model import Context, Launch, Shell, Value
from vllm_triage.parsers.launch.paste import Line, logical_commands
from vllm_triage.parsers.launch.vllm_args import ArgReader, is_option
from vllm_triage.parsers.launch.wrappers import Anchor, basename, find_anchor


def analyse(words: list[Token], shell: Shell, ctx: Context) -> Launch | None:
    """The Launch a simple command starts, or None if it starts no vLLM server."""
    anchor = find_anchor(words)
    if anchor is None:
        return None
    if anchor.kind == "shell_c":
        return _analyse_shell_c(words, anchor, shell, ctx)
    if anchor.kind in ("docker_run", "podman_run"):
        return _analyse_docker(words, anchor, shell, ctx)
    launch = Launch(anchor.kind, words[anchor.index].line)
    # The environment the process inherits: exports so far (host shell, container env or a
    # supervisord environment= line, depending on which shell this is).
    launch.env.update(shell.exported)
    _add_prefix_env(launch, anchor)
    serve = anchor.kind == "vllm_serve"
    reader = ArgReader(
        launch,
        ctx.file,
        positional="model" if serve else "reject",
        entrypoint="vllm serve" if serve else "python -m vllm.entrypoints.openai.api_server",
    )
    reader.read(words[anchor.args_from :])
    read_config_file(launch, shell, ctx)
    if any(wrapper.split()[0] == "srun" for wrapper in anchor.wrappers):
        started_by_slurm(launch, "srun")
    return launch


def started_by_slurm(launch: Launch, how: str) -> None:
    """Slurm, not a shell, started the process: the launcher says so, the entrypoint is kept as a
    note (the vLLM arguments were read against it already)."""
    if launch.launcher in SLURM_STARTS:
        launch.notes.append(f"line {launch.line}: {DESCRIBE[launch.launcher]} started by Slurm ({how})")
        launch.launcher = SLURM


def _add_prefix_env(launch: Launch, anchor: Anchor) -> None:
    for token in anchor.prefix_env:
        name, _, value = token.text.partition("=")
        launch.env[name] = Value(value, token.line)
    for wrapper in anchor.wrappers:
        launch.notes.append(f"started through `{wrapper}`")


def _analyse_shell_c(words: list[Token], anchor: Anchor, shell: Shell, ctx: Context) -> Launch | None:
    """`bash -c "export X=1; vllm serve …"`: read the script as a small shell session."""
    script = words[anchor.args_from]
    child = Shell(dict(shell.variables), dict(shell.exported), shell.files)
    for token in anchor.prefix_env:
        name, _, value = token.text.partition("=")
        child.exported[name] = Value(value, token.line)
    launches = _script_launches(script.text, script.line, child, ctx)
    if not launches:
        return None
    launch = launches[-1]
    launch.notes.append(
        f"line {script.line}: launched by `{basename(words[anchor.index].text)} "
        f'{words[anchor.index + 1].text} "…"`'
    )
    return launch


def _analyse_docker(words: list[Token], anchor: Anchor, shell: Shell, ctx: Context) -> Launch | None:
    """A docker/podman run that starts vLLM (a `docker run … nvidia/cuda nvidia-smi` is not one)."""
    rest = words[anchor.args_from :]
    options, image_index = docker_options(rest)
    if image_index >= len(rest) or not runs_vllm(rest[image_index], rest[image_index + 1 :], options):
        return None
    launch = Launch(anchor.kind, words[anchor.index].line)
    for token in anchor.prefix_env:
        launch.notes.append(
            f"line {token.line}: {token.text.partition('=')[0]} set for the "
            f"{basename(words[anchor.index].text)} client, not inside the container"
        )
    entrypoint: Token | None = None
    for name, _option, value in options:
        if value is None:
            continue
        if name == "--entrypoint":
            entrypoint = value
        else:
            docker_option(launch, name, value, shell, anchor)
    gpus_from_visible_devices(launch)
    if shell.exported:
        launch.notes.append(
            "host exports are not passed into the container unless named with -e/--env: "
            + ", ".join(sorted(shell.exported))
        )
    image = rest[image_index]
    set_image(launch, image)
    container_command(launch, image, [entrypoint] if entrypoint else [], rest[image_index + 1 :], ctx, shell)
    return launch


def container_command(
    launch: Launch, image: Token, entrypoint: list[Token], args: list[Token], ctx: Context, shell: Shell
) -> None:
    """Read what runs in the container: an overridden entrypoint, a command given after the
    image, or (the usual case) vLLM arguments handed to the image's own entrypoint."""
    container_shell = Shell(exported=dict(launch.env), files=shell.files)
    program = entrypoint + args
    default, version = image_entrypoint(image.text)
    anchor = find_anchor(program) if program and not is_option(program[0].text) else None
    if anchor is not None:
        inner = analyse(program, container_shell, ctx)
        if inner is not None:
            if default and not entrypoint:
                launch.problems.append(
                    Finding(
                        "command-after-vllm-image",
                        "warning",
                        f"{image.text} already starts vLLM from its entrypoint; the command after the image "
                        "is passed to it as extra arguments",
                        [Provenance(ctx.file, program[0].line)],
                        "give only vLLM arguments after the image, or override --entrypoint",
                    )
                )
            _merge_inner(launch, inner)
            return
    if entrypoint:
        shown = " ".join(token.text for token in entrypoint)
        launch.notes.append(
            f"line {entrypoint[0].line}: entrypoint {shown!r} does not start vLLM "
            "directly; its arguments were not read"
        )
        return
    if default is None:
        launch.notes.append(
            f"line {image.line}: entrypoint of {image.text} assumed to be vLLM's "
            "(vllm serve on images from v0.11, the api_server module before)"
        )
    positional = "reject" if default == "api_server_module" else "model"
    shown = {
        "api_server_module": f"{image.text} (entrypoint python3 -m vllm.entrypoints.openai.api_server)",
        "vllm_serve": f"{image.text} (entrypoint vllm serve)",
    }.get(default or "", image.text)
    reader = ArgReader(launch, ctx.file, positional=positional, version=version, entrypoint=shown)
    reader.read(args)
    read_config_file(launch, container_shell, ctx)


DESCRIBE = {
    "vllm_serve": "vllm serve",
    "api_server_module": "python -m vllm.entrypoints.openai.api_server",
    "docker_run": "docker run",
    "podman_run": "podman run",
    SLURM: "vLLM under Slurm",
}


def _merge_inner(launch: Launch, inner: Launch) -> None:
    launch.args.update(inner.args)
    launch.env.update(inner.env)
    launch.notes.extend(inner.notes)
    launch.problems.extend(inner.problems)
    launch.notes.append(f"line {inner.line}: the container runs {DESCRIBE[inner.launcher]}")


def walk(commands: list[Simple], shell: Shell, ctx: Context) -> list[Launch]:
    launches = []
    for command in commands:
        if _assignments(command.words, shell):
            continue
        launch = analyse(command.words, shell, ctx)
        if launch is not None:
            launch.notes.extend(command.notes)
            launches.append(launch)
        else:
            _note_environment(command.words, ctx)
    return launches


def _assignments(words: list[Token], shell: Shell) -> bool:
    """`export A=1`, `A=1`, `declare -x A=1`, `unset A`, cmd.exe `set A=1`; True if handled."""
    head = words[0].text
    if head in ("export", "declare", "typeset", "setx"):
        for word in words[1:]:
            if word.text.startswith("-"):
                continue
            match = ASSIGNMENT.match(word.text)
            if match:
                value = Value(match.group(2), word.line)
                shell.variables[match.group(1)] = shell.exported[match.group(1)] = value
            elif head == "setx" and word is words[1] and len(words) >= 3:
                shell.exported[word.text] = Value(words[2].text, words[2].line)
                break
            elif word.text in shell.variables:
                shell.exported[word.text] = shell.variables[word.text]
        return True
    if all(ASSIGNMENT.match(word.text) for word in words):
        for word in words:
            name, _, assigned = word.text.partition("=")
            shell.variables[name] = Value(assigned, word.line)
        return True
    if head.lower() == "set" and len(words) == 2 and ASSIGNMENT.match(words[1].text):
        name, _, assigned = words[1].text.partition("=")
        shell.variables[name] = shell.exported[name] = Value(assigned, words[1].line)
        return True
    if head == "unset":
        for word in words[1:]:
            shell.variables.pop(word.text, None)
            shell.exported.pop(word.text, None)
        return True
    return False


def _note_environment(words: list[Token], ctx: Context) -> None:
    """Python environments activated before the launch matter when versions are compared."""
    texts = [w.text for w in words]
    if (
        texts[:2] in (["conda", "activate"], ["mamba", "activate"], ["micromamba", "activate"])
        and len(texts) > 2
    ):
        ctx.notes.append(f"line {words[0].line}: conda environment {texts[2]} activated")
    elif texts[0] in ("source", ".") and len(texts) > 1 and "activate" in texts[1]:
        ctx.notes.append(f"line {words[0].line}: Python environment {texts[1]} activated")


def _script_launches(script: str, first_line: int | None, shell: Shell, ctx: Context) -> list[Launch]:
    """The launches in a script given as one string (`sh -c "…"`, a YAML block scalar): lines,
    continuations and comments as in a file, line numbers counted from where the string starts."""
    lines = [
        Line(first_line + offset if first_line else 0, text, comment=text.lstrip().startswith("#"))
        for offset, text in enumerate(script.splitlines())
    ]
    launches: list[Launch] = []
    for logical in logical_commands(lines, False, ctx.notes):
        tokens = tokenize(logical, shell.lookup, ctx.notes)
        if first_line is None:
            for token in tokens:
                token.line = None
        launches.extend(walk(simple_commands(tokens), shell, ctx))
    return launches
