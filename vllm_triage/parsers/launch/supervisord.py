"""supervisord `[program:x]` sections whose `command=` starts vLLM."""

from __future__ import annotations

import re

from vllm_triage.parsers.base import ParseResult, clean_paste
from vllm_triage.parsers.launch.analyse import DESCRIBE, analyse
from vllm_triage.parsers.launch.lexer import Logical, tokenize, unquote_simple
from vllm_triage.parsers.launch.model import KIND_PREFIX, Context, Launch, Shell, Value, emit

_SECTION = re.compile(r"^\s*\[([^\]]+)\]\s*$")


_INI_KEY = re.compile(r"^([A-Za-z_][\w.-]*)\s*[=:]\s*(.*)$")


_INLINE_COMMENT = re.compile(r"\s+[;#].*$")


def _ini_sections(text: str) -> list[tuple[str, dict[str, Logical]]]:
    """[(section, {key: value with the line of each piece})]; indented lines continue a value."""
    sections: list[tuple[str, dict[str, Logical]]] = []
    last_key: str | None = None
    for line in clean_paste(text, keep_prompts=True):
        stripped = line.text.strip()
        if not stripped or stripped.startswith((";", "#")):
            continue
        header = _SECTION.match(line.text)
        if header:
            sections.append((header.group(1).strip(), {}))
            last_key = None
            continue
        if not sections:
            continue
        values = sections[-1][1]
        if line.text[:1] in " \t" and last_key is not None:
            values[last_key].add(line.number, _INLINE_COMMENT.sub("", stripped), "\n")
            continue
        match = _INI_KEY.match(stripped)
        if match:
            last_key = match.group(1).lower()
            values[last_key] = Logical()
            values[last_key].add(line.number, _INLINE_COMMENT.sub("", match.group(2)), "")
    return sections


def _supervisord_environment(text: str, line: int) -> dict[str, Value]:
    """`environment=A="1",B="x,y",C=3` — commas inside quotes belong to the value."""
    env: dict[str, Value] = {}
    for item in re.findall(r"""(?:[^,"']|"[^"]*"|'[^']*')+""", text):
        name, eq, value = item.strip().partition("=")
        if eq and name:
            env[name.strip()] = Value(unquote_simple(value), line)
    return env


def parse_supervisord(text: str, file: str) -> ParseResult:
    result = ParseResult(kind=f"{KIND_PREFIX}.supervisord")
    ctx = Context(file)
    launches: list[tuple[str, Launch]] = []
    for name, values in _ini_sections(text):
        if not name.startswith("program:") or "command" not in values:
            continue
        launch = _supervisord_program(values, ctx)
        if launch is not None:
            launches.append((name.split(":", 1)[1], launch))
    if not launches:
        result.notes.append("no supervisord program runs vLLM")
        return result
    # Programs run side by side (not retries of one another), so the first is the primary one.
    program, chosen = launches[0]
    chosen.notes.insert(0, f"[program:{program}]")
    emit(chosen, result, file)
    for other, launch in launches[1:]:
        result.notes.append(
            f"[program:{other}] (line {launch.line}) also runs vLLM; the first program was read"
        )
    result.notes.extend(ctx.notes)
    return result


def _supervisord_program(values: dict[str, Logical], ctx: Context) -> Launch | None:
    command = values["command"]
    shell = Shell()
    if "environment" in values:
        environment = values["environment"]
        shell.exported.update(
            _supervisord_environment(environment.text.replace("\n", " "), environment.lines[0])
        )
    if "%(" in command.text:
        ctx.notes.append(f"line {command.lines[0]}: supervisord %(…)s expansions kept as written")
    words = tokenize(command, None, ctx.notes)
    inner = analyse(words, shell, ctx)
    if inner is None:
        return None
    inner.notes.insert(0, f"line {inner.line}: the program runs {DESCRIBE[inner.launcher]}")
    inner.launcher = "supervisord"
    if "directory" in values:
        inner.notes.append(f"working directory {values['directory'].text}")
    return inner
