"""`triage` and `fingerprint` over one run or several: each run analysed alone, under a heading.

JSON for several runs is a list of the one-run payloads (each a triage/1 or fingerprint/1 object,
in the order the runs were found); for one run it is that payload, as it always was.
A run that cannot be read is reported on stderr in one line and the others still shown; the exit
code is then that error's (4 for bad input).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from vllm_triage.commands.output import emit_json, note, use_colour
from vllm_triage.commands.runs import Run, split_runs
from vllm_triage.core.errors import ExitCode, TriageError


def sample_paths(sample: str) -> list[str]:
    """`--sample NAME` → the sample's folder; `--sample` alone lists them (then exits 0)."""
    from vllm_triage.resources import samples

    known = samples()
    if sample == "":
        for name, (_folder, about) in known.items():
            first_sentence = about.split(": ")[0].split(". ")[0].rstrip(".")
            click.echo(f"{name:<24} {first_sentence}")
        sys.exit(ExitCode.OK)
    if sample not in known:
        raise click.UsageError(
            f"no bundled sample named {sample!r}; `--sample` alone lists them: " + ", ".join(known)
        )
    return [str(known[sample][0])]


def _each_run(
    runs: list[Run],
    analyse: Callable[[Run], dict[str, Any]],
    render: Callable[[dict[str, Any]], str],
    fmt: str,
) -> int:
    payloads: list[dict[str, Any]] = []
    failed: TriageError | None = None
    for n, run in enumerate(runs, 1):
        heading = f"══ run {n}/{len(runs)}: {run.label}"
        try:
            data = analyse(run)
        except TriageError as exc:
            if len(runs) == 1:
                raise  # one run: its error is the command's, as one line
            click.echo(f"{exc.one_line()} [run {n}/{len(runs)}: {run.label}]", err=True)
            failed = failed or exc
            continue
        if fmt == "json":
            payloads.append(data)
            continue
        if len(runs) > 1:
            click.echo(("" if n == 1 else "\n") + (f"## {heading[3:]}\n" if fmt == "md" else heading + "\n"))
        click.echo(render(data), nl=False)
    if fmt == "json":
        emit_json(payloads[0] if len(runs) == 1 else payloads)
    if len(runs) > 1:
        note(
            f"vllm-triage: {len(runs)} runs, each analysed alone"
            " (to compare them: `vllm-triage series` or `vllm-triage diff`; for many: `vllm-triage scan`)"
        )
    return failed.exit_code if failed else 0


def _requests_of(sources: list[Any], result: Any) -> dict[str, int] | None:
    """What the server answered, for the verdict of a healthy run ("no failure: ready and served
    N requests"). It is a second pass over the log (1.8 s per 256 MB), so a failed run, whose
    verdict is its root error, does not pay for it."""
    chosen = result.chosen
    if chosen is None or not chosen.ready or result.phase != "none":
        return None
    from vllm_triage.compare.signals import read_signals

    signals = read_signals(sources)
    return {
        "ok": signals.requests_ok,
        "failed": signals.requests_failed,
        "received": signals.requests_received,
    }


def run_triage(
    paths: list[str], fmt: str, verbose: bool, rule_dirs: list[str], width: int, stdin: Any
) -> int:
    from vllm_triage.pipeline import gather, triage_sources

    def analyse(run: Run) -> dict[str, Any]:
        from vllm_triage.bundle.redact.payload import redact_payload

        sources = gather(run.paths, stdin)
        result = triage_sources(sources, rule_dirs)
        # Redacted before it is printed in any format (issue 11: a secret never reaches an output).
        return redact_payload(result.to_json(_requests_of(sources, result)))

    def render(data: dict[str, Any]) -> str:
        if fmt == "md":
            from vllm_triage.render.templates import render as render_template
            from vllm_triage.render.verdict import decisive_fix, headline, milestone_summary, sorted_findings

            return render_template(
                "triage.md.j2",
                r=data,
                headline=headline(data),
                fix=decisive_fix(data),
                reached=milestone_summary(data),
                findings=sorted_findings(data),
            )
        from vllm_triage.render.triage_text import render_triage_text

        return render_triage_text(data, colour=use_colour(), verbose=verbose, width=width)

    return _each_run(split_runs(paths), analyse, render, fmt)


def run_fingerprint(paths: list[str], fmt: str, rule_dirs: list[str], width: int, stdin: Any) -> int:
    from vllm_triage.pipeline import fingerprint as fingerprint_paths
    from vllm_triage.render.fingerprint_text import render_fingerprint_text

    found_of: dict[int, Any] = {}

    def analyse(run: Run) -> dict[str, Any]:
        from vllm_triage.bundle.redact.payload import redact_payload

        found = fingerprint_paths(run.paths, rule_dirs, stdin)
        # The text also lists the inputs and notes (a file's name may hold a secret): one payload,
        # so one secret has one placeholder in all three.
        clean: dict[str, Any] = redact_payload(
            {"data": found.to_json(), "inputs": found.inputs, "notes": found.notes}
        )
        data: dict[str, Any] = clean["data"]
        found_of[id(data)] = (clean["inputs"], clean["notes"])
        return data

    def render(data: dict[str, Any]) -> str:
        inputs, notes = found_of[id(data)]
        return render_fingerprint_text(data, inputs, notes, colour=use_colour(), width=width)

    return _each_run(split_runs(paths), analyse, render, fmt)
