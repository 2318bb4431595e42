"""From the Sources of a bundle to one Fingerprint: read, parse by role, merge with precedence.

Precedence says which source wins when several name the same knob or fact. The rule behind it:
what the run itself recorded beats what a person wrote down. The log's `non-default args` is the
parsed truth of the arguments that ran, `docker inspect` is what the container really had, and a
launch command pasted into a ticket may have been retyped. The losing values stay visible: on the
winner's note, and as a finding when they disagree.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from vllm_triage.core.errors import InputError
from vllm_triage.core.finding import Finding
from vllm_triage.core.provenance import Provenance, Sourced
from vllm_triage.core.roles import Role
from vllm_triage.fingerprint import derive
from vllm_triage.fingerprint.data import CheckData
from vllm_triage.fingerprint.model import Candidate, Fingerprint
from vllm_triage.fingerprint.values import canonical, gpu_selection, image_name, opaque
from vllm_triage.ingest.decode import SNIFF_BYTES, check_text, decode_all
from vllm_triage.ingest.manifest import read_manifest
from vllm_triage.ingest.sources import Source
from vllm_triage.parsers.base import ParseResult
from vllm_triage.parsers.env_file import is_secret_name
from vllm_triage.parsers.log_head import command_before_log
from vllm_triage.parsers.registry import REGISTRY
from vllm_triage.parsers.roles import scope_hint

# A vLLM log can be many GB; what it says about its own configuration is at the start.
LOG_HEAD_BYTES = 5 * 1024 * 1024
# Environment artefacts are small; anything bigger than this is not one and is read in part.
ARTEFACT_MAX_BYTES = 16 * 1024 * 1024
# A limit reached stops the command (exit 4): skipping the member would read a different bundle.
_LIMIT_ERRORS = ("input-too-large", "archive-too-large")
# Roles read as one JSON document: a prefix of one is not a reading of it.
_WHOLE_DOCUMENTS = (Role.CONTAINER_INSPECT, Role.REQUEST)

# Who wins, by name prefix (first listed wins); roles not listed rank after, in _DEFAULT_ORDER.
_PRECEDENCE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("arg.", (Role.VLLM_LOG, Role.CONTAINER_INSPECT, Role.LAUNCH_COMMAND)),
    ("env.", (Role.CONTAINER_INSPECT, Role.ENVIRONMENT, Role.LAUNCH_COMMAND, Role.COLLECT_ENV)),
    ("image.", (Role.CONTAINER_INSPECT, Role.LAUNCH_COMMAND)),
    ("container.", (Role.CONTAINER_INSPECT, Role.NVIDIA_SMI, Role.COLLECT_ENV, Role.LAUNCH_COMMAND)),
    ("launcher", (Role.LAUNCH_COMMAND, Role.CONTAINER_INSPECT)),
    ("vllm.", (Role.VLLM_LOG, Role.COLLECT_ENV)),
)
_DEFAULT_ORDER = (
    Role.VLLM_LOG,
    Role.CONTAINER_INSPECT,
    Role.NVIDIA_SMI,
    Role.COLLECT_ENV,
    Role.LAUNCH_COMMAND,
    Role.ENVIRONMENT,
    Role.REQUEST,
)
# Values that change from one snapshot to the next, or between shells: two readings that differ
# are no conflict.
_VOLATILE_SUFFIXES = (
    ".gpu_memory_used_mib",
    ".gpu_processes",
    ".gpu_process_list",
    ".topology",
    ".status",
    ".started_at",
    ".finished_at",
)
_VOLATILE_NAMES = {"env.PATH", "env.LD_LIBRARY_PATH", "env.HOSTNAME", "env.HOME", "env.PWD", "env.SHLVL"}

# bundle.toml run metadata → fingerprint names (DESIGN §4: the node is a knob of the host).
_MANIFEST_KEYS = {
    "node": ("knob", "host.node"),
    "label": ("fact", "run.label"),
    "start": ("fact", "run.start"),
    "started": ("fact", "run.start"),
}
_METADATA = {name for _, name in _MANIFEST_KEYS.values()}


def combine(sources: list[Source], data: CheckData) -> Fingerprint:
    """Parse every recognised source and merge the results into one Fingerprint."""
    fingerprint = Fingerprint()
    readings: list[tuple[str, ParseResult]] = []
    unscoped: list[str] = []  # GPU views that nothing places on the host or in the container
    for source in sources:
        role = source.role or Role.UNKNOWN
        if role == Role.MANIFEST:
            fingerprint.inputs.append(
                {"path": source.name, "role": role, "scope": None, "kind": Role.MANIFEST}
            )
            readings.append((role, _read_manifest(source)))
            continue
        if REGISTRY.get(role) is None and len(sources) == 1:
            check_text(source.head(SNIFF_BYTES), source.name)  # empty or binary: say that, not "unknown"
            raise InputError(
                "not-an-artefact",
                f"{source.name} is not an environment artefact",
                "give nvidia-smi output, docker/podman inspect JSON, a launch command, collect_env output, "
                "an env file, a request, or a vLLM log",
            )
        if REGISTRY.get(role) is None:
            fingerprint.notes.append(f"{source.name}: not recognised as an environment artefact; skipped")
            fingerprint.inputs.append(
                {"path": source.name, "role": Role.UNKNOWN, "scope": None, "kind": None}
            )
            continue
        role, result, scope = _read_one(source, role, fingerprint, len(sources) == 1, unscoped)
        fingerprint.inputs.append({"path": source.name, "role": role, "scope": scope, "kind": result.kind})
        readings.append((role, result))
    if not any(role != Role.MANIFEST for role, _ in readings):
        raise InputError(
            "no-artefact",
            "nothing in the input is an environment artefact (nvidia-smi, inspect JSON, launch command, "
            "collect_env, env file, request, vLLM log)",
        )
    if unscoped:
        fingerprint.findings.insert(0, _scope_unknown(unscoped))
    _merge(fingerprint, readings)
    read_something = (fingerprint.knobs.keys() | fingerprint.facts.keys()) - _METADATA
    if not read_something and not any(r.problems for _, r in readings):
        notes = "; ".join(note for _, r in readings for note in r.notes[:2])
        raise InputError("nothing-read", "no knob or fact could be read from the input", notes or None)
    derive.derive_all(fingerprint, data)
    return fingerprint


def _read_one(
    source: Source, role: str, fingerprint: Fingerprint, lone: bool, unscoped: list[str]
) -> tuple[str, ParseResult, str | None]:
    """Read and parse one source; returns the role it was read as, the result and its scope."""
    try:
        limit = LOG_HEAD_BYTES if role == Role.VLLM_LOG else ARTEFACT_MAX_BYTES
        text, cut = read_text(source, limit)
    except InputError as exc:
        if lone or exc.problem_id in _LIMIT_ERRORS:
            raise  # a lone empty or binary file, or a limit reached, is bad input: say so, exit 4
        reason = "empty or binary" if exc.problem_id in ("empty-input", "binary-input") else exc.message
        fingerprint.notes.append(f"{source.name}: {reason}; skipped")
        return role, ParseResult(kind="unreadable"), None
    if cut and role in _WHOLE_DOCUMENTS:
        # A JSON cut at the limit no longer parses: refuse it by its size rather than call a
        # complete document "cut short".
        message = f"{source.name} is larger than {limit // 2**20} MiB: too large for a {role} document"
        if lone:
            raise InputError("input-too-large", message, "give the inspect or request JSON of one container")
        fingerprint.notes.append(f"{message}; skipped")
        return role, ParseResult(kind="too-large"), None
    if cut:
        fingerprint.notes.append(f"{source.name}: only the first {limit // 2**20} MiB were read")
    scope = source.scope or scope_hint(source.name)
    try:
        result = _parse(role, text, source.name, scope)
    except Exception as exc:  # parsers promise not to raise; a bug in one must not lose the rest
        fingerprint.notes.append(f"{source.name}: could not be read ({type(exc).__name__}: {exc})")
        return role, ParseResult(kind="unreadable"), None
    for paired in _PAIRED.get(Role(role), ()) if role in Role._value2member_map_ else ():
        _add_embedded(result, paired, text, source.name, scope)
    if role == Role.VLLM_LOG:
        _add_launch_above_log(result, text, source.name)
    if _empty(result):
        second = _second_opinion(text, source.name, role, scope)
        if second is not None:
            fingerprint.notes.append(
                f"{source.name}: sniffed as {role} but read nothing as that; read as {second[0]}"
            )
            role, result = second
    if not REGISTRY[role].scoped:
        scope = None
    elif scope is None:
        unscoped.append(source.name)
    if role == Role.NVIDIA_SMI and any(p.id == "nvidia-smi-no-devices" for p in result.problems):
        # "No devices were found" is a reading: this view has zero GPUs.
        where = result.problems[0].evidence[0] if result.problems[0].evidence else Provenance(source.name)
        result.facts.setdefault(
            f"{scope or 'gpu'}.gpu_count", Sourced(0, where, "nvidia-smi found no devices")
        )
    fingerprint.notes.extend(
        f"{source.name}: {note}" if source.name not in note else note for note in result.notes
    )
    fingerprint.findings.extend(result.problems)
    return role, result, scope


def _parse(role: str, text: str, name: str, scope: str | None) -> ParseResult:
    return REGISTRY[role].read(text, name, scope)


def _empty(result: ParseResult) -> bool:
    return not (result.knobs or result.facts or result.problems)


# An issue paste often holds several artefacts in one file: the collect_env output and the log,
# the launch command and the nvidia-smi screen after it. Whichever the file was sniffed as, the
# others that claim the text are read too (values already read win where they overlap).
_PAIRED: dict[Role, tuple[Role, ...]] = {
    Role.VLLM_LOG: (Role.COLLECT_ENV,),
    Role.COLLECT_ENV: (Role.VLLM_LOG,),
    Role.NVIDIA_SMI: (Role.LAUNCH_COMMAND,),
    Role.LAUNCH_COMMAND: (Role.NVIDIA_SMI,),
}


def _add_embedded(result: ParseResult, other: str, text: str, name: str, scope: str | None) -> None:
    try:
        if REGISTRY[other].looks_like(text):
            result.merge(_parse(other, text, name, scope))
    except Exception:  # the embedded part is a bonus; the file was read already
        return


def _add_launch_above_log(result: ParseResult, text: str, name: str) -> None:
    """A paste of `$ vllm serve m …` and then its log: the log is read, and the command above its
    first line too (the launcher is only there; where both give a value, the log's wins)."""
    try:
        head = command_before_log(text)
        if head is not None:
            result.merge(_parse(Role.LAUNCH_COMMAND, head, name, None))
    except Exception:  # the command above the log is a bonus; the log was read already
        return


def _second_opinion(text: str, name: str, role: str, scope: str | None) -> tuple[str, ParseResult] | None:
    """The sniffed role read nothing: ask the other parsers that claim the text (sniffing looks at
    the first 64 KiB and stops at the first claim; a parser reads the whole text)."""
    for found in REGISTRY.formats():
        other = found.role
        if other in (role, Role.VLLM_LOG):
            continue
        try:
            if not found.looks_like(text):
                continue
            result = _parse(other, text, name, scope)
        except Exception:  # a second opinion that fails is no opinion
            continue
        if not _empty(result):
            return other, result
    return None


def _read_manifest(source: Source) -> ParseResult:
    """Run metadata from bundle.toml: top-level keys or a [run] table (parsers/roles.py read its
    [[file]] list)."""
    result = ParseResult(kind="manifest")
    try:
        manifest = read_manifest(source)
    except InputError:
        return result  # role assignment already reported a manifest that does not parse
    document = manifest.document
    run = document.get("run")
    table: dict[str, Any] = run if isinstance(run, dict) else document
    for key, (kind, name) in _MANIFEST_KEYS.items():
        value = table.get(key)
        if value is None or isinstance(value, (dict, list)):
            continue
        (result.knob if kind == "knob" else result.fact)(name, str(value), source.name, manifest.line_of(key))
    return result


def read_text(source: Source, limit: int) -> tuple[str, bool]:
    """The decoded text of a source, at most `limit` bytes (cut at a line end); InputError when
    the source is empty or binary."""
    raw = source.head(limit + 1)  # skips NUL padding before the content, like sniffing does
    encoding = check_text(raw[:SNIFF_BYTES], source.name)
    cut = len(raw) > limit
    if cut:
        raw = raw[:limit]
        if not encoding.startswith("utf-16"):
            raw = raw[: raw.rfind(b"\n") + 1] or raw
    return decode_all(raw, encoding), cut


def _scope_unknown(files: list[str]) -> Finding:
    names = ", ".join(PurePosixPath(f.replace("!", "/")).name for f in files)
    return Finding(
        "gpu-scope-unstated",
        "info",
        f"Nothing says whether {names} {'was' if len(files) == 1 else 'were'} taken on the host or "
        f"inside the "
        "container, so those GPU values are under gpu.* and are compared with neither.",
        [Provenance(f) for f in files],
        "Name the files …-host.txt / …-container.txt, or declare them in bundle.toml "
        '(role = "nvidia_smi.host" / "nvidia_smi.container").',
    )


def _rank(name: str, role: str) -> int:
    for prefix, order in _PRECEDENCE:
        if name.startswith(prefix) and role in order:
            return order.index(role)
    position = _DEFAULT_ORDER.index(role) if role in _DEFAULT_ORDER else len(_DEFAULT_ORDER)
    return 100 + position


def _merge(fingerprint: Fingerprint, readings: list[tuple[str, ParseResult]]) -> None:
    for role, result in readings:
        for kind, values in (("knob", result.knobs), ("fact", result.facts)):
            for name, sourced in values.items():
                fingerprint.candidates.setdefault(name, []).append(Candidate(role, kind, sourced))
    differing_args: list[tuple[str, Candidate, Candidate]] = []
    for name, candidates in fingerprint.candidates.items():
        candidates.sort(key=lambda c: _rank(name, c.role))  # stable: first read wins a tie
        winner = candidates[0]
        others = [c for c in candidates[1:] if _differs(name, winner.sourced.value, c.sourced.value)]
        sourced = winner.sourced
        if others:
            also = "; ".join(
                f"{_shown(name, o.sourced.value)} in {o.sourced.source} ({o.role})" for o in others
            )
            note = f"{sourced.note}; also {also}" if sourced.note else f"also {also}"
            sourced = Sourced(sourced.value, sourced.source, note)
            for other in others:
                if name.startswith("arg.") and winner.role == Role.VLLM_LOG:
                    differing_args.append((name, winner, other))
                elif not _volatile(name):
                    fingerprint.findings.append(_conflict(name, winner, other))
        (fingerprint.knobs if winner.kind == "knob" else fingerprint.facts)[name] = sourced
    if differing_args:
        fingerprint.findings.append(_args_differ(differing_args))


def _volatile(name: str) -> bool:
    return name in _VOLATILE_NAMES or name.endswith(_VOLATILE_SUFFIXES)


def _differs(name: str, a: Any, b: Any) -> bool:
    if a is None or b is None or opaque(a) or opaque(b):
        return False
    if name == "container.gpus":
        sa, sb = gpu_selection(a), gpu_selection(b)
        if sa is not None and sb is not None:
            return str(sa) != str(sb)
    if name == "image.ref":
        return image_name(a) != image_name(b)
    return bool(canonical(a) != canonical(b))


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shown(name: str, value: Any, limit: int = 80) -> str:
    """A value as a message or a note quotes it. A secret-named knob's never is (issue 11): the
    message is cut to a length, and a secret cut in half is out of every redaction's reach."""
    if is_secret_name(name.rsplit(".", 1)[-1]):
        return "<redacted>"
    return _short(value, limit)


def _conflict(name: str, winner: Candidate, other: Candidate) -> Finding:
    return Finding(
        "value-conflict",
        "info",
        f"{name}: {_shown(name, winner.sourced.value)} ({winner.role}, {winner.sourced.source}) but "
        f"{_shown(name, other.sourced.value)} ({other.role}, {other.sourced.source}); the {winner.role} "
        f"value is used",
        [winner.sourced.source, other.sourced.source],
        "Check that these artefacts come from the same run; collect them together (one bundle per trial).",
    )


def _args_differ(rows: list[tuple[str, Candidate, Candidate]]) -> Finding:
    parts = [
        # A secret's pair reads `api_key: <redacted> …`: `api_key: log …` would read as the key's value.
        f"{name[4:]}: <redacted> in the log vs <redacted> in the {other.role.replace('_', ' ')}"
        if _shown(name, None) == "<redacted>"
        else f"{name[4:]}: log {_short(winner.sourced.value, 40)} vs {other.role.replace('_', ' ')} "
        f"{_short(other.sourced.value, 40)}"
        for name, winner, other in rows
    ]
    evidence: list[Provenance] = []
    for _, winner, other in rows:
        for where in (winner.sourced.source, other.sourced.source):
            if where not in evidence:
                evidence.append(where)
    return Finding(
        "args-differ-from-log",
        "warning",
        "The arguments the server logged differ from the launch command given: "
        + "; ".join(parts)
        + ". The log's values are what ran and are used here.",
        evidence,
        "Use the command that produced this log (or the log's `non-default args:` line) as the baseline; "
        "a command retyped from memory is not the command that ran.",
    )
