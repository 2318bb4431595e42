"""The command line: one thin function per command (arguments, one call, render).

Exit codes: 0 ok · 1 check: bundle incomplete / rules check failed · 2 usage error ·
3 diff/series confounded · 4 bad input (missing, empty, binary, not a log, corrupt archive) ·
70 internal error.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from vllm_triage import __version__, cli_options
from vllm_triage.cli_limits import input_limit_options
from vllm_triage.commands.output import (
    add_quiet_everywhere,
    add_width,
    emit_json,
    internal_error,
    note,
    run_action,
    text_width,
    width_option,
)
from vllm_triage.core.errors import ExitCode, TriageError

EXIT_CODES_HELP = (
    "Exit codes: 0 ok; 1 incomplete/failed check; 2 usage error; 3 confounded comparison; "
    "4 bad input (missing, empty, binary, not the expected format, corrupt archive); 70 internal error."
)
FORMATS = ["text", "json", "md"]


class LazyGroup(click.Group):
    """A group whose commands in their own modules (vllm_triage.commands.COMMAND_MODULES) are
    imported when named, not at start-up: `vllm-triage triage x.log` imports none of them.
    `--help` lists them all, which imports them all (the listing needs their short help)."""

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(
            {*super().list_commands(ctx), *(n for n in list(self.lazy) if self._load(n) is not None)}
        )

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, cmd_name) or self._load(cmd_name)

    def _load(self, name: str) -> click.Command | None:
        module_name = self.lazy.get(name)
        if module_name is None:
            return self.commands.get(name)
        import importlib

        # Every module of COMMAND_MODULES exists: a missing one is a bug to raise, not to skip.
        command: click.Command = importlib.import_module(module_name).command
        del self.lazy[name]
        self.add_command(command, name)
        _decorate(command)
        return command


def _command_modules() -> dict[str, str]:
    """Command name -> module: a module is named for its command (lnav_format: `lnav-format`)."""
    from vllm_triage.commands import COMMAND_MODULES

    return {name.rsplit(".", 1)[-1].replace("_", "-"): name for name in COMMAND_MODULES}


@click.group(
    cls=LazyGroup,
    lazy=_command_modules(),
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=EXIT_CODES_HELP,
)
@click.version_option(__version__, prog_name="vllm-triage")
def cli() -> None:
    """Offline forensic analyzer for failed vLLM deployments."""


rules_option = cli_options.rules_option("Extra rule directory (repeatable); its ids override built-ins.")


def _complete_sample(_ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[str]:
    from vllm_triage.resources import samples

    return [name for name in samples() if name.startswith(incomplete)]


sample_option = click.option(
    "--sample",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="NAME",
    shell_complete=_complete_sample,
    help="Use a sample bundle shipped with the tool; `--sample` alone lists them.",
)


def _paths_or_sample(paths: tuple[str, ...], sample: str | None) -> list[str]:
    from vllm_triage.commands.run_output import sample_paths

    if sample is not None:
        return list(paths) + sample_paths(sample)
    if not paths:
        raise click.UsageError("missing argument 'PATHS...' (or --sample NAME)")
    return list(paths)


@cli.command(epilog=EXIT_CODES_HELP)
@click.argument("paths", nargs=-1)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option(
    "-v", "--verbose", is_flag=True, help="Show everything: the whole block, full paths, every consequence."
)
@width_option
@sample_option
@rules_option
@input_limit_options
def triage(
    paths: tuple[str, ...],
    fmt: str,
    verbose: bool,
    width: int | None,
    sample: str | None,
    rule_dirs: tuple[str, ...],
) -> None:
    """Find the first (root) error block of a vLLM log and the phase it failed in.

    PATHS: log files, bundle folders, .tar.gz/.tgz/.zip bundles, .gz logs, or - for stdin.
    A folder of several bundles is triaged one run at a time.
    """
    from vllm_triage.commands.run_output import run_triage

    chosen = _paths_or_sample(paths, sample)
    sys.exit(
        run_action(
            lambda: run_triage(chosen, fmt, verbose, list(rule_dirs), text_width(width), sys.stdin.buffer)
        )
    )


@cli.command(epilog=EXIT_CODES_HELP)
@click.argument("paths", nargs=-1)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@width_option
@sample_option
@rules_option
@input_limit_options
def fingerprint(
    paths: tuple[str, ...], fmt: str, width: int | None, sample: str | None, rule_dirs: tuple[str, ...]
) -> None:
    """Read the environment of a run (host, container, image, launch, env, request) with provenance,
    and check it: driver vs CUDA build, GPU visibility, shared GPUs, recipes, baseline hygiene.

    PATHS: artefact files (nvidia-smi, docker inspect, launch command, collect_env, env, request,
    vLLM log), bundle folders, .tar.gz/.tgz/.zip bundles, or - for stdin.
    A folder of several bundles is read one run at a time.
    """
    from vllm_triage.commands.run_output import run_fingerprint

    chosen = _paths_or_sample(paths, sample)
    sys.exit(
        run_action(lambda: run_fingerprint(chosen, fmt, list(rule_dirs), text_width(width), sys.stdin.buffer))
    )


@cli.group()
def rules() -> None:
    """List and check the rule files."""


@rules.command("list")
@click.option("--kind", type=click.Choice(["marker", "error", "consequence", "noise", "check"]))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@rules_option
def rules_list(kind: str | None, fmt: str, rule_dirs: tuple[str, ...]) -> None:
    """List the rules in force (built-in plus --rules directories)."""
    from vllm_triage.engine.rules import load

    ruleset = run_action(lambda: load(list(rule_dirs)))
    chosen = [r for r in ruleset.rules if kind is None or r.kind == kind]
    if fmt == "json":
        emit_json(
            [
                {
                    "id": r.id,
                    "kind": r.kind,
                    "phase": r.phase,
                    "category": r.category,
                    "priority": r.priority,
                    "file": r.file,
                    "pattern": r.pattern,
                }
                for r in chosen
            ]
        )
        return
    for r in sorted(chosen, key=lambda r: (r.kind, r.phase, r.id)):
        click.echo(f"{r.kind:<12} {r.phase:<15} {r.id:<40} {r.category}")
    note(f"{len(chosen)} rules from {len(ruleset.files)} files")


@rules.command("check")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@rules_option
def rules_check(fmt: str, rule_dirs: tuple[str, ...]) -> None:
    """Validate every rule file: fields, patterns (both regex engines, hostile input), examples."""
    from vllm_triage.data_check import check_data
    from vllm_triage.engine.check import check, is_warning, problem_json, problem_line

    problems, n_files, n_rules = run_action(lambda: check(list(rule_dirs)))
    problems = problems + run_action(lambda: check_data(list(rule_dirs)))
    if fmt == "json":
        emit_json(
            {
                "files": n_files,
                "rules": n_rules,
                "problems": [problem_json(p) for p in problems],
            }
        )
    else:
        for problem in problems:
            click.echo(problem_line(problem))
    errors = [p for p in problems if not is_warning(p)]
    warned = f", {len(problems) - len(errors)} warning(s)" if len(errors) < len(problems) else ""
    note(f"{n_rules} rules in {n_files} files: {len(errors)} problem(s){warned}")
    if errors:
        sys.exit(ExitCode.INCOMPLETE)


# Text wrapped to the width like triage (check prints commands to copy: not wrapped).
_WIDTH_COMMANDS = ("diff", "series")


def _decorate(command: click.Command) -> None:
    """What every command gets once registered: -q/--quiet, and --width for the text commands."""
    if isinstance(command, click.Group):
        add_quiet_everywhere(command)
    else:
        group = click.Group(commands={command.name or "": command})
        add_quiet_everywhere(group)
    if command.name in _WIDTH_COMMANDS:
        add_width(command)


add_quiet_everywhere(cli)


def main() -> None:
    # Usage errors are one line too (click would print the usage block first); --help still works.
    try:
        cli.main(prog_name="vllm-triage", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        sys.exit(ExitCode.USAGE)
    except click.UsageError as exc:
        command = exc.ctx.command_path if exc.ctx else "vllm-triage"
        click.echo(f"vllm-triage: usage-error: {exc.format_message()} (see `{command} --help`)", err=True)
        sys.exit(ExitCode.USAGE)
    except click.exceptions.Abort:
        click.echo("vllm-triage: interrupted", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"vllm-triage: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except TriageError as exc:  # raised outside _run (while rendering, by an option callback)
        click.echo(exc.one_line(), err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("vllm-triage: interrupted", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    except BaseException as exc:  # the top-level guard: never a traceback
        if isinstance(exc, (SystemExit, GeneratorExit)):
            raise
        internal_error(exc)
