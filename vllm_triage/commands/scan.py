"""`vllm-triage scan PATH… -o OUT_DIR`: many bundles → Parquet (vllm_triage/fleet/)."""

from __future__ import annotations

import sys
from typing import Any

import click

from vllm_triage.cli_limits import input_limit_options
from vllm_triage.cli_options import rules_option

EPILOG = (
    "Each bundle (a folder with bundle.toml, an archive, or a folder holding a vLLM log) is one run. "
    "Unchanged bundles are skipped; unreadable ones are recorded with their error. "
    "Exit codes: 0 scanned (whatever the runs found); 2 usage error; 4 bad input or rules, fleet "
    "dir locked, --engine spark without pyspark or Java; "
    "70 internal error."
)


class _ProgressBar:
    """click's bar on stderr when stderr is a terminal; nothing at all when piped or redirected."""

    def __init__(self) -> None:
        self.bar: Any = None  # click's ProgressBar once started

    def start(self, total: int) -> None:
        if total and sys.stderr.isatty():
            self.bar = click.progressbar(length=total, label="scanning", file=sys.stderr, show_pos=True)
            self.bar.__enter__()

    def advance(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


@click.command("scan", epilog=EPILOG)
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "-o",
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Fleet directory (created; later scans append).",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes [default: every core]; with --engine spark, the N of local[N].",
)
@click.option(
    "--engine",
    type=click.Choice(["local", "spark"]),
    default="local",
    show_default=True,
    help="local: this machine's processes. spark: Spark jobs (pip install 'vllm-triage[spark]', Java 17+); "
    "local[JOBS] unless spark-submit names a master (docs/fleet.md).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Analyse every bundle again, even unchanged ones (after upgrading vllm-triage).",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@rules_option("Extra rule directory (repeatable).")
@input_limit_options
def command(
    paths: tuple[str, ...],
    out_dir: str,
    jobs: int | None,
    engine: str,
    force: bool,
    fmt: str,
    rule_dirs: tuple[str, ...],
) -> None:
    """Triage and fingerprint every bundle under PATHS into Parquet tables (runs, findings, knobs).

    Query the result with polars/DuckDB/Spark (`OUT_DIR/runs/*.parquet`) or `vllm-triage fleet OUT_DIR`.
    """

    from vllm_triage.bundle.redact.payload import redact_rows
    from vllm_triage.commands.output import run_action
    from vllm_triage.fleet.scan import scan

    bar = _ProgressBar()
    try:
        stats = run_action(
            lambda: scan(
                list(paths),
                out_dir,
                jobs,
                tuple(rule_dirs),
                force,
                progress=bar.advance,
                on_total=bar.start,
                engine=engine,
                redact=redact_rows,
            )
        )
    finally:
        bar.close()
    if fmt == "json":
        from vllm_triage.commands.output import emit_json

        emit_json(stats.to_json())
        return
    unreadable = f" ({stats.unreadable} unreadable, recorded)" if stats.unreadable else ""
    click.echo(
        f"{stats.bundles} bundle(s) in {stats.seconds:.1f} s with {stats.jobs} "
        f"job(s){' on Spark' if stats.engine == 'spark' else ''}: {stats.analysed} "
        f"analysed{unreadable}, "
        f"{stats.unchanged} unchanged, {stats.duplicates} duplicate(s) → {stats.out_dir} (scan "
        f"{stats.scan_id})"
    )
