"""`vllm-triage series T1 T2 T3 …`: a reproduction series judged against the method."""

from __future__ import annotations

import click

from vllm_triage.cli_limits import input_limit_options
from vllm_triage.cli_options import COMPARE_RULES, rules_option

EXIT_CODES = (
    "Exit codes: 0 every step changed at most one variable; 2 usage error; 3 confounded (a step changed "
    "more than one variable); 2 also for bad input (missing path, fewer than two trials, not a bundle "
    "or log, corrupt archive), as the diff/series contract says; 70 internal error."
)


@click.command("series", epilog=EXIT_CODES)
@click.argument("trials", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["text", "json", "md"]), default="text", show_default=True)
@click.option("--show-noise", is_flag=True, help="Also list, per step, the noise left out.")
@rules_option(COMPARE_RULES)
@input_limit_options
def command(trials: tuple[str, ...], fmt: str, show_noise: bool, rule_dirs: tuple[str, ...]) -> None:
    """Judge trials in order: per step the knob(s) changed and the outcome, steps that changed more
    than one variable, repeats of one fingerprint (stable or intermittent), where the series broke
    the reintroduction order, and whether prefix caching produced hits once enabled.

    TRIALS: bundles (folders, archives, logs) in the order they were run, or one folder holding a
    folder per trial (ordered by the start time their bundle.toml records, else by name).
    """
    from vllm_triage.commands.comparison_output import emit_comparison
    from vllm_triage.commands.output import run_action
    from vllm_triage.compare.series import series_paths
    from vllm_triage.core.errors import ExitCode
    from vllm_triage.render.compare_text import render_series_text

    result = run_action(lambda: series_paths(list(trials), list(rule_dirs)), input_exit=ExitCode.USAGE)
    emit_comparison(result, fmt, show_noise, "series.md.j2", "s", render_series_text)
