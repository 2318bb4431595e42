"""A shell paste as a session: variables and exports carried from command to command, every
launch found, the last live one chosen."""

from __future__ import annotations

import re

from vllm_triage.parsers.base import ParseResult
from vllm_triage.parsers.launch.analyse import walk
from vllm_triage.parsers.launch.lexer import Logical, simple_commands, tokenize, unquote_simple
from vllm_triage.parsers.launch.model import KIND_PREFIX, Context, Launch, Shell, Value, emit
from vllm_triage.parsers.launch.paste import (
    LAUNCH_HINT,
    POWERSHELL_ENV,
    logical_commands,
    prepare_lines,
    take_heredocs,
)


def shell_launches(
    text: str, file: str = "", sniff: bool = False, _nested: bool = False
) -> tuple[list[Launch], Context, list[int]]:
    """Every vLLM launch in a shell paste, in order; plus lines of commented-out launches."""
    ctx = Context(file)
    lines, prompted = prepare_lines(text)
    shell = Shell()
    lines = take_heredocs(lines, shell)
    commented = [line.number for line in lines if line.comment and _COMMENTED_LAUNCH.search(line.text)]
    launches: list[Launch] = []
    logicals = logical_commands(lines, prompted, ctx.notes)
    if prompted and not any(LAUNCH_HINT.search(logical.text) for logical in logicals):
        # Prompts were shown only for other commands (`$ nvidia-smi`); the launch was pasted
        # without one, so every line may be a command after all.
        logicals = logical_commands(lines, False, ctx.notes)
    _read_logicals(logicals, shell, ctx, launches, sniff)
    if prompted and not launches:
        # The prompted commands launch nothing, but their output may show the command line of the
        # running server (`$ ps -ef | grep vllm`, `kubectl exec … -- ps -lefww`): read every line.
        # Each output line is whole (a process listing is one line a process): no wrap joining.
        _read_logicals(logical_commands(lines, False, [], join_wraps=False), shell, ctx, launches, sniff)
    inline = {line.number for line in lines if line.inline}
    if any(launch.line not in inline for launch in launches):
        # a command in a code span of the prose (`vllm serve ...`) is a mention beside a real one
        launches = [launch for launch in launches if launch.line not in inline]
    if not launches and not _nested:
        launches = _shown_scripts(shell, ctx, sniff)
    return launches, ctx, commented


def _read_logicals(
    logicals: list[Logical], shell: Shell, ctx: Context, launches: list[Launch], sniff: bool
) -> None:
    for logical in logicals:
        powershell = POWERSHELL_ENV.match(logical.text)
        if powershell:
            value = Value(unquote_simple(powershell.group(2)), logical.lines[0])
            shell.variables[powershell.group(1)] = shell.exported[powershell.group(1)] = value
            continue
        tokens = tokenize(logical, shell.lookup, ctx.notes)
        launches.extend(walk(simple_commands(tokens), shell, ctx))
        if sniff and launches:
            return


def _shown_scripts(shell: Shell, ctx: Context, sniff: bool) -> list[Launch]:
    """`$ cat start.sh` pastes the script that launches vLLM as the output of a prompted command:
    when the commands themselves launch nothing, a shown shell script is read as the session."""
    launches: list[Launch] = []
    for name, (body, first) in shell.files.items():
        if not (name.endswith((".sh", ".bash", ".slurm", ".sbatch")) or body.startswith("#!")):
            continue
        # leading newlines keep the script's words on the paste's own line numbers
        found, inner, _ = shell_launches("\n" * (first - 1) + body, ctx.file, sniff, _nested=True)
        if found:
            ctx.notes.append(f"line {first}: the launch is read from the script shown by `cat {name}`")
        ctx.notes.extend(inner.notes)
        launches.extend(found)
    return launches


_COMMENTED_LAUNCH = re.compile(r"\bvllm\s+serve\b|vllm\.entrypoints\.|\b(?:docker|podman)\s+run\b")


def parse_shell(text: str, file: str) -> ParseResult:
    result = ParseResult(kind=f"{KIND_PREFIX}.shell")
    launches, ctx, commented = shell_launches(text, file)
    if not launches:
        result.notes.append("no vLLM launch found in the shell text")
        result.notes.extend(ctx.notes)
        return result
    chosen = launches[-1]
    emit(chosen, result, file)
    for other in launches[:-1]:
        result.notes.append(
            f"line {other.line}: another launch ({other.launcher}) not used; "
            f"the last live one (line {chosen.line}) is"
        )
    for line in commented:
        result.notes.append(f"line {line}: commented-out launch ignored")
    result.notes.extend(ctx.notes)
    return result
