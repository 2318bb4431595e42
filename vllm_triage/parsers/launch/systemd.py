"""systemd service units whose `ExecStart=` starts vLLM.

Read as systemd.unit(5) / systemd.service(5) / systemd.exec(5) define them:
- `#` or `;` at the start of a line is a comment; a line ending in a backslash goes on with the next
  one (the backslash becomes a space);
- `Environment=` takes a space-separated list of assignments, each of which may be quoted whole
  (`Environment="A=x y" B=z`); it may be given many times, and an empty one resets the list;
- `EnvironmentFile=` names a file that is not in the paste (a leading `-` only makes it optional);
- `ExecStart=` may start with the prefixes `@ - : + !` (`!!`); its `$NAME` / `${NAME}` come from
  `Environment=`; `%` specifiers (`%h`, `%i`) are systemd's and stay as written.

The unit says how vLLM was started (`vllm serve`, the api_server module, `docker run` …): that is the
launcher; the unit itself is named in a note.
"""

from __future__ import annotations

import re

from vllm_triage.parsers.base import ParseResult, clean_paste
from vllm_triage.parsers.launch.analyse import DESCRIBE, analyse
from vllm_triage.parsers.launch.lexer import Logical, tokenize, tokenize_string
from vllm_triage.parsers.launch.model import KIND_PREFIX, Context, Shell, Value, emit

UNIT_SECTION = re.compile(r"^[ \t]*\[Service\][ \t]*\r?$", re.M)  # [ \t]: linear on blank lines
EXEC_START = re.compile(r"^[ \t]*ExecStart[ \t]*=[ \t]*\S", re.M)

_SECTION = re.compile(r"^\s*\[([^\]]+)\]\s*$")
_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9]*)\s*=\s*(.*)$")
_EXEC_PREFIX = re.compile(r"^[@\-:+!]+")


def looks_like_unit(text: str) -> bool:
    return bool(UNIT_SECTION.search(text) and EXEC_START.search(text))


def _service_entries(text: str) -> list[tuple[str, Logical]]:
    """(key, value) of the [Service] section in order; a continued value keeps each piece's line."""
    entries: list[tuple[str, Logical]] = []
    section = ""
    pending: Logical | None = None
    for line in clean_paste(text, keep_prompts=True):
        stripped = line.text.strip()
        if pending is not None:
            pending.add(line.number, stripped.removesuffix("\\").strip(), " ")
            if not stripped.endswith("\\"):
                pending = None
            continue
        if not stripped or stripped.startswith(("#", ";")):
            continue
        header = _SECTION.match(stripped)
        if header:
            section = header.group(1).strip()
            continue
        match = _KEY.match(stripped)
        if section != "Service" or not match:
            continue
        key, first = match.group(1), match.group(2).strip()
        if key.startswith("Exec"):
            # the prefixes say how systemd runs the command (ignore failure, full privileges …)
            first = _EXEC_PREFIX.sub("", first)
        value = Logical()
        value.add(line.number, first.removesuffix("\\").strip(), "")
        entries.append((key, value))
        if first.endswith("\\"):
            pending = value
    return entries


def _environment(value: str, line: int, shell: Shell) -> None:
    """One `Environment=` line into the unit's environment (an empty one resets it)."""
    if not value:
        shell.exported.clear()
        shell.variables.clear()
        return
    # systemd splits on whitespace outside quotes and removes the quotes, as a shell would
    for token in tokenize_string(value, line):
        name, eq, assigned = token.text.partition("=")
        if eq and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            shell.exported[name] = shell.variables[name] = Value(assigned, line)


def parse_systemd(text: str, file: str) -> ParseResult:
    result = ParseResult(kind=f"{KIND_PREFIX}.systemd")
    ctx = Context(file)
    shell = Shell()
    launch = None
    script: tuple[str, int] | None = None
    for key, entry in _service_entries(text):
        value, line = entry.text, entry.lines[0]
        if key == "Environment":
            _environment(value, line, shell)
        elif key == "EnvironmentFile":
            ctx.notes.append(f"line {line}: variables from EnvironmentFile={value} are not in the paste")
        elif key == "ExecStart" and launch is None and value:
            if "%" in value:
                ctx.notes.append(f"line {line}: systemd % specifiers kept as written")
            launch = analyse(tokenize(entry, shell.lookup, ctx.notes), shell, ctx)
            if launch is None and script is None:
                script = (value, line)
        elif key == "ExecStart" and launch is not None:
            ctx.notes.append(f"line {line}: a further ExecStart= (Type=oneshot) not read")
    if launch is None:
        if script is not None and shell.exported:
            # A unit that starts vLLM through a script of its own (`ExecStart=/srv/start-vllm.sh`):
            # the command is in the script, but the unit's Environment= is what vLLM runs with.
            command, line = script
            result.notes.append(
                f"line {line}: ExecStart= runs {command}, not vLLM itself: the vLLM command is in "
                "that script (not in the paste); the unit's Environment= reaches it"
            )
            for name, assigned in shell.exported.items():
                result.knob(f"env.{name}", assigned.value, file, assigned.line)
        else:
            result.notes.append("no ExecStart= of the [Service] section starts vLLM")
        result.notes.extend(ctx.notes)
        return result
    launch.notes.insert(0, f"line {launch.line}: the systemd unit runs {DESCRIBE[launch.launcher]}")
    emit(launch, result, file)
    result.notes.extend(ctx.notes)
    return result
