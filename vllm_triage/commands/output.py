"""What every command shares on its way out: the text width, colour, `--quiet`, notes on stderr,
JSON, and the exit (run_action: a failure as one line and its exit code).

Why one module: the width rule (the terminal's, 80 when piped, `--width N` over both) and quiet
mode must be the same for every command, and cli.py is shared by everyone who adds an option.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import traceback
from collections.abc import Callable
from typing import Any

import click

from vllm_triage import __version__
from vllm_triage.core.errors import ExitCode, TriageError
from vllm_triage.render.text_layout import DEFAULT_WIDTH, MIN_WIDTH

_QUIET = {"on": False}
_WIDTH: dict[str, int | None] = {"given": None}  # --width of a command that does not take it as a parameter


def text_width(given: int | None = None) -> int:
    """`--width` if given; else the terminal's width on a terminal; else 80 (a pipe, a file)."""
    given = given or _WIDTH["given"]
    if given:
        return max(given, MIN_WIDTH)
    if sys.stdout.isatty():
        return max(shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns, MIN_WIDTH)
    return DEFAULT_WIDTH


width_option = click.option(
    "--width",
    type=click.IntRange(min=MIN_WIDTH),
    default=None,
    help="Wrap text to N columns (default: the terminal's width; 80 when piped).",
)


def use_colour() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def emit_json(data: Any) -> None:
    """A JSON payload on stdout; every versioned payload says which tool version wrote it."""
    if isinstance(data, dict) and "schema" in data:
        data.setdefault("tool_version", __version__)
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def note(message: str) -> None:
    """An informational line on stderr (counts, where a file was written); silent with --quiet.
    Errors and safety warnings are not notes: they are printed whatever --quiet says."""
    if not _QUIET["on"]:
        click.echo(message, err=True)


def is_quiet() -> bool:
    return _QUIET["on"]


def _set_quiet(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value:
        return
    # Quiet: the exit code carries the verdict; stdout goes nowhere, files named by -o/--out are
    # still written, errors still reach stderr. Restored when the command ends (tests run many).
    _QUIET["on"] = True
    previous = sys.stdout
    sink = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - closed with the context
    sys.stdout = sink

    def restore() -> None:
        sys.stdout = previous
        sink.close()
        _QUIET["on"] = False

    ctx.call_on_close(restore)


def quiet_option() -> click.Option:
    return click.Option(
        ["-q", "--quiet"],
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=_set_quiet,
        help="Print nothing but errors: the exit code carries the verdict (files named by -o/--out "
        "are still written).",
    )


def add_quiet_everywhere(group: click.Group) -> None:
    """Give every command of the tree `-q/--quiet` (once; a command that has one keeps its own)."""
    for command in group.commands.values():
        if isinstance(command, click.Group):
            add_quiet_everywhere(command)
            continue
        names = {name for param in command.params for name in getattr(param, "opts", [])}
        if "--quiet" not in names and "-q" not in names:
            command.params.append(quiet_option())


def _set_width(ctx: click.Context, _param: click.Parameter, value: int | None) -> None:
    if value is None:
        return
    _WIDTH["given"] = value
    ctx.call_on_close(lambda: _WIDTH.update(given=None))


def add_width(command: click.Command) -> None:
    """Give a text-printing command `--width N` without changing its signature (its renderer asks
    text_width()); a command that has its own keeps it."""
    if any("--width" in getattr(p, "opts", []) for p in command.params):
        return
    command.params.append(
        click.Option(
            ["--width"],
            type=click.IntRange(min=MIN_WIDTH),
            default=None,
            expose_value=False,
            callback=_set_width,
            help="Wrap text to N columns (default: the terminal's width; 80 when piped).",
        )
    )


def run_action(action: Callable[[], Any], input_exit: int | None = None) -> Any:
    """Run a command's action: every failure becomes one line on stderr and its exit code, never a
    traceback. The one place a TriageError meets the terminal.

    `input_exit` replaces the exit code of bad input for commands whose contract says otherwise
    (diff and series: 2 for a usage or input error, so that 3 stays "confounded")."""
    try:
        return action()
    except TriageError as exc:
        click.echo(exc.one_line(), err=True)
        sys.exit(input_exit if input_exit is not None and exc.exit_code == ExitCode.INPUT else exc.exit_code)
    except KeyboardInterrupt:
        click.echo("vllm-triage: interrupted", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        # `vllm-triage … | head`: the reader has what it wanted; not an error worth a line. Point
        # stdout at /dev/null so the interpreter's final flush does not raise again.
        # (A test runner's buffer has no file descriptor: then there is nothing left to flush.)
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(ExitCode.OK)
    except BaseException as exc:  # a bug: one line, the traceback only on request
        if isinstance(exc, (SystemExit, GeneratorExit)):
            raise
        internal_error(exc)


def internal_error(exc: BaseException) -> None:
    """One line and exit 70 for anything unexpected, a Rust panic from polars (a BaseException)
    included; MemoryError says what it means."""
    if os.environ.get("VLLM_TRIAGE_DEBUG"):
        traceback.print_exception(exc)
    if isinstance(exc, MemoryError):
        what = "out of memory (lower --max-input or --max-line, or give the machine more memory)"
    else:
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        what = f"{type(exc).__name__}: {first}"
    click.echo(f"vllm-triage: internal-error: {what} (set VLLM_TRIAGE_DEBUG=1 for the traceback)", err=True)
    sys.exit(ExitCode.INTERNAL)
