"""Decide what each file of a bundle is: a vLLM log, nvidia-smi output, an inspect JSON, …

Content decides; the file name is only a hint (used for host/container scope and to break
ties). A `bundle.toml` manifest, when present, names roles explicitly and wins over sniffing.
Roles are core.roles.Role; the sniffers are the registered parsers' (parsers/registry.py). This
lives with the parsers, not in ingest, because sniffing asks them.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from vllm_triage.core.errors import InputError
from vllm_triage.core.roles import Role
from vllm_triage.ingest import prefixes
from vllm_triage.ingest.decode import SNIFF_BYTES, check_text, decode_all
from vllm_triage.ingest.manifest import MANIFEST_NAME, is_manifest, read_manifest
from vllm_triage.ingest.sources import Source
from vllm_triage.parsers.registry import REGISTRY, Format, Registry

# Lines that only a log of a vLLM server (or the Python/torch/NCCL stack under it) prints.
# The prefix heads come from the one grammar; any transport may precede them (`^(?:.*?\s)?`).
_LOG_LINE = re.compile(
    # (a backtick before it: a line quoted as Markdown inline code, ingest/prefixes.CODE_SPAN)
    rf"(?m)^(?:.*?[\s`])?(?:{prefixes.LOGGER_HEAD}"
    r"|Traceback \(most recent call last\)"
    rf"|{prefixes.RANK_HEAD}"
    rf"|{prefixes.PROCESS_HEAD}"
    rf"|{prefixes.UVICORN_HEAD}"
    rf"|\{{.*\"{prefixes.JSON_RECORD_KEY}\"\s*:\s*\"(?:{prefixes.LEVELS})\""  # vLLM's JSON logging
    r"|NCCL (?:INFO|WARN)"
    r"|\w+(?:Error|Exception): "
    # pydantic's body line under a ValidationError headline, often all a user pastes of it
    # (vLLM >= 0.10 validates its configs with pydantic: `Value error, User-specified max_model_len …`)
    r"|Value error, \S"
    r"|Loading safetensors checkpoint shards"
    r"|Avg prompt throughput)"
)
# argparse's fatal line (`vllm serve: error: argument --x: invalid choice …`, `api_server.py: error:
# unrecognized arguments …`): the whole output of a run that stopped at its command line. A paste
# of the command followed by it is that run's log, not a launch command.
_ARGPARSE_FATAL = re.compile(
    r"(?m)^(?:.*?\s)?[\w./-]+(?: \w+)?: error: (?:argument |unrecognized arguments|the following arguments)"
)
# `{"key"…` or `[{…` / `["…` / `[1…`: a JSON document; `[rank0]:` or `[2025-…]` lines are not.
_JSON_DOCUMENT = re.compile(r'^(?:\{\s*"|\[\s*(?:[{\["\]]|-?\d+\s*[,\]]))')
# No artefact of another kind (collect_env, nvidia-smi, inspect, env, command, request) in the
# fixtures or the fp-dev corpus has even two log-looking lines.
STRONG_LOG_SCORE = 10
_JSON_LOG_LINE = re.compile(r'^\s*\{.*"(?:log|message|msg)"\s*:\s*"', re.M)


def _looks_like(found: Format, text: str) -> bool:
    try:
        return bool(found.looks_like(text))
    except Exception:  # a sniffer must never take the whole run down
        return False


def log_score(text: str) -> int:
    """How many lines look like vLLM/Python/torch log output (capped; used to rank candidates)."""
    return sum(1 for _ in zip(range(200), _LOG_LINE.finditer(text), strict=False))


def sniff_text(text: str, name: str = "", registry: Registry = REGISTRY) -> Role:
    stripped = text.lstrip("\ufeff \t\r\n")
    if _JSON_LOG_LINE.search(stripped[:4096]) and stripped.startswith("{") and "\n{" in stripped[:65536]:
        return Role.VLLM_LOG  # JSON-lines log (docker json-file driver, structured logging)
    score = log_score(text)
    if _ARGPARSE_FATAL.search(text[:SNIFF_BYTES]):
        score = max(score, 3)
    if score >= STRONG_LOG_SCORE:
        # A GitHub issue paste is collect_env output (or nvidia-smi, the command, the env) followed
        # by the log: with this many log lines in the head, the log is what the file is for.
        return Role.VLLM_LOG
    for found in registry.sniffers():
        if found.role == Role.LAUNCH_COMMAND and score >= 3:
            continue  # a log quotes its own command line; the log is what it is
        if _looks_like(found, text):
            return found.role
    if _JSON_DOCUMENT.match(stripped):
        return (
            Role.UNKNOWN
        )  # a JSON document no parser claims (labels, configs): quoting a log is not being one
    if score >= 1:
        return Role.VLLM_LOG
    hinted = name_hint(name)
    return hinted or Role.UNKNOWN


def name_hint(name: str) -> Role | None:
    base = PurePosixPath(name.replace("!", "/")).name.lower()
    if "nvidia-smi" in base or "nvidia_smi" in base:
        return Role.NVIDIA_SMI
    if "inspect" in base:
        return Role.CONTAINER_INSPECT
    if "collect_env" in base or "collect-env" in base:
        return Role.COLLECT_ENV
    if base.endswith((".log", ".out", ".err")) or base.startswith(("log", "vllm")):
        return Role.VLLM_LOG
    return None


def scope_hint(name: str) -> str | None:
    """host / container from a file or folder name, never guessed from content."""
    lowered = name.lower()
    if re.search(r"(?<![a-z])container|in[-_]container|(?<![a-z])ctr(?![a-z])", lowered):
        return "container"
    if re.search(r"(?<![a-z])host(?![a-z])", lowered):
        return "host"
    return None


def _inside_bundle(source: Source) -> str:
    """The file's path within its bundle: a parent folder named `host-tests/` says nothing."""
    if source.bundle and source.name.startswith(source.bundle):
        return source.name[len(source.bundle) :]
    return source.name.rsplit("/", 1)[-1]


def assign_roles(sources: list[Source]) -> list[Source]:
    """Fill `role` (and `scope`) on every source; manifests first, then content sniffing."""
    manifest_roles: dict[str, str] = {}
    for source in sources:
        if is_manifest(source.name):
            source.role = Role.MANIFEST
            prefix = source.name[: -len(MANIFEST_NAME)]
            for path, role in read_manifest(source).file_roles().items():
                manifest_roles[prefix + path] = role
    for source in sources:
        if source.role == Role.MANIFEST:
            continue
        declared = manifest_roles.get(source.name)
        if declared:
            role, _, scope = declared.partition(".")
            source.role = role
            source.scope = scope or None
            continue
        head = source.head(SNIFF_BYTES)
        try:
            encoding = check_text(head, source.name)
        except InputError:
            source.role = Role.UNKNOWN
            continue
        source.role = sniff_text(decode_all(head, encoding), source.name)
        if source.role == Role.NVIDIA_SMI:
            source.scope = scope_hint(_inside_bundle(source))
    return sources
