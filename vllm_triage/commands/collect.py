"""`vllm-triage collect --out DIR [--container NAME | --pod NAME] [-- COMMAND…]`: snapshot the scene."""

from __future__ import annotations

import click

EPILOG = (
    "Exit codes: 0 bundle written (failed, missing and timed-out steps are recorded in bundle.toml, "
    "not errors); 2 usage error or unusable --out."
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
    from vllm_triage.bundle.scene import Request, collect
    from vllm_triage.cli import _run  # the one place that turns TriageError into a line + exit code

    request = Request(out, container, pod, namespace, runtime, timeout, list(launch), label, force)
    result = _run(lambda: collect(request))
    if fmt == "json":
        from vllm_triage.commands.output import emit_json

        emit_json(result.to_json())
        return
    from vllm_triage.render.collect_text import render_collect_text

    click.echo(render_collect_text(result.to_json()), nl=False)
