"""`vllm-triage redact BUNDLE --out DIR`: write a redacted copy of a bundle, then leak-scan it."""

from __future__ import annotations

import sys

import click

from vllm_triage.cli_limits import input_limit_options
from vllm_triage.cli_options import rules_option

EPILOG = (
    "Exit codes: 0 written and the leak scan is clean; 1 written but the leak scan still finds "
    "something secret-looking (do not share it); 2 usage error or unusable --out; 4 bad input, or an "
    "--out whose tree holds a symlink (nothing is written)."
)


@click.command("redact", epilog=EPILOG)
@click.argument("bundle")
@click.option(
    "--out", "out", required=True, type=click.Path(file_okay=False), help="Folder for the redacted copy."
)
@click.option(
    "--mask-hosts", is_flag=True, help="Also replace host names (inspect, prompts, NCCL, internal domains)."
)
@click.option(
    "--mask-ips", is_flag=True, help="Also replace IPv4/IPv6 addresses (loopback and 0.0.0.0 kept)."
)
@click.option(
    "--mask-users", is_flag=True, help="Also replace user names (home folders, prompts, USER=) and e-mails."
)
@click.option(
    "--force", is_flag=True, help="Write into a non-empty --out (files there are overwritten, none deleted)."
)
@click.option(
    "--drop-binary", is_flag=True, help="Leave binary files out instead of copying them unredacted."
)
@click.option(
    "--disable", "disabled", multiple=True, metavar="RULE", help="Skip a redaction rule by id (repeatable)."
)
@rules_option("Extra rule directory with [[secret]]/[[mask]] tables.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@input_limit_options
def command(
    bundle: str,
    out: str,
    mask_hosts: bool,
    mask_ips: bool,
    mask_users: bool,
    force: bool,
    drop_binary: bool,
    disabled: tuple[str, ...],
    rule_dirs: tuple[str, ...],
    fmt: str,
) -> None:
    """Write a redacted copy of BUNDLE (folder, archive, file or - for stdin) into --out.

    Secrets (tokens, API keys, Authorization headers, passwords in URLs, cloud keys, private keys,
    values of variables named *TOKEN*/*KEY*/*SECRET*/*PASSWORD*…) become stable placeholders such
    as <redacted:hf-token:1> — the same secret gets the same placeholder in every file. The
    report (redaction-report.json in --out) says what was replaced where, never the secret.
    The input is never modified.
    """
    from vllm_triage.bundle.redact.bundle_copy import redact_bundle
    from vllm_triage.bundle.redact.redactor import MaskOptions
    from vllm_triage.commands.output import run_action
    from vllm_triage.core.errors import ExitCode

    result = run_action(
        lambda: redact_bundle(
            bundle,
            out,
            masks=MaskOptions(hosts=mask_hosts, ips=mask_ips, users=mask_users),
            disabled=disabled,
            rule_dirs=rule_dirs,
            force=force,
            drop_binary=drop_binary,
            stdin=sys.stdin.buffer,
        )
    )
    if fmt == "json":
        from vllm_triage.commands.output import emit_json

        emit_json(result.to_json())
    else:
        from vllm_triage.render.redaction_text import render_redaction_text

        click.echo(render_redaction_text(result.to_json()), nl=False)
    if not result.clean:
        click.echo(
            f"vllm-triage: leak-scan-failed: {len(result.leaks)} secret-looking value(s) remain in {out} "
            f"(see {result.report_path}); do not share it",
            err=True,
        )
        sys.exit(ExitCode.INCOMPLETE)
