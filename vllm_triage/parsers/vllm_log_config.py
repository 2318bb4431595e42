"""The configuration a vLLM server log declares about itself: the parsed truth of what ran.

Lines read (first occurrence of each; everything else is skipped without being parsed):

    vLLM API server version 0.9.2                      -> fact vllm.version
    ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.17.1          -> fact vllm.version (logo, v0.15+)
      █▄█▀ █     █     █     █  model   org/Model        -> fact vllm.model
    vLLM server version 0.16.0, serving model org/M    -> facts vllm.version, vllm.model
    non-default args: {'model_tag': 'm', 'tensor_parallel_size': 2, …}   -> knobs arg.<dest>
    args: Namespace(host=None, port=8000, model='m', …)                   -> knobs arg.<dest>
    Initializing a V1 LLM engine (v0.10.1) with config: model='m', …, tensor_parallel_size=2, …
                                                       -> facts engine.*, vllm.version
    Automatically detected platform cuda.              -> fact platform
    vLLM is using nccl==2.21.5                         -> fact nccl.version
    Using FLASH_ATTN attention backend out of potential backends: […]  -> fact attention.backend

Lines may carry any prefix a real log has (docker/kubectl timestamps, compose `svc-1  | `,
journald, CRI, ANSI colours, JSON envelopes, `(EngineCore_DP0 pid=7)` process prefixes, the vLLM
logger prefix); they are stripped by `vllm_triage.ingest.prefixes`, the grammar the LogFrame
uses, so every line triage understands is read here too. Line numbers count `\\n` (as `wc -l` and editors do).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from vllm_triage.core import pysource
from vllm_triage.core.roles import Role
from vllm_triage.ingest import gutter, prefixes
from vllm_triage.parsers.base import ParseResult
from vllm_triage.parsers.registry import parser

KIND = "vllm_log.config"
NAMESPACE_NOTE = "Namespace (all args, defaults included)"
NON_DEFAULT_NOTE = "non-default args"

_VERSION_API = re.compile(r"vLLM (?:API )?server version (?P<version>\S+?)(?:,| serving|$)")
_SERVING = re.compile(r"vLLM server version (?P<version>\S+), serving model (?P<model>\S+)")
_LOGO_VERSION = re.compile(r"[█▀▄]\s+version\s+(?P<version>\S+)\s*$")
_LOGO_MODEL = re.compile(r"[█▀▄]\s+model\s{2,}(?P<model>\S+)\s*$")
_ENGINE = re.compile(
    r"Initializing an? (?:(?P<gen>V[01]) )?LLM engine(?: \(v(?P<version>[^)\s]+)\))? with config: "
    r"(?P<config>.*)$"
)
_PLATFORM = re.compile(r"Automatically detected platform (?P<platform>[\w-]+)\.")
_NCCL = re.compile(r"vLLM is using nccl==(?P<version>[\w.+-]+)")
_BACKEND_CHOSEN = re.compile(r"^Using (?P<name>[A-Z][A-Z0-9_]+) attention backend out of potential backends")
_BACKEND_FORCED = re.compile(r"^Using (?P<name>[A-Z][A-Z0-9_]+) backend\.$")
_BACKEND_OLD = re.compile(
    r"^Using (?P<name>Flash Attention|FlashInfer|XFormers|Triton|FlashMLA|Torch SDPA|ROCmFlashAttention"
    r"|Pallas|IPEX|TRITON_MLA|FlashAttention|CPU SDPA)(?: \w+)? backend(?: on V1 engine)?\.?"
)
# Old-style (≤ v0.11) backend names mapped to the enum names newer versions print.
_BACKEND_NAMES = {
    "Flash Attention": "FLASH_ATTN",
    "FlashAttention": "FLASH_ATTN",
    "FlashInfer": "FLASHINFER",
    "XFormers": "XFORMERS",
    "Triton": "TRITON_ATTN",
    "FlashMLA": "FLASHMLA",
    "Torch SDPA": "TORCH_SDPA",
    "CPU SDPA": "TORCH_SDPA",
    "ROCmFlashAttention": "ROCM_FLASH",
    "Pallas": "PALLAS",
    "IPEX": "IPEX",
    "TRITON_MLA": "TRITON_MLA",
}
# Engine-banner keys emitted as facts (`engine.<name>`); the banner's field set changes per release.
_ENGINE_FACTS = (
    "model",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "data_parallel_size",
    "max_seq_len",
    "dtype",
    "quantization",
    "enforce_eager",
    "kv_cache_dtype",
    "load_format",
    "seed",
    "enable_prefix_caching",
    "trust_remote_code",
    "revision",
    "served_model_name",
    "disable_custom_all_reduce",
    "tokenizer",
)
# CLI plumbing in the args dump, not settings of the server.
_SKIPPED_ARGS = {"dispatch_function", "subparser"}
# A traceback frame inside the vllm package: a pasted crash with no logger line is still a vLLM log.
_VLLM_FRAME = re.compile(r'^\s*File "[^"\n]*[/\\]vllm[/\\][^"\n]*\.py", line \d+', re.MULTILINE)
_STRONG_MARKERS = (
    "vLLM API server version",
    "non-default args:",
    "LLM engine (v",
    "(APIServer pid=",
    "(EngineCore",
    "(VllmWorker",
    "Automatically detected platform",
    "vLLM server version",
    "args: Namespace(",
)


def looks_like(text: str) -> bool:
    """True for a vLLM server log (any version, any transport prefix)."""
    if not text:
        return False
    head = text[:1_000_000]
    if "\x00" in head[:4096]:
        return False
    if any(marker in head for marker in _STRONG_MARKERS) or _VLLM_FRAME.search(head):
        return True
    prefixed = sum(1 for line in head.splitlines()[:2000] if prefixes.split_line(line).logger == "vllm")
    return prefixed >= 2


def strip_line(line: str) -> tuple[str, str | None]:
    """(message, logger file) of one raw log line, by the one prefix grammar (the LogFrame's):
    transports, JSON envelope, ANSI, process, rank and logger prefixes removed."""
    parts = prefixes.split_line(line, json_lines=True)
    return parts.message.rstrip(), prefixes.source_file(parts)


# ------------------------------------------------------------------------------------ line search


@dataclass
class _Hit:
    line: int  # 1-based
    message: str
    logger_file: str | None
    end: int  # offset just past the line in the text


def _hits(text: str, needle: str) -> Iterator[_Hit]:
    """Every line containing `needle`, stripped, with its 1-based line number.

    Uses str.find rather than splitting, so a multi-GB log is not copied into a list of lines;
    line numbers are counted incrementally between hits.
    """
    position = 0
    counted_to = 0
    line_number = 1
    while True:
        found = text.find(needle, position)
        if found < 0:
            return
        start = text.rfind("\n", 0, found) + 1
        end = text.find("\n", found)
        end = len(text) if end < 0 else end
        line_number += text.count("\n", counted_to, start)
        counted_to = start
        message, logger_file = strip_line(text[start:end])
        yield _Hit(line_number, message, logger_file, end)
        position = end + 1


def _first(text: str, needle: str, accept: Callable[[_Hit], Any]) -> tuple[_Hit, Any] | None:
    """The first line containing `needle` for which `accept` returns something truthy."""
    for hit in _hits(text, needle):
        value = accept(hit)
        if value:
            return hit, value
    return None


# ---------------------------------------------------------------------------------------- parsing


# Never asked by sniffing: a log is recognised by how many of its lines look like one (parsers/roles.py).
@parser(Role.VLLM_LOG, looks_like=looks_like, sniff=None)
def parse(text: str, file: str) -> ParseResult:
    """Facts and knobs a vLLM log states about its own configuration."""
    result = ParseResult(kind=KIND)
    text = text or ""
    if "\x00" in text[:4096] and not looks_like(text):
        result.notes.append(f"{file}: binary content, not a vLLM log")
        return result
    pasted = gutter.learn(text[:65536].splitlines())
    if pasted is not None:
        # What a paste put before every line (indentation, line numbers, a tail's tag) off first,
        # as triage's scan does; one line for one line, so line numbers stay.
        text = "\n".join(pasted.strip_line(line) for line in text.split("\n"))
    versions: list[tuple[int, str, str]] = []  # (line, version, where it was read)
    _read_version_lines(text, file, result, versions)
    _read_args(text, file, result)
    _read_engine_banner(text, file, result, versions)
    _read_simple_facts(text, file, result)
    if versions:
        line, version, source = min(versions)
        result.fact("vllm.version", version, file, line, source)
        if len({v for _, v, _ in versions}) > 1:
            seen = ", ".join(f"{v} ({where}, line {n})" for n, v, where in sorted(versions))
            result.notes.append(f"{file}: the log states different vLLM versions: {seen}")
    if not versions and not result.knobs and "engine.generation" not in result.facts:
        result.notes.append(f"{file}: no version banner, args line or engine banner in this log")
    return result


def _read_version_lines(
    text: str, file: str, result: ParseResult, versions: list[tuple[int, str, str]]
) -> None:
    api = _first(text, "server version", lambda hit: _VERSION_API.search(hit.message))
    if api:
        hit, match = api
        versions.append((hit.line, match.group("version"), "version banner"))
        serving = _SERVING.search(hit.message)
        if serving:
            result.fact("vllm.model", serving.group("model"), file, hit.line)
    logo = _first(text, "version", lambda hit: _LOGO_VERSION.search(hit.message))
    if logo:
        hit, match = logo
        versions.append((hit.line, match.group("version"), "logo"))
        # The logo's model line follows its version line (look two lines ahead at most).
        following = text[hit.end + 1 : hit.end + 4096].split("\n", 2)[:2]
        for distance, raw in enumerate(following, start=1):
            model = _LOGO_MODEL.search(strip_line(raw)[0])
            if model:
                result.fact("vllm.model", model.group("model"), file, hit.line + distance)
                break


def _read_args(text: str, file: str, result: ParseResult) -> None:
    non_default = _first(text, "non-default args:", lambda hit: _after(hit.message, "non-default args:"))
    if non_default:
        hit, body = non_default
        pairs, complete = _parse_dict_repr(body)
        _emit_args(pairs, file, hit.line, NON_DEFAULT_NOTE, result)
        if not complete:
            result.notes.append(
                f"{file}:{hit.line}: the non-default args line is cut; read as far as it goes"
            )
    namespace = _first(text, "args: Namespace(", lambda hit: _after(hit.message, "args: Namespace("))
    if namespace:
        hit, body = namespace
        pairs, complete = _parse_keyword_pairs(body, closing=")")
        _emit_args(pairs, file, hit.line, NAMESPACE_NOTE, result)
        if not complete:
            result.notes.append(f"{file}:{hit.line}: the args Namespace line is cut; read as far as it goes")


def _after(message: str, marker: str) -> str | None:
    index = message.find(marker)
    return message[index + len(marker) :].strip() if index >= 0 else None


def _emit_args(pairs: list[tuple[str, Any]], file: str, line: int, note: str, result: ParseResult) -> None:
    for key, value in pairs:
        if key in _SKIPPED_ARGS:
            continue
        name = "arg.model" if key == "model_tag" else f"arg.{key}"
        if name == "arg.model" and value is None:
            continue  # `model_tag=None` with `--model` given: the model is in `model`
        if name not in result.knobs:  # non-default args (read first) win over a Namespace dump
            result.knob(name, value, file, line, note)


def _read_engine_banner(
    text: str, file: str, result: ParseResult, versions: list[tuple[int, str, str]]
) -> None:
    found = _first(text, "LLM engine", lambda hit: _ENGINE.search(hit.message))
    if not found:
        return
    hit, match = found
    if match.group("version"):
        versions.append((hit.line, match.group("version"), "engine banner"))
    generation = match.group("gen")
    if generation is None:
        # "Initializing an LLM engine" is V0's llm_engine.py, except in v0.6.4–v0.7.0 where the
        # opt-in V1 engine printed the same words from v1/engine/core.py.
        generation = "V1" if (hit.logger_file or "").endswith("core.py") else "V0"
    result.fact("engine.generation", generation, file, hit.line)
    config_text = match.group("config").rstrip()
    if config_text.endswith(")") and config_text.count(")") > config_text.count("("):
        config_text = config_text[:-1]  # ≤ v0.5 banners close the config with ")"
    pairs, complete = _parse_keyword_pairs(config_text, closing=None)
    config = dict(pairs)
    for key in _ENGINE_FACTS:
        if key in config:
            result.fact(f"engine.{key}", _engine_value(key, config[key]), file, hit.line)
    if "enable_chunked_prefill" in config or "chunked_prefill_enabled" in config:
        value = config.get("enable_chunked_prefill", config.get("chunked_prefill_enabled"))
        result.fact("engine.enable_chunked_prefill", value, file, hit.line)
    if not complete:
        result.notes.append(f"{file}:{hit.line}: the engine banner is cut; read as far as it goes")


def _engine_value(key: str, value: Any) -> Any:
    """Normalise banner spellings to the CLI's: `torch.bfloat16` -> bfloat16, `LoadFormat.AUTO` -> auto."""
    if isinstance(value, str):
        if key == "dtype" and value.startswith("torch."):
            return value[len("torch.") :]
        if key == "load_format" and re.fullmatch(r"LoadFormat\.\w+", value):
            return value.split(".", 1)[1].lower()
    return value


def _read_simple_facts(text: str, file: str, result: ParseResult) -> None:
    platform = _first(text, "Automatically detected platform", lambda hit: _PLATFORM.search(hit.message))
    if platform:
        result.fact("platform", platform[1].group("platform"), file, platform[0].line)
    nccl = _first(text, "vLLM is using nccl==", lambda hit: _NCCL.search(hit.message))
    if nccl:
        result.fact("nccl.version", nccl[1].group("version"), file, nccl[0].line)
    backend = _first(text, "backend", lambda hit: _attention_backend(hit.message))
    if backend:
        hit, (name, raw) = backend
        note = None if name == raw else f"logged as {raw!r}"
        result.fact("attention.backend", name, file, hit.line, note)


def _attention_backend(message: str) -> tuple[str, str] | None:
    for pattern in (_BACKEND_CHOSEN, _BACKEND_FORCED):
        match = pattern.search(message)
        if match:
            return match.group("name"), match.group("name")
    match = _BACKEND_OLD.search(message)
    if match:
        raw = match.group("name")
        return _BACKEND_NAMES.get(raw, raw.upper().replace(" ", "_")), raw
    return None


# ------------------------------------------------------------------------------- repr scanning


def _parse_dict_repr(body: str) -> tuple[list[tuple[str, Any]], bool]:
    """Pairs of a Python dict repr; (pairs, complete). Literal values keep their JSON types."""
    try:
        value = pysource.literal_eval(body)
        if isinstance(value, dict):
            return [(str(k), _jsonable(v)) for k, v in value.items()], True
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pass
    # Non-literal reprs (`<function …>`, `LoRAModulePath(name=…)`) or a cut line: scan pair by pair.
    inner = body[1:] if body.startswith("{") else body
    pairs = []
    pieces, complete = _split_top_level(inner, closing="}")
    for piece in pieces:
        key_text, sep, value_text = _split_key(piece, ":")
        if not sep:
            continue
        try:
            key = pysource.literal_eval(key_text.strip())
        except (ValueError, SyntaxError):
            continue
        pairs.append((str(key), _literal_or_repr(value_text)))
    return pairs, complete


def _parse_keyword_pairs(body: str, closing: str | None) -> tuple[list[tuple[str, Any]], bool]:
    """`k=v, k2=v2` pairs (a Namespace repr or an engine banner); values may hold commas and brackets."""
    pairs: list[tuple[str, Any]] = []
    pieces, complete = _split_top_level(body, closing=closing)
    for piece in _split_missing_commas(pieces):
        key, sep, value_text = piece.partition("=")
        key = key.strip()
        if sep and re.fullmatch(r"[A-Za-z_]\w*", key):
            pairs.append((key, _literal_or_repr(value_text)))
        elif pairs and piece.strip():
            # A comma inside an unquoted value (`served_model_name=a, b`): glue it back on.
            last_key, last_value = pairs[-1]
            pairs[-1] = (last_key, f"{last_value}, {piece.strip()}")
    return pairs, complete


def _split_missing_commas(pieces: list[str]) -> list[str]:
    """v0.6 banners lack some commas (`chunked_prefill_enabled=True multi_step_stream_outputs=True`)."""
    out = []
    for piece in pieces:
        while True:
            glued = re.match(r"^(\s*\w+=[^\s'\"(\[{<]*)\s+(\w+=.*)$", piece, re.DOTALL)
            if not glued:
                break
            out.append(glued.group(1))
            piece = glued.group(2)
        out.append(piece)
    return out


def _split_top_level(text: str, closing: str | None) -> tuple[list[str], bool]:
    """Comma-separated pieces at bracket depth 0, quote-aware, up to an unmatched `closing`.

    Returns (pieces, complete): complete when the closing bracket was seen (or, with no closing
    bracket expected, when the text ended outside any bracket or quote).
    """
    pieces: list[str] = []
    depth = 0
    quote = ""
    start = 0
    index = 0
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\":
                index += 2
                continue
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "([{<":
            depth += 1
        elif char in ")]}>" and depth > 0:
            depth -= 1
        elif closing is not None and char == closing and depth == 0:
            pieces.append(text[start:index])
            return pieces, True
        elif char == "," and depth == 0:
            pieces.append(text[start:index])
            start = index + 1
        index += 1
    complete = closing is None and depth == 0 and not quote
    tail = text[start:]
    # A cut line's last piece may be cut mid-value (`'seed': 42` of `4213`): keep whole pieces only.
    if tail.strip() and complete:
        pieces.append(tail)
    return pieces, complete


def _split_key(piece: str, separator: str) -> tuple[str, str, str]:
    """Split `'key': value` at the first separator outside quotes."""
    quote = ""
    for index, char in enumerate(piece):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == separator:
            return piece[:index], separator, piece[index + 1 :]
    return piece, "", ""


def _literal_or_repr(text: str) -> Any:
    """The Python literal as a JSON-typed value, else the repr text itself (e.g. `auto`, `<Enum.X: 3>`)."""
    text = text.strip()
    try:
        return _jsonable(pysource.literal_eval(text))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_jsonable(v) for v in value), key=repr)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, complex):
        return str(value)
    return value
