"""`vllm-triage report BUNDLE… [-o FILE] --format md|html|json | --field NAME`: the upstream-ready
report; `--field` prints one field of vLLM's bug-report form alone."""

from __future__ import annotations

import sys

import click

from vllm_triage.cli_limits import input_limit_options
from vllm_triage.cli_options import LOG_AND_COMPARE_RULES, rules_option

EPILOG = (
    "Exit codes: 0 written; 1 the leak scan found something secret-looking in the redacted report "
    "(nothing written); 2 usage error; 4 bad input (missing path, empty or binary file, corrupt archive); "
    "70 internal error."
)


@click.command("report", epilog=EPILOG)
@click.argument("bundles", nargs=-1, required=True)
@click.option(
    "-o",
    "--output",
    "output",
    type=click.Path(dir_okay=False, writable=True),
    help="Write the report to FILE (default: standard output).",
)
@click.option("--format", "fmt", type=click.Choice(["md", "html", "json"]), default="md", show_default=True)
@click.option(
    "--field",
    type=click.Choice(["title", "environment", "bug"]),
    help="Print only this field of vLLM's bug-report form, ready to paste (Markdown): title, "
    "environment ('Your current environment'), bug ('🐛 Describe the bug').",
)
@click.option(
    "--redact/--no-redact",
    default=True,
    show_default=True,
    help="Replace secrets (tokens, keys, passwords…) with stable placeholders, then leak-scan the output.",
)
@rules_option(LOG_AND_COMPARE_RULES)
@input_limit_options
def command(
    bundles: tuple[str, ...],
    output: str | None,
    fmt: str,
    field: str | None,
    redact: bool,
    rule_dirs: tuple[str, ...],
) -> None:
    """Render the report to file upstream: Markdown for vLLM's bug-report form (which takes no
    blank issue), one labelled block per field (title; your current environment: collect_env;
    describe the bug: the launch command, the request, the first error block with its traceback,
    what was tried one variable at a time), each sized for GitHub; one self-contained HTML file
    with a timeline of each run (milestones per phase, where the first error struck; runs side by
    side); or JSON. Secrets are redacted by default.

    BUNDLES: bundle folders, .tar.gz/.tgz/.zip bundles, files, or - for stdin; several bundles (or
    one folder holding a folder per trial) are the trials of a series, in order.
    """
    from vllm_triage.commands.output import run_action
    from vllm_triage.commands.report_output import write_report

    if field and fmt != "md":
        raise click.UsageError(f"--field prints one field of the form as Markdown; drop --format {fmt}")
    text = run_action(
        lambda: write_report(
            list(bundles),
            fmt,
            output,
            redact=redact,
            rule_dirs=list(rule_dirs),
            stdin=sys.stdin.buffer,
            field=field,
        )
    )
    if output is None:
        click.echo(text, nl=False)
    else:
        from vllm_triage.commands.output import note

        note(f"vllm-triage: wrote {output}")
    if not redact:
        click.echo(
            "vllm-triage: the report is NOT redacted (--no-redact): review it before sharing", err=True
        )
