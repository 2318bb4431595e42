"""Hygiene of a baseline: what should not be in a run meant to check driver, CUDA or weights,
and references that do not pin what ran. The lists are data (rules/compat/hygiene.toml)."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from vllm_triage.core.finding import Finding
from vllm_triage.core.provenance import Provenance, Sourced
from vllm_triage.core.roles import Role
from vllm_triage.fingerprint.data import CheckData, DebugVariable
from vllm_triage.fingerprint.derive import split_image
from vllm_triage.fingerprint.model import Fingerprint
from vllm_triage.fingerprint.values import as_bool, version_tuple
from vllm_triage.fingerprint.views import vllm_version

ONE_CHANGE = "Remove it from the baseline; add it back only in a trial that changes that one thing."
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
# V1 became the default engine in v0.8.0; it turns prefix caching on by default.
V1_DEFAULT_SINCE = (0, 8, 0)


def _env(fp: Fingerprint) -> list[tuple[str, Sourced]]:
    return [(name[4:], value) for name, value in sorted(fp.knobs.items()) if name.startswith("env.")]


def _set_by_vllm(fp: Fingerprint, variable: DebugVariable, name: str) -> bool:
    """Only collect_env shows it, from a vLLM release that sets it itself at import."""
    if variable.set_by_vllm is None or fp.roles_of(f"env.{name}") != {Role.COLLECT_ENV}:
        return False
    version = version_tuple(fp.value("vllm.version", ""))
    low, high = (version_tuple(v) or () for v in variable.set_by_vllm)
    return version is not None and low <= version <= high


def debug_variables(fp: Fingerprint, data: CheckData) -> list[Finding]:
    findings = []
    for name, value in _env(fp):
        variable = next((v for v in data.debug_variables if v.matches(name, value.value)), None)
        if variable is None or _set_by_vllm(fp, variable, name):
            continue
        findings.append(
            Finding(
                "debug-variable-set",
                variable.severity,
                f"{name}={value.value} is set ({value.source}): {variable.effect}. In a baseline "
                f"meant to check the "
                "driver, CUDA or the weights it changes what is measured.",
                [value.source],
                ONE_CHANGE,
            )
        )
    return findings


def prefix_caching(fp: Fingerprint, data: CheckData) -> list[Finding]:
    explicit = fp.get("arg.enable_prefix_caching")
    flag = as_bool(explicit.value) if explicit is not None else None
    advice = (
        "Keep prefix caching off (--no-enable-prefix-caching) while the base (driver, CUDA, "
        "weights, a minimal "
        "start, one request) is being checked; turn it on as its own trial."
    )
    if flag is False:
        return []
    if flag is True and explicit is not None:
        return [
            Finding(
                "prefix-caching-on",
                "warning",
                f"Prefix caching is switched on ({explicit.source}) in what may be a baseline run.",
                [explicit.source],
                advice,
            )
        ]
    if not (fp.get("launcher") or any(name.startswith(("arg.", "engine.")) for name in fp.knobs | fp.facts)):
        return []  # no launch in the input: nothing says a server ran
    banner = fp.get("engine.enable_prefix_caching")
    if banner is not None and as_bool(banner.value) is True:
        return [
            Finding(
                "prefix-caching-on-by-default",
                "info",
                f"Prefix caching was on (the engine banner says enable_prefix_caching=True, {banner.source}) "
                "although the command did not ask for it: the V1 engine turns it on by default.",
                [banner.source],
                advice,
            )
        ]
    reason = _v1_default(fp)
    if reason is None:
        return []
    text, evidence = reason
    return [
        Finding(
            "prefix-caching-on-by-default",
            "info",
            f"Prefix caching is on by default here: {text}, and nothing turns it off "
            "(--no-enable-prefix-caching).",
            evidence,
            advice,
        )
    ]


def _v1_default(fp: Fingerprint) -> tuple[str, list[Provenance]] | None:
    use_v1 = fp.get("env.VLLM_USE_V1")
    if use_v1 is not None and as_bool(use_v1.value) is False:
        return None  # V0 forced: prefix caching is off by default
    generation = fp.get("engine.generation")
    if generation is not None and str(generation.value).upper() == "V1":
        return f"the log shows the V1 engine ({generation.source})", [generation.source]
    version = vllm_version(fp)
    if version is not None and (version_tuple(version.value) or ()) >= V1_DEFAULT_SINCE:
        return f"vLLM {version.value} runs the V1 engine (default from v0.8)", [version.source]
    tag = fp.get("image.tag")
    if tag is not None and re.fullmatch(r"(latest|nightly)(-.*)?", str(tag.value), re.I):
        return f"the image tag {tag.value} is a V1 release (V1 is the default from v0.8)", [tag.source]
    return None


def nccl_inherited(fp: Fingerprint, data: CheckData) -> list[Finding]:
    launched = fp.get("launcher") is not None
    env_files = {PurePosixPath(str(f)).name for f in fp.value("container.env_files") or []}
    rows: list[tuple[str, Sourced]] = []
    for name, value in _env(fp):
        prefix = next(
            (p for p, ignore in data.inherited_prefixes if name.startswith(p) and name not in ignore), None
        )
        if prefix is None or Role.LAUNCH_COMMAND in fp.roles_of(f"env.{name}"):
            continue
        if PurePosixPath(value.source.file.replace("!", "/")).name in env_files:
            continue  # from the file the launch passes with --env-file: set by the launch
        variable = next((v for v in data.debug_variables if v.matches(name, value.value)), None)
        if variable is not None and _set_by_vllm(fp, variable, name):
            continue
        rows.append((name, value))
    if not rows:
        return []
    listed = ", ".join(f"{name}={value.value} ({value.source})" for name, value in rows)
    against = (
        "the launch command does not set them" if launched else "no launch command in the input sets them"
    )
    return [
        Finding(
            "nccl-inherited",
            "warning" if launched else "info",
            f"NCCL settings inherited from the environment: {listed}; {against}. A cluster's or an "
            f"image's NCCL_* "
            "variables change communication without appearing in the command.",
            [value.source for _, value in rows],
            "Record them in the launch command (or unset them) so the next trial runs with the "
            "same NCCL settings.",
        )
    ]


def mutable_image(fp: Fingerprint, data: CheckData) -> list[Finding]:
    ref = fp.get("image.ref")
    if ref is None or not isinstance(ref.value, str) or fp.get("image.digest") is not None:
        return []
    _, tag, digest = split_image(ref.value)
    if digest:
        return []
    shown = tag or "latest"
    rule = next((t for t in data.mutable_tags if t.pattern.fullmatch(shown)), None)
    if rule is None:
        return []
    image_id = fp.get("image.id")
    pinned = f" The inspect's image id {image_id.value} records what ran." if image_id is not None else ""
    return [
        Finding(
            "image-mutable-tag",
            "info" if image_id is not None else rule.severity,
            f"The image {ref.value} is referenced by the tag {shown!r} without a digest: {rule.why}.{pinned}",
            [ref.source] + ([image_id.source] if image_id is not None else []),
            "Pin the image by digest (repository@sha256:…; `docker inspect --format '{{index "
            ".RepoDigests 0}}' "
            "IMAGE` prints it) so every trial runs the same image.",
        )
    ]


def mutable_model(fp: Fingerprint, data: CheckData) -> list[Finding]:
    model = fp.get("arg.model")
    if model is None or not isinstance(model.value, str) or not _is_hub_id(model.value, data):
        return []
    for name in ("arg.revision", "engine.revision"):
        if fp.value(name) not in (None, "", "None"):
            return []
    remote = (
        " and --trust-remote-code runs the repository's code as it is today"
        if as_bool(fp.value("arg.trust_remote_code"))
        else ""
    )
    return [
        Finding(
            "model-mutable-reference",
            "warning",
            f"The model {model.value} is a Hub repository given without --revision: its weights, config and "
            f"tokenizer are whatever the branch holds when the server starts{remote}.",
            [model.source],
            "Pin it with --revision <commit sha> (and --code-revision with --trust-remote-code), "
            "or serve a local "
            "snapshot path.",
        )
    ]


def _is_hub_id(model: str, data: CheckData) -> bool:
    text = model.strip()
    if not _HUB_ID.fullmatch(text):
        return False  # a path (/…, ./…, ~/…), a URL, a variable, a placeholder
    return not any(text.lower().startswith(prefix) for prefix in data.local_model_prefixes)


CHECKS = (debug_variables, prefix_caching, nccl_inherited, mutable_image, mutable_model)
