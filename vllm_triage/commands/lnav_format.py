"""`vllm-triage lnav-format`: print the lnav format file for vLLM server logs."""

from __future__ import annotations

import click


@click.command("lnav-format")
def command() -> None:
    """Print an lnav (https://lnav.org) format for vLLM server logs: levels, the process prefix
    (APIServer, EngineCore_DP0, Worker_TP1 …), vLLM's timestamps, the source file and line, and
    lines behind a `docker logs -t` timestamp.

    Install: vllm-triage lnav-format > ~/.lnav/formats/installed/vllm_log.json
    """
    from vllm_triage.integrations import LNAV_FORMAT

    click.echo(LNAV_FORMAT.read_text(encoding="utf-8"), nl=False)
