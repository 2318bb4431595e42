"""`vllm-triage check BUNDLE…`: the pre-filing checklist of a bundle (or of the trials of a series)."""

from __future__ import annotations

import sys

import click

from vllm_triage.cli_limits import input_limit_options
from vllm_triage.cli_options import LOG_AND_COMPARE_RULES, rules_option

EPILOG = (
    "Exit codes: 0 every item passes (complete); 1 an item fails or is missing (incomplete); 2 usage "
    "error; 4 bad input (missing path, empty or binary file, corrupt archive); 70 internal error."
)


@click.command("check", epilog=EPILOG)
@click.argument("bundles", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@rules_option(LOG_AND_COMPARE_RULES)
@input_limit_options
def command(bundles: tuple[str, ...], fmt: str, rule_dirs: tuple[str, ...]) -> None:
    """Is the bundle ready to file upstream? Each checklist item is pass, fail or missing, with its
    evidence (file:line) or what to collect and the exact command to collect it: image digest, vLLM
    version from the run, nvidia-smi from host and container, GPUs counted, the launch command whole,
    the environment, the first error block with its timestamp, one request; across trials: one
    variable per step, rollback points, prefix caching alone, context and concurrency last, one node.
    A diagnosis adds its own items (NCCL, weight load, OOM).

    BUNDLES: bundle folders, .tar.gz/.tgz/.zip bundles, files, or - for stdin; several bundles (or
    one folder holding a folder per trial) are the trials of a series, in order.
    """
    from vllm_triage.bundle.check.checklist import check_paths
    from vllm_triage.commands.output import emit_json, run_action, use_colour

    result = run_action(lambda: check_paths(list(bundles), list(rule_dirs), sys.stdin.buffer))
    from vllm_triage.bundle.redact.payload import redact_payload

    data = redact_payload(result.to_json())  # issue 11: a secret never reaches an output
    if fmt == "json":
        emit_json(data)
    else:
        from vllm_triage.render.checklist_text import render_checklist_text

        click.echo(render_checklist_text(data, colour=use_colour()), nl=False)
    if result.exit_code:
        sys.exit(result.exit_code)
