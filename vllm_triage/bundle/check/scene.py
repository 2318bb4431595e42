"""Checklist items about one trial's scene: image, vLLM version, nvidia-smi views, GPU count,
launch command, environment, first error block, request. Each reads the trial's fingerprint and
triage (never the files directly, except to tell a whole command from a cut one)."""

from __future__ import annotations

import re
from collections.abc import Callable

from vllm_triage.bundle.check.context import TrialContext, at, where
from vllm_triage.bundle.check.model import Verdict, failed, missing, passed
from vllm_triage.core.phases import STARTUP_PHASES
from vllm_triage.core.provenance import Provenance
from vllm_triage.core.roles import Role
from vllm_triage.fingerprint import views
from vllm_triage.fingerprint.values import as_int
from vllm_triage.parsers.launch import launchers
from vllm_triage.parsers.launch.lexer import lex_script

# The placeholder id of an elision line inside a log (the log was shortened, not replaced).
LOG_ELISION = "log-elision"
_GPU_LIST_LINE = re.compile(r"(?m)^\s*GPU \d+: .+\(UUID: ")
# Launch command shapes that are shell words (a compose file or a pod spec is YAML).
_SHELL_LAUNCHERS = launchers.SHELL_TYPED


def _where_hits(ctx: TrialContext, *roles: Role) -> tuple[str, list[Provenance | None]]:
    hits = ctx.hits_for(*roles)
    if not hits:
        return "", []
    first = hits[0]
    return (
        f"{first.file}:{first.line} holds a placeholder, not the artefact ({first.explain}: `{first.text}`)",
        [h.where for h in hits[:3]],
    )


def _container_places(ctx: TrialContext, *extra: str) -> tuple[str, ...]:
    if ctx.scene.kind == "pod":
        return ("pod", *extra)
    if ctx.scene.kind == "host":
        return ("host", *extra)
    return ("container", *extra)


# --------------------------------------------------------------------------------------- image


def image_digest(ctx: TrialContext) -> Verdict:
    fp = ctx.fp
    ref, digest, image_id = fp.get("image.ref"), fp.get("image.digest"), fp.get("image.id")
    if digest is not None:
        name = str(ref.value).split("@", 1)[0] if ref is not None else "the image"
        return passed(f"{name} @ {digest.value}", where(ref), where(digest))
    if ref is not None:
        pinned = (
            f"; the local image ID {image_id.value} is known, but an ID cannot be pulled elsewhere"
            if image_id is not None
            else ""
        )
        return failed(
            f"the image {ref.value} is named by tag only, with no digest: a tag can move{pinned}",
            [where(ref), where(image_id)],
            _container_places(ctx),
        )
    if ctx.scene.kind == "host":
        env = ctx.usable(Role.COLLECT_ENV)
        launcher = fp.get("launcher")
        if env:
            return passed(
                f"no container: vLLM ran from a Python environment "
                f"({launcher.value if launcher else 'no launcher'}); "
                f"collect_env ({env[0].name}) records its packages",
                where(launcher),
                Provenance(env[0].name),
            )
        return missing(
            "no container: the Python environment that ran vLLM is not recorded (collect_env)",
            ("host",),
            [where(launcher)],
        )
    return missing(
        "no image named: neither docker inspect nor the launch command says which image ran",
        _container_places(ctx),
    )


# ------------------------------------------------------------------------------------- version


def vllm_version(ctx: TrialContext) -> Verdict:
    observed = ctx.read_by("vllm.version", Role.VLLM_LOG, Role.COLLECT_ENV) + ctx.read_by(
        "pip.vllm", Role.COLLECT_ENV
    )
    if observed:
        first = observed[0]
        how = "the log's banner" if first.role == Role.VLLM_LOG else "collect_env"
        others = [
            c
            for c in observed[1:]
            if str(c.sourced.value).split("+")[0] != str(first.sourced.value).split("+")[0]
        ]
        if others:
            other = others[0]
            return failed(
                f"the environments disagree: {how} says vLLM {first.sourced.value} ({first.sourced.source}), "
                f"{other.role} says {other.sourced.value} ({other.sourced.source}); collect them "
                f"from the run that failed",
                [where(first), where(other)],
                _container_places(ctx, "log"),
            )
        return passed(f"vLLM {first.sourced.value}, as {how} reports it", where(first))
    tag = ctx.fp.get("image.vllm_version")
    problem, evidence = _where_hits(ctx, Role.COLLECT_ENV)
    text = "no vLLM version from the environment that ran (no log banner, no collect_env)"
    if tag is not None:
        text += f"; the image tag suggests {tag.value}, but a tag is not what ran"
        evidence.append(where(tag))
    if problem:
        text += f"; {problem}"
    if ctx.trial.of_role(Role.VLLM_LOG) and not _log_from_start(ctx):
        text += "; the log does not start at the server's start (its banner was cut)"
    return missing(text, ("log", *_container_places(ctx)), evidence)


# ---------------------------------------------------------------------------------- nvidia-smi


def nvidia_smi_views(ctx: TrialContext) -> Verdict:
    captures = ctx.usable(Role.NVIDIA_SMI)
    scopes = {ctx.trial.scope_of(s) for s in captures}
    unscoped = [s for s in captures if ctx.trial.scope_of(s) not in ("host", "container")]
    need_container = ctx.containerised
    have_host, have_container = "host" in scopes, "container" in scopes
    problem, evidence = _where_hits(ctx, Role.NVIDIA_SMI)
    if have_host and (have_container or not need_container):
        names = [s.name for s in captures if ctx.trial.scope_of(s) in ("host", "container")]
        return passed(
            "nvidia-smi from the host"
            + (
                " and from inside the container"
                if have_container
                else " (no container: the host's view is the server's)"
            ),
            *[Provenance(n) for n in names[:4]],
        )
    lacking = [
        place
        for place, have, needed in (("host", have_host, True), ("container", have_container, need_container))
        if needed and not have
    ]
    places = tuple("pod" if p == "container" and ctx.scene.kind == "pod" else p for p in lacking)
    text = "no nvidia-smi from " + " nor from ".join(
        "the host" if p == "host" else "inside the container" for p in lacking
    )
    if problem:
        text += f"; {problem}"
    if unscoped:
        text = (
            f"{', '.join(s.name for s in unscoped)} does not say where it was taken (host or container); "
            + text
        )
        return failed(text, [*(Provenance(s.name) for s in unscoped), *evidence], ("manifest", *places))
    return missing(text, places, evidence)


def gpus_counted(ctx: TrialContext) -> Verdict:
    fp = ctx.fp
    captures = ctx.usable(Role.NVIDIA_SMI)
    listed = [s for s in captures if _GPU_LIST_LINE.search(ctx.trial.text(s))]
    need = views.parallel_gpus(fp)
    visible = views.visible_gpus(fp)
    counted = any(ctx.read_by(f"{scope}.gpu_count", Role.NVIDIA_SMI) for scope in views.SERVER_VIEW)
    if (
        visible is not None
        and counted
        and not views.multi_node(fp)
        and as_int(visible.value) is not None
        and as_int(visible.value) < need.value
    ):
        return failed(
            f"{visible.value} GPU(s) visible ({visible.how}) but the launch needs {need.value} ({need.how})",
            [*visible.evidence, *need.evidence],
            _container_places(ctx),
        )
    if not listed:
        problem, evidence = _where_hits(ctx, Role.NVIDIA_SMI)
        text = "no `nvidia-smi -L` list"
        if counted and visible is not None:
            text += f" (nvidia-smi shows {visible.value} GPU(s), but -L lists each by UUID)"
        if problem:
            text += f"; {problem}"
        return missing(text, _container_places(ctx), evidence)
    scope_word = {"container": "inside the container", "host": "on the host"}
    scope = ctx.trial.scope_of(listed[0])
    count = len(_GPU_LIST_LINE.findall(ctx.trial.text(listed[0])))
    if views.multi_node(fp):
        return passed(
            f"{count} GPU(s) listed {scope_word.get(scope or '', '')} by nvidia-smi -L; the launch spans "
            f"nodes ({need.how}), so this node's count is not compared",
            Provenance(listed[0].name),
        )
    shown = visible.value if visible is not None else count
    return passed(
        f"{shown} GPU(s) visible ({visible.how if visible else 'nvidia-smi -L'}), listed by nvidia-smi -L "
        f"{scope_word.get(scope or '', '')}; the launch needs {need.value} ({need.how})".replace("  ", " "),
        Provenance(listed[0].name),
        *need.evidence,
    )


# -------------------------------------------------------------------------------------- command


def _cut(text: str) -> str | None:
    """Why a shell command looks cut: a continuation with nothing after it, an open quote."""
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        return None
    if lines[-1].rstrip().endswith("\\"):
        return f"its last line ends with a continuation `\\` and nothing follows ({lines[-1].strip()[-60:]})"
    notes: list[str] = []
    lex_script("\n".join(lines), notes=notes)
    unbalanced = [note for note in notes if "unbalanced" in note]
    if unbalanced:
        return f"the shell cannot read it: {unbalanced[0].removesuffix(' ignored')} (cut in the middle?)"
    return None


def launch_command(ctx: TrialContext) -> Verdict:
    fp = ctx.fp
    problem, evidence = _where_hits(ctx, Role.LAUNCH_COMMAND)
    if problem:
        return missing(f"the launch command is not whole: {problem}", _container_places(ctx), evidence)
    commands = ctx.usable(Role.LAUNCH_COMMAND)
    inspected = ctx.first_read("container.cmd", Role.CONTAINER_INSPECT) or ctx.first_read(
        "container.entrypoint", Role.CONTAINER_INSPECT
    )
    if not commands:
        if inspected is not None:
            return passed(
                "the command that ran, as docker inspect records it (Path and Args)", where(inspected)
            )
        logged = ctx.names_read("arg.", Role.VLLM_LOG)
        text = "no launch command"
        if logged:
            text += (
                " (the log's non-default args are the arguments vLLM parsed, not the command: no image, "
                "no container options, no environment)"
            )
        return missing(text, _container_places(ctx))
    launcher = ctx.first_read("launcher", Role.LAUNCH_COMMAND)
    for source in commands:
        if launcher is not None and str(launcher.value) in _SHELL_LAUNCHERS:
            why = _cut(ctx.trial.text(source))
            if why:
                return failed(
                    f"the launch command in {source.name} looks cut: {why}",
                    [Provenance(source.name)],
                    _container_places(ctx),
                )
    differ = [f for f in fp.findings if f.id == "args-differ-from-log"]
    if differ:
        return failed(
            f"the command given is not the one that ran (retyped?): {differ[0].message}",
            list(differ[0].evidence)[:4],
            _container_places(ctx),
        )
    model = ctx.first_read("arg.model", Role.LAUNCH_COMMAND)
    if launcher is None or model is None:
        return failed(
            f"{commands[0].name} does not read as a vLLM launch (no launcher or no model found)",
            [Provenance(commands[0].name)],
            _container_places(ctx),
        )
    count = len(ctx.names_read("arg.", Role.LAUNCH_COMMAND))
    return passed(
        f"{launcher.value} of {model.value} with {count} vLLM argument(s), kept whole",
        where(launcher),
        where(model),
    )


# ---------------------------------------------------------------------------------- environment


def environment_listed(ctx: TrialContext) -> Verdict:
    listed = ctx.names_read("env.", Role.ENVIRONMENT)
    problem, evidence = _where_hits(ctx, Role.ENVIRONMENT)
    if listed and not problem:
        first = ctx.first_read(listed[0], Role.ENVIRONMENT)
        return passed(
            f"{len(listed)} variable(s) listed in {first.source.file if first else 'the environment file'}",
            where(first),
        )
    inspected = ctx.names_read("env.", Role.CONTAINER_INSPECT)
    if inspected:
        first = ctx.first_read(inspected[0], Role.CONTAINER_INSPECT)
        return passed(
            f"the container's {len(inspected)} variable(s), from docker inspect Config.Env", where(first)
        )
    in_command = ctx.names_read("env.", Role.LAUNCH_COMMAND)
    text = "no environment listing"
    if in_command:
        text += (
            f" (only the {len(in_command)} variable(s) written in the launch command; "
            f"inherited ones are unknown)"
        )
    if problem:
        text += f"; {problem}"
    elif ctx.trial.of_role(Role.ENVIRONMENT):
        text += f"; {ctx.trial.of_role(Role.ENVIRONMENT)[0].name} lists no variable"
    return missing(text, _container_places(ctx), evidence)


# ----------------------------------------------------------------------------------- first error


def _log_from_start(ctx: TrialContext) -> bool:
    reached = {m.get("marker") for m in (ctx.trial.triage or {}).get("milestones", [])}
    return bool(reached & set(ctx.data.start_milestones))


def first_error_block(ctx: TrialContext) -> Verdict:
    triage = ctx.trial.triage
    problem, evidence = _where_hits(ctx, Role.VLLM_LOG)
    if triage is None or not ctx.trial.of_role(Role.VLLM_LOG):
        return missing("no server log" + (f"; {problem}" if problem else ""), ("log",), evidence)
    fe = triage.get("first_error")
    pasted = [h for h in ctx.hits_for(Role.VLLM_LOG) if h.placeholder != LOG_ELISION]
    if pasted:
        return missing(f"no server log: {problem}", ("log",), evidence)
    cut = [
        h
        for h in ctx.hits_for(Role.VLLM_LOG)
        if fe is None or (h.file == fe.get("file") and h.line <= fe["line"])
    ]
    if cut:
        return failed(
            f"the log was shortened before the first error: {cut[0].file}:{cut[0].line} `{cut[0].text}`",
            [h.where for h in cut[:3]],
            ("log",),
        )
    if fe is None:
        ready = next((m for m in triage.get("milestones", []) if m.get("marker") == "ready"), None)
        if ready is not None:
            return passed("no error: the server started and was ready", at(ready))
        if not _log_from_start(ctx):
            return missing(
                "the log shows neither an error nor the server's start: only some lines were kept", ("log",)
            )
        return passed("no error in the log")
    here = at(fe)
    if fe.get("kind") == "consequence_only":
        return failed(
            f"only consequences were kept ({here}: {fe.get('message', '')[:100]}): the root error block is "
            "missing — the last lines only?",
            [here],
            ("log",),
        )
    if any(f.get("id") == "paste-starts-mid-block" for f in triage.get("findings", [])):
        return failed(
            f"the log starts inside the error block ({here}): its beginning was cut", [here], ("log",)
        )
    if not _log_from_start(ctx):
        return failed(
            f"the log does not start at the server's start (no {'/'.join(ctx.data.start_milestones)} line): "
            f"only the last lines were kept; the first error found is at {here}",
            [here],
            ("log",),
        )
    if not fe.get("timestamp"):
        return failed(
            f"the first error ({here}) has no timestamp: keep the log with its timestamps", [here], ("log",)
        )
    block = fe.get("block") or {}
    what = (
        "the log stops after its last milestone"
        if fe.get("kind") == "hang"
        else f"first error ({fe.get('category')})"
    )
    return passed(
        f"{what} at {here}, {fe['timestamp']}, block lines {block.get('start')}–{block.get('end')}", here
    )


# ------------------------------------------------------------------------------------- request

# (label, names that satisfy it)
_REQUEST_FIELDS = (
    ("model", ("request.model",)),
    ("messages or prompt", ("request.messages_count", "request.prompt_chars")),
    ("output limit (max_tokens)", ("request.max_tokens",)),
    ("temperature", ("request.temperature",)),
    ("timeout (curl -m)", ("request.timeout",)),
)


def request_recorded(ctx: TrialContext) -> Verdict:
    problem, evidence = _where_hits(ctx, Role.REQUEST)
    recorded = ctx.names_read("request.", Role.REQUEST)
    triage = ctx.trial.triage or {}
    before_serving = triage.get("phase") in STARTUP_PHASES and not triage.get("ready")
    if problem:
        return missing(f"the request is not recorded: {problem}", ("host",), evidence)
    if not recorded:
        if before_serving:
            return passed(
                f"not needed: the server failed in {triage.get('phase')}, before it served a request"
            )
        return missing("no request recorded", ("host",))
    lacking = [
        label for label, names in _REQUEST_FIELDS if not any(ctx.first_read(n, Role.REQUEST) for n in names)
    ]
    first = ctx.first_read(recorded[0], Role.REQUEST)
    concurrency = ctx.first_read("request.concurrency", Role.REQUEST)
    if lacking:
        return failed(
            f"the request ({first.source.file if first else '?'}) lacks: {', '.join(lacking)}",
            [where(first)],
            ("host",),
        )
    level = as_int(concurrency.value) if concurrency is not None else 1
    if concurrency is not None and level and level > 1 and ctx.index == 0:
        return failed(
            f"the base trial sends {level} requests at once ({concurrency.source}): the base is one request",
            [where(concurrency)],
            ("host",),
        )
    return passed(
        f"one request with model, messages, max_tokens, temperature and timeout "
        f"({first.source.file if first else '?'})",
        where(first),
    )


CHECKS: dict[str, Callable[[TrialContext], Verdict]] = {
    "image-digest": image_digest,
    "vllm-version": vllm_version,
    "nvidia-smi-views": nvidia_smi_views,
    "gpus-counted": gpus_counted,
    "launch-command": launch_command,
    "environment-listed": environment_listed,
    "first-error-block": first_error_block,
    "request-recorded": request_recorded,
}
