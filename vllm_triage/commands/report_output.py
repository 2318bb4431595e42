"""From bundles to the written report: load the trials, build the data, redact it, render it,
leak-scan the result, and write it — never into an input bundle (inputs are read-only)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import BinaryIO

from vllm_triage.bundle.layout import OutputError
from vllm_triage.bundle.report.redact import leak_scan, redact_report, refuse_leaks
from vllm_triage.bundle.trials import load_trials
from vllm_triage.render.report_model import build_report
from vllm_triage.render.report_render import RENDERERS, render_field


def _check_output(output: str, inputs: list[str]) -> Path:
    target = Path(output).expanduser().resolve()
    for given in inputs:
        if given == "-":
            continue
        source = Path(given).expanduser().resolve()
        if source == target or (source.is_dir() and source in target.parents):
            raise OutputError(
                "out-inside-input",
                f"-o {output} would write into the input {given}",
                "write the report outside the bundle",
            )
    if target.is_dir():
        raise OutputError("out-is-a-folder", f"-o {output} is a folder", "name a file")
    if not target.parent.is_dir():
        raise OutputError("out-unwritable", f"-o {output}: the folder {target.parent} does not exist")
    return target


def _write(target: Path, text: str) -> None:
    """Whole or not at all: a report cut by a full disk must not look like a report."""
    handle, temporary = tempfile.mkstemp(prefix=".report-", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        # mkstemp creates 0600; a report is an ordinary file (the umask decides, as for any other).
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, target)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise OutputError("out-unwritable", f"cannot write {target}: {exc.strerror or exc}") from exc


def make_report(
    paths: list[str],
    fmt: str,
    *,
    redact: bool = True,
    rule_dirs: list[str] | None = None,
    stdin: BinaryIO | None = None,
    field: str | None = None,
) -> str:
    """The rendered report (or one field of the upstream form, Markdown); LeakError when redaction
    left something secret-looking in it."""
    from vllm_triage.pipeline import load_rules

    # Compiled once for every trial, and the same rules lay out the timeline (a `--rules` marker
    # gets its slot there as it gets its milestone in the triage).
    compiled = load_rules(rule_dirs)
    trials = load_trials(paths, rule_dirs, stdin, compiled)
    data = build_report(trials, compiled.ruleset, rule_dirs)

    def draw(report: dict) -> str:
        return render_field(report, field) if field else RENDERERS[fmt](report)

    if not redact:
        return draw(data)
    clean, redactor = redact_report(data, trials)
    text = draw(clean)
    # A field is Markdown: scanned as the whole Markdown report is.
    refuse_leaks(
        leak_scan(clean, text, "md" if field else fmt, redactor), f"--field {field}" if field else fmt
    )
    return text


def write_report(
    paths: list[str],
    fmt: str,
    output: str | None,
    *,
    redact: bool = True,
    rule_dirs: list[str] | None = None,
    stdin: BinaryIO | None = None,
    field: str | None = None,
) -> str:
    target = _check_output(output, paths) if output else None
    text = make_report(paths, fmt, redact=redact, rule_dirs=rule_dirs, stdin=stdin, field=field)
    if target is not None:
        _write(target, text)
    return text
