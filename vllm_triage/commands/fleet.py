"""`vllm-triage fleet OUT_DIR`: the fleet summary of a scanned directory (vllm_triage/fleet/summary.py)."""

from __future__ import annotations

import click

GROUPINGS = ["signature", "phase", "category", "driver", "image", "node"]


@click.command(
    "fleet",
    epilog="Exit codes: 0 ok; 2 usage error; 4 not a fleet directory or bad --since; 70 internal error.",
)
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option(
    "--by",
    type=click.Choice(GROUPINGS),
    default="signature",
    show_default=True,
    help="What to count runs by.",
)
@click.option("--since", help="Also list the signatures first seen on or after this date (YYYY-MM-DD).")
@click.option("--top", type=click.IntRange(min=1), default=50, show_default=True, help="Signatures listed.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "md"]), default="text", show_default=True)
def command(out_dir: str, by: str, since: str | None, top: int, fmt: str) -> None:
    """Failure signatures across a scanned fleet: counts, first/last seen, the nodes, drivers and
    images each appears on, new signatures since a date, and the known upstream issue it resembles."""

    from vllm_triage.commands.output import run_action
    from vllm_triage.fleet.summary import parse_since, summarise
    from vllm_triage.render.fleet_text import render

    summary = run_action(lambda: summarise(out_dir, by, parse_since(since), top))
    if fmt == "json":
        from vllm_triage.commands.output import emit_json

        emit_json(summary)
        return
    click.echo(render(summary, fmt), nl=False)
