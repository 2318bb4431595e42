"""`vllm-triage schema NAME`: print the JSON Schema of a versioned contract (`schema` alone lists them)."""

from __future__ import annotations

import click


def _complete(_ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[str]:
    from vllm_triage.schemas import names

    return [name for name in names() if name.startswith(incomplete)]


@click.command("schema")
@click.argument("name", required=False, shell_complete=_complete)
def command(name: str | None) -> None:
    """Print the JSON Schema of a versioned JSON output: triage, fingerprint, diff, series, check,
    report or fleet. Without NAME, list them with the contract each describes."""
    from vllm_triage.schemas import CONTRACTS, load, names, path_of

    known = names()
    if name is None:
        for contract, file in sorted(CONTRACTS.items(), key=lambda kv: kv[1]):
            click.echo(f"{file:<12} {contract}")
        return
    if name not in known:
        raise click.UsageError(f"no schema named {name!r}; known: {', '.join(known)}")
    load(name)  # a broken file fails here, not in the reader's validator
    click.echo(path_of(name).read_text(encoding="utf-8"), nl=False)
