"""`vllm-triage collect --out DIR [--container NAME | --pod NAME] [-- COMMAND…]`: snapshot the scene."""

from __future__ import annotations

import sys

import click

from vllm_triage.core.errors import ExitCode

EPILOG = (
    "Exit codes: 0 bundle written with every required step (other failed, missing and timed-out "
    "steps are recorded in bundle.toml); 1 bundle written but a required step failed (the host's "
    "nvidia-smi, or the server log of --container/--pod/--log/--journal): a one-line summary on "
    "stderr; 2 usage error or unusable --out; 4 an --out whose tree holds a symlink (nothing is "
    "written)."
)


@click.command("collect", epilog=EPILOG)
@click.option(
    "--out", "out", required=True, type=click.Path(file_okay=False), help="Folder to write the bundle into."
)
@click.option(
    "--container",
    help="Docker/podman container that ran vLLM (inspect, image, nvidia-smi, collect-env, logs).",
)
@click.option("--pod", help="Kubernetes pod that ran vLLM (the same through kubectl).")
@click.option("--namespace", help="Namespace of --pod.")
@click.option(
    "--runtime", type=click.Choice(["docker", "podman"]), help="Container CLI (default: docker, else podman)."
)
@click.option(
    "--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True, help="Seconds per step."
)
@click.option(
    "--log",
    "logs",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, readable=True),
    help="A server log outside a container (vllm serve … > FILE); repeatable. Copied as logs/NAME.",
)
@click.option(
    "--journal",
    "journals",
    multiple=True,
    metavar="UNIT",
    help="A systemd unit running vLLM: its journal (journalctl -u UNIT); repeatable.",
)
@click.option("--label", help="Name of this run/trial in the manifest (default: target and time).")
@click.option("--force", is_flag=True, help="Write into a non-empty --out.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.argument("launch", nargs=-1, type=click.UNPROCESSED)
def command(
    out: str,
    container: str | None,
    pod: str | None,
    namespace: str | None,
    runtime: str | None,
    timeout: float,
    logs: tuple[str, ...],
    journals: tuple[str, ...],
    label: str | None,
    force: bool,
    fmt: str,
    launch: tuple[str, ...],
) -> None:
    """Run on the failing host: capture nvidia-smi (host and container), inspect JSON, image
    digest, collect_env, timestamped logs, the launch command given after -- (recorded, not run)
    and the environment into a bundle folder with a bundle.toml manifest.

    Every step has a timeout; a step that is missing, fails or times out is recorded with why.
    Nothing is sent anywhere and nothing needs root. The bundle holds secrets as found
    (environment, inspect Env): run `vllm-triage redact` on it before sharing.
    """
    if container and pod:
        raise click.UsageError("give --container or --pod, not both")
    if namespace and not pod:
        raise click.UsageError("--namespace goes with --pod")
    if runtime and not container:
        raise click.UsageError("--runtime goes with --container")
    from vllm_triage.bundle.collect.scene import Request, collect
    from vllm_triage.commands.output import run_action

    request = Request(
        out,
        container,
        pod,
        namespace,
        runtime,
        timeout,
        list(launch),
        label,
        force,
        list(logs),
        list(journals),
    )
    result = run_action(lambda: collect(request))
    if fmt == "json":
        from vllm_triage.commands.output import emit_json

        emit_json(result.to_json())
    else:
        from vllm_triage.render.collect_text import render_collect_text

        click.echo(render_collect_text(result.to_json()), nl=False)
    if result.required_failed:
        # Written, but not usable as it is: say which required step failed, why, in one line.
        why = "; ".join(
            f"{s.name}: {s.status} ({s.reason or 'no reason given'})" for s in result.required_failed
        )
        click.echo(
            f"vllm-triage: collect-incomplete: {why} (the bundle in {result.root} has the rest)", err=True
        )
        sys.exit(ExitCode.INCOMPLETE)
