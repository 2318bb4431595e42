"""The vLLM command-line options, as data: long names, short aliases and how each takes its value.

The table is the union over vLLM releases (v0.4 → main, 2026): engine arguments
(`vllm/engine/arg_utils.py`), the OpenAI server's frontend arguments
(`vllm/entrypoints/openai/cli_args.py`) and the `vllm serve` extras (`--config`, `--headless`,
`--api-server-count`, `--grpc`). A pasted command can come from any release, so an option that
only an old or only a new release knows is still "known": the point is to canonicalise what a
person wrote and to catch typos, not to say which release accepts it.

How FlexibleArgumentParser reads options (anatomy reference §5.2), which canonicalisation follows:
underscores and dashes are interchangeable (only the part before the first `.`), `--opt=value` and
`--opt value` are equivalent, booleans are `BooleanOptionalAction` (`--X` / `--no-X`) from v0.8,
JSON-valued options also accept dotted sub-keys (`--compilation-config.level 3`), and argparse
accepts any unique prefix of a long option (`--max-model 4096`).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import lru_cache

from rapidfuzz import fuzz, process

# How an option takes its value.
VALUE = "value"  # exactly one value
BOOL = "bool"  # no value; `--no-X` also accepted (BooleanOptionalAction, v0.8+)
JSON = "json"  # one JSON value; dotted sub-keys allowed
LIST = "list"  # nargs="+": every following token up to the next option
OPTIONAL = "optional"  # nargs="?": a value only if the next token is not an option
OPTIONAL_BOOL = "optional_bool"  # v0.6 StoreBoolean: bare, `=False`, or followed by true/false


@dataclass(frozen=True)
class FlagSpec:
    long: str  # "--max-model-len"
    kind: str
    aliases: tuple[str, ...] = ()

    @property
    def dest(self) -> str:
        """The argparse destination, which is also the fingerprint name after `arg.`."""
        return self.long[2:].replace("-", "_")


def _specs(kind: str, names: str) -> list[FlagSpec]:
    """Build specs from a whitespace-separated list; `name|-a|-b` adds short aliases."""
    out = []
    for item in names.split():
        long, *aliases = item.split("|")
        out.append(FlagSpec("--" + long, kind, tuple(aliases)))
    return out


# fmt: off
_VALUE_FLAGS = """
    model task runner convert tokenizer tokenizer-mode dtype seed hf-config-path
    allowed-local-media-path revision code-revision tokenizer-revision max-model-len
    quantization|-q max-logprobs logprobs-mode config-format logits-processor-pattern
    generation-config model-impl override-attention-dtype io-processor-plugin
    intial-incremental-detokenization-offset quantization-param-path max-context-len-to-capture
    max-seq-len-to-capture rope-theta
    load-format download-dir safetensors-load-strategy pt-load-map-location
    reasoning-parser reasoning-parser-plugin guided-decoding-backend
    distributed-executor-backend pipeline-parallel-size|-pp tensor-parallel-size|-tp
    decode-context-parallel-size|-dcp prefill-context-parallel-size|-pcp
    data-parallel-size|-dp data-parallel-rank|-dpn data-parallel-start-rank|-dpr
    data-parallel-size-local|-dpl data-parallel-address|-dpa data-parallel-rpc-port|-dpp
    data-parallel-backend|-dpb all2all-backend dbo-decode-token-threshold
    dbo-prefill-token-threshold expert-placement-strategy num-redundant-experts eplb-window-size
    eplb-step-interval max-parallel-loading-workers worker-cls worker-extension-cls
    distributed-timeout-seconds nnodes|-n node-rank|-r master-addr master-port
    block-size gpu-memory-utilization kv-cache-memory-bytes swap-space kv-cache-dtype
    num-gpu-blocks-override prefix-caching-hash-algo cpu-offload-gb mamba-cache-dtype
    mamba-ssm-cache-dtype mamba-block-size kv-offloading-size kv-offloading-backend
    mm-processor-cache-gb mm-processor-cache-type mm-shm-cache-max-object-size-mb
    mm-encoder-tp-mode mm-encoder-attn-backend video-pruning-rate
    max-loras max-lora-rank lora-extra-vocab-size lora-dtype max-cpu-loras
    max-prompt-adapters max-prompt-adapter-token
    show-hidden-metrics-for-version otlp-traces-endpoint
    max-num-batched-tokens max-num-seqs max-num-partial-prefills max-long-partial-prefills
    long-prefill-token-threshold num-lookahead-slots scheduling-policy scheduler-cls
    scheduler-delay-factor preemption-mode num-scheduler-steps
    max-cudagraph-capture-size optimization-level|-O attention-backend
    spec-method spec-model spec-tokens speculative-model speculative-model-quantization
    speculative-draft-tensor-parallel-size num-speculative-tokens speculative-max-model-len
    speculative-disable-by-batch-size ngram-prompt-lookup-max ngram-prompt-lookup-min
    spec-decoding-acceptance-method typical-acceptance-sampler-posterior-threshold
    typical-acceptance-sampler-posterior-alpha qlora-adapter-name-or-path
    tokenizer-pool-size tokenizer-pool-type device image-input-type image-token-id
    image-input-shape image-feature-size image-processor image-processor-revision
    performance-mode shutdown-timeout
    host port uds uvicorn-log-level disable-access-log-for-endpoints ssl-keyfile ssl-certfile
    ssl-ca-certs ssl-cert-reqs ssl-ciphers root-path middleware chat-template
    chat-template-content-format response-role tool-call-parser tool-parser-plugin tool-server
    log-config-file max-log-len h11-max-incomplete-event-size h11-max-header-count
    fingerprint-mode fingerprint-value cohere-format data-parallel-supervisor-port
    dp-supervisor-probe-interval-s dp-supervisor-probe-timeout-s
    dp-supervisor-probe-failure-threshold api-server-count|-asc config
"""

_BOOL_FLAGS = """
    trust-remote-code skip-tokenizer-init enable-prompt-embeds enforce-eager
    disable-sliding-window disable-cascade-attn enable-sleep-mode language-model-only
    use-tqdm-on-load guided-decoding-disable-fallback guided-decoding-disable-any-whitespace
    guided-decoding-disable-additional-properties enable-reasoning
    data-parallel-hybrid-lb|-dph data-parallel-external-lb|-dpe
    data-parallel-multi-port-external-lb enable-expert-parallel|-ep enable-dbo
    disable-nccl-for-dp-synchronization enable-eplb eplb-log-balancedness ray-workers-use-nsight
    disable-custom-all-reduce enable-multimodal-encoder-data-parallel worker-use-ray
    engine-use-ray enable-prefix-caching calculate-kv-scales kv-sharing-fast-prefill
    use-v2-block-manager enable-mm-embeds disable-mm-preprocessor-cache interleave-mm-strings
    skip-mm-profiling disable-image-processor enable-lora enable-lora-bias fully-sharded-loras
    enable-prompt-adapter disable-chunked-mm-input disable-hybrid-kv-cache-manager
    async-scheduling multi-step-stream-outputs disable-async-output-proc
    speculative-disable-mqa-scorer disable-logprobs-during-spec-decoding
    disable-log-stats aggregate-engine-logging disable-log-requests enable-log-requests
    enable-log-outputs enable-log-deltas fail-on-environ-validation
    headless grpc disable-uvicorn-access-log allow-credentials enable-ssl-refresh
    enable-request-id-headers disable-fastapi-docs enable-offline-docs
    return-tokens-as-token-ids enable-auto-tool-choice exclude-tools-when-tool-choice-none
    expand-tools-even-if-tool-choice-none trust-request-chat-template
    disable-frontend-multiprocessing enable-prompt-tokens-details enable-per-request-metrics
    enable-server-load-tracking enable-force-include-usage enable-tokenizer-info-endpoint
    cohere-is-reasoning-model log-error-stack tokens-only enable-flash-late-interaction
"""

_JSON_FLAGS = """
    compilation-config|-cc speculative-config|-sc attention-config|-ac kv-transfer-config
    kv-events-config ec-transfer-config hf-overrides override-generation-config
    limit-mm-per-prompt mm-processor-kwargs media-io-kwargs model-loader-extra-config
    rope-scaling pooler-config override-pooler-config additional-config
    structured-outputs-config eplb-config default-chat-template-kwargs override-neuron-config
    tokenizer-pool-extra-config default-mm-loras allowed-origins allowed-methods
    allowed-headers profiler-config
"""

_LIST_FLAGS = """
    served-model-name api-key lora-modules prompt-adapters allowed-media-domains
    cudagraph-capture-sizes cuda-graph-sizes ignore-patterns logits-processors
    collect-detailed-traces long-lora-scaling-factors
"""
# fmt: on

FLAGS: dict[str, FlagSpec] = {
    spec.long: spec
    for spec in (
        _specs(VALUE, _VALUE_FLAGS)
        + _specs(BOOL, _BOOL_FLAGS)
        + _specs(JSON, _JSON_FLAGS)
        + _specs(LIST, _LIST_FLAGS)
        # `--hf-token` takes an optional value; v0.6's `--enable-chunked-prefill` was a
        # StoreBoolean that also accepted `=False`.
        + [FlagSpec("--hf-token", OPTIONAL), FlagSpec("--enable-chunked-prefill", OPTIONAL_BOOL)]
    )
}
ALIASES: dict[str, FlagSpec] = {alias: spec for spec in FLAGS.values() for alias in spec.aliases}
BOOLEAN_KINDS = (BOOL, OPTIONAL_BOOL)


@dataclass(frozen=True)
class FlagMatch:
    spec: FlagSpec
    negated: bool = False  # written as --no-X
    abbreviated: bool = False  # resolved from a unique prefix


def normalise_spelling(option: str) -> str:
    """`--max_model_len` → `--max-model-len`; only the part before the first `.` is rewritten
    (FlexibleArgumentParser keeps dotted sub-keys as written)."""
    head, dot, tail = option.partition(".")
    if head.startswith("--"):
        head = "--" + head[2:].replace("_", "-")
    return head + dot + tail


@lru_cache(maxsize=1)
def _option_strings() -> dict[str, FlagMatch]:
    """Every string argparse would accept exactly: long names, `--no-X` forms, short aliases."""
    table: dict[str, FlagMatch] = {}
    for spec in FLAGS.values():
        table[spec.long] = FlagMatch(spec)
        if spec.kind in BOOLEAN_KINDS:
            table["--no-" + spec.long[2:]] = FlagMatch(spec, negated=True)
    for alias, spec in ALIASES.items():
        table[alias] = FlagMatch(spec)
    return table


def resolve_flag(option: str) -> FlagMatch | list[str] | None:
    """Resolve an option as argparse would: exact, then unique prefix of a long option.

    Returns the match, the list of candidates when the prefix is ambiguous, or None.
    `option` is the name only (no `=value`, no dotted sub-key).
    """
    if not option.startswith("-"):
        return None
    name = normalise_spelling(option)
    table = _option_strings()
    if name in table:
        return table[name]
    if not name.startswith("--") or len(name) < 3:
        return None
    # The long options that start with `name` are one run of the sorted list: found by bisection,
    # not by a pass over every option (a unit of 200,000 unknown flags read each in ~1 ms).
    ordered = _long_options()
    at = bisect.bisect_left(ordered, name)
    candidates = []
    while at < len(ordered) and ordered[at].startswith(name):
        candidates.append(ordered[at])
        at += 1
    if len(candidates) == 1:
        match = table[candidates[0]]
        return FlagMatch(match.spec, match.negated, abbreviated=True)
    return candidates or None


def canonical_flag(name: str) -> str | None:
    """The canonical spelling of an option vLLM knows (`--max_model_len`, `-tp`, `--max-model`
    → `--max-model-len`, `--tensor-parallel-size`, `--max-model-len`); `--no-X` stays negated.
    None for unknown or ambiguous names."""
    base = name.split("=", 1)[0].split(".", 1)[0]
    if not base.startswith("-"):
        base = "--" + base
    if re.fullmatch(r"-O\d+", base):  # -O3: the level is glued to the option
        base = "-O"
    match = resolve_flag(base)
    if not isinstance(match, FlagMatch):
        return None
    return "--no-" + match.spec.long[2:] if match.negated else match.spec.long


@lru_cache(maxsize=1)
def _long_options() -> list[str]:
    return sorted(s for s in _option_strings() if s.startswith("--"))


@lru_cache(maxsize=1)
def _suggestion_pool() -> list[str]:
    return sorted(_option_strings())


@lru_cache(maxsize=4096)
def suggest_flag(name: str) -> str | None:
    """The known option closest to a mistyped one ("did you mean"), or None if nothing is close."""
    base = normalise_spelling(name.split("=", 1)[0].split(".", 1)[0])
    if not base.startswith("-"):
        base = "--" + base
    if not base.startswith("--"):
        base = "-" + base.lstrip("-")
    found = process.extractOne(base, _suggestion_pool(), scorer=fuzz.ratio, score_cutoff=75)
    return found[0] if found else None


# Options many servers share (llama.cpp, TGI, sglang, any web app): naming one says nothing of vLLM.
_SHARED_OPTIONS = frozenset(
    {"--model", "--host", "--port", "--dtype", "--seed", "--api-key", "--help", "--version"}
)
_OPTION_WORD = re.compile(r"""(?<![\w-])["']?(--[a-z][a-z0-9-]*[a-z0-9])""")


def names_vllm_flags(text: str) -> bool:
    """Whether `text` (an argument list as YAML or JSON text) holds an option only vLLM has, spelled
    exactly: an args / command list given without the program or the image (a patch, a fragment)."""
    for match in _OPTION_WORD.finditer(text):
        option = match.group(1)
        found = resolve_flag(option) if option not in _SHARED_OPTIONS else None
        if isinstance(found, FlagMatch) and not found.abbreviated:
            return True
    return False
