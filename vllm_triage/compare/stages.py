"""Where a trial stands in the reintroduction order (rules/compare/method.toml `[[stage]]`): start
without prefix caching with one request, then `--enable-prefix-caching` alone, two requests
sharing a prefix, cache hits seen, long context, concurrency, multi-node.

Each stage is detected from the fingerprint (the arguments, the engine banner, the request) and
the runtime signals of the log; every detection carries its evidence so a reader can check it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vllm_triage.compare.data import CompareData
from vllm_triage.compare.defaults import default_for
from vllm_triage.compare.run import Run
from vllm_triage.fingerprint.values import as_bool, as_int


@dataclass(frozen=True)
class Seen:
    """A stage is active in a trial, and why we think so."""

    how: str
    source: dict[str, Any] | None = None
    by_default: bool = False  # on although nobody asked: vLLM's default, not a person's choice

    def to_json(self) -> dict[str, Any]:
        return {"how": self.how, "source": self.source, "by_default": self.by_default}


def _item(run: Run, name: str) -> dict[str, Any] | None:
    for kind in ("knobs", "facts"):
        item = (run.fingerprint.get(kind) or {}).get(name)
        if isinstance(item, dict) and "value" in item:
            return item
    return None


def prefix_caching(run: Run, data: CompareData) -> tuple[bool | None, Seen | None]:
    """(on?, evidence). The engine banner says what ran; an argument what was asked; otherwise the
    default of the vLLM release (on in V1). None when nothing tells."""
    for name, how in (
        ("engine.enable_prefix_caching", "engine banner"),
        ("arg.enable_prefix_caching", "argument"),
    ):
        item = _item(run, name)
        if item is not None and as_bool(item["value"]) is not None:
            on = bool(as_bool(item["value"]))
            asked = _item(run, "arg.enable_prefix_caching")
            if on and name.startswith("engine.") and asked is None:
                how = f"{how}: enable_prefix_caching=True with no argument asking for it"
                return on, Seen(how, item.get("source"), by_default=True)
            return on, Seen(f"{how}: enable_prefix_caching={on}", item.get("source"))
    version = run.vllm_version()
    known, default = default_for("arg.enable_prefix_caching", version, data)
    if known and version:
        on = bool(as_bool(default))
        return on, Seen(f"default of vLLM {version}: {'on' if on else 'off'}", by_default=on)
    return None, None


def requests_sent(run: Run) -> tuple[int, Seen | None]:
    """How many requests the trial made: the server's access log, else the request artefact."""
    signals = run.signals
    if signals.requests:
        return signals.requests, Seen(f"{signals.requests} request(s) in the server log")
    prompts = _item(run, "request.prompts_count")
    if prompts is not None and as_int(prompts["value"]):
        return as_int(prompts["value"]) or 1, Seen("prompts in the request", prompts.get("source"))
    for name in ("request.endpoint", "request.url", "request.messages_count", "request.prompt_chars"):
        item = _item(run, name)
        if item is not None:
            return 1, Seen("one request in the bundle", item.get("source"))
    return 0, None


def concurrency(run: Run) -> tuple[int, Seen | None]:
    item = _item(run, "request.concurrency")
    if item is not None and (as_int(item["value"]) or 0) > 1:
        return as_int(item["value"]) or 2, Seen(
            f"concurrency {item['value']} in the request", item.get("source")
        )
    running = run.signals.max_running or 0
    if running > 1:
        return running, Seen(f"{running} requests running at once in the stats lines")
    return 1, None


def long_context(run: Run, data: CompareData) -> Seen | None:
    item = _item(run, "arg.max_model_len")
    if item is not None and (as_int(item["value"]) or 0) >= data.settings.long_context_tokens:
        return Seen(f"--max-model-len {item['value']}", item.get("source"))
    prompt = _item(run, "request.prompt_chars")
    if prompt is not None and (as_int(prompt["value"]) or 0) >= data.settings.long_prompt_chars:
        return Seen(f"a prompt of {prompt['value']} characters", prompt.get("source"))
    return None


def multi_node(run: Run) -> Seen | None:
    backend = _item(run, "arg.distributed_executor_backend")
    if backend is not None and str(backend["value"]).lower() == "ray":
        return Seen("--distributed-executor-backend ray", backend.get("source"))
    nodes = _item(run, "arg.nnodes")
    if nodes is not None and (as_int(nodes["value"]) or 1) > 1:
        return Seen(f"--nnodes {nodes['value']}", nodes.get("source"))
    headless = _item(run, "arg.headless")
    if headless is not None and as_bool(headless["value"]):
        return Seen("--headless", headless.get("source"))
    return None


def active_stages(run: Run, data: CompareData) -> dict[str, Seen]:
    """The stages a trial exercises (base always)."""
    out: dict[str, Seen] = {"base": Seen("every trial starts the server")}
    caching, caching_seen = prefix_caching(run, data)
    if caching and caching_seen is not None:
        out["prefix_caching"] = caching_seen
    count, count_seen = requests_sent(run)
    if caching and count >= 2 and count_seen is not None:
        out["shared_prefix"] = Seen(f"{count_seen.how} with prefix caching on", count_seen.source)
    if caching and run.signals.cache_hits:
        hit = run.signals.first_hit
        out["cache_hits"] = Seen(
            f"prefix cache hit rate {hit['value']}%" if hit else "prefix cache hits in the metrics",
            {"file": hit["file"], "line": hit["line"]} if hit else (run.signals.metrics or {}).get("source"),
        )
    seen = long_context(run, data)
    if seen is not None:
        out["long_context"] = seen
    level, level_seen = concurrency(run)
    if level > 1 and level_seen is not None:
        out["concurrency"] = level_seen
    seen = multi_node(run)
    if seen is not None:
        out["multi_node"] = seen
    return {stage.id: out[stage.id] for stage in data.stages if stage.id in out}
