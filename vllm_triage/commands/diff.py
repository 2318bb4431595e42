"""`vllm-triage diff RUN_A RUN_B`: what changed between two runs, was it only one thing, and is it
still the same failure."""

from __future__ import annotations

import click

from vllm_triage.cli_limits import input_limit_options
from vllm_triage.cli_options import COMPARE_RULES, rules_option

EXIT_CODES = (
    "Exit codes: 0 identical, or one variable changed; 2 usage error; 3 confounded (more than one "
    "variable changed: re-test one at a time); 2 also for bad input (missing path, empty, not a bundle "
    "or log, corrupt archive), as the diff/series contract says; 70 internal error."
)


@click.command("diff", epilog=EXIT_CODES)
@click.argument("run_a")
@click.argument("run_b")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "md"]), default="text", show_default=True)
@click.option(
    "--show-noise", is_flag=True, help="Also list the noise, explicit defaults and one-sided values left out."
)
@rules_option(COMPARE_RULES)
@input_limit_options
def command(run_a: str, run_b: str, fmt: str, show_noise: bool, rule_dirs: tuple[str, ...]) -> None:
    """Compare two runs: the knobs that changed (derived facts grouped under the knob that explains
    them), drift, the verdict (identical / one-variable / confounded) with the order to re-test in,
    and whether the failure is the same.

    RUN_A, RUN_B: bundle folders, .tar.gz/.tgz/.zip bundles, or single logs; A is the reference.
    """
    from vllm_triage.commands.comparison_output import emit_comparison
    from vllm_triage.commands.output import run_action
    from vllm_triage.compare.diff import diff_paths
    from vllm_triage.core.errors import ExitCode
    from vllm_triage.render.compare_text import render_diff_text

    result = run_action(lambda: diff_paths(run_a, run_b, list(rule_dirs)), input_exit=ExitCode.USAGE)
    emit_comparison(result, fmt, show_noise, "diff.md.j2", "d", render_diff_text)
