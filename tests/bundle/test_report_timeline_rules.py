"""The HTML timeline is drawn from the rules the command loaded: a site's marker given with
`--rules` gets its own slot in its phase's band and a reached dot, like a built-in milestone (the
renderer reads no rule file of its own)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from vllm_triage.cli import cli
from vllm_triage.engine.rules import load
from vllm_triage.render.timeline import timeline

# A healthy V1 server that loads a LoRA adapter after the engine is up: vLLM logs the adapter from
# serving_models.py, a line no built-in marker reads.
LOG = """\
INFO 11-04 15:23:20 [__init__.py:216] Automatically detected platform cuda.
(APIServer pid=1) INFO 11-04 15:23:21 [api_server.py:1896] vLLM API server version 0.10.2
(APIServer pid=1) INFO 11-04 15:23:21 [utils.py:328] non-default args: {'model': 'Qwen/Qwen2.5-7B-Instruct', \
'enable_lora': True, 'lora_modules': [LoRAModulePath(name='sql-lora', path='/adapters/sql-lora')]}
(EngineCore_DP0 pid=120) INFO 11-04 15:23:24 [core.py:74] Initializing a V1 LLM engine (v0.10.2) with config: \
model='Qwen/Qwen2.5-7B-Instruct', tokenizer='Qwen/Qwen2.5-7B-Instruct', dtype=torch.bfloat16, max_seq_len=8192, \
tensor_parallel_size=1
(EngineCore_DP0 pid=120) INFO 11-04 15:23:26 [gpu_model_runner.py:2338] Starting to load model \
Qwen/Qwen2.5-7B-Instruct...
(EngineCore_DP0 pid=120) INFO 11-04 15:23:31 [default_loader.py:268] Loading weights took 4.51 seconds
(EngineCore_DP0 pid=120) INFO 11-04 15:23:32 [gpu_model_runner.py:2392] Model loading took 14.2487 GiB and \
5.346811 seconds
(EngineCore_DP0 pid=120) INFO 11-04 15:23:40 [gpu_worker.py:298] Available KV cache memory: 52.31 GiB
(EngineCore_DP0 pid=120) INFO 11-04 15:23:40 [kv_cache_utils.py:1028] GPU KV cache size: 979,504 tokens
(EngineCore_DP0 pid=120) INFO 11-04 15:23:52 [gpu_model_runner.py:3118] Graph capturing finished in 11 secs, \
took 0.52 GiB
(EngineCore_DP0 pid=120) INFO 11-04 15:23:52 [core.py:218] init engine (profile, create kv cache, warmup model) \
took 20.12 seconds
(APIServer pid=1) INFO 11-04 15:23:54 [serving_models.py:174] Loaded new LoRA adapter: name 'sql-lora', \
path '/adapters/sql-lora'
(APIServer pid=1) INFO 11-04 15:23:54 [api_server.py:1971] Starting vLLM API server 0 on http://0.0.0.0:8000
(APIServer pid=1) INFO:     Started server process [1]
(APIServer pid=1) INFO:     Waiting for application startup.
(APIServer pid=1) INFO:     Application startup complete.
(APIServer pid=1) INFO:     10.0.0.5:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK
"""

# The site's rule: one marker, and the startup order with its milestone between the engine's end
# and the API server (a user's `milestone_order` replaces the built-in one).
SITE_RULES = """\
milestone_order = [
  "platform", "version", "args", "engine_banner", "distributed_init", "model_load_start",
  "weights_loaded", "profiling", "kv_cache", "cuda_graphs", "engine_init_done", "lora_adapters",
  "api_server", "ready",
]

[[rule]]
id = "site.marker.lora_adapters"
kind = "marker"
milestone = "lora_adapters"
phase = "engine_reserve"
category = "milestone"
pattern = '''^Loaded new LoRA adapter: name '''
must_match = ["Loaded new LoRA adapter: name 'sql-lora', path '/adapters/sql-lora'"]
must_not_match = ["Removed LoRA adapter: name 'sql-lora'"]
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("timeline-rules")
    bundle = root / "lora-run"
    bundle.mkdir()
    (bundle / "vllm.log").write_text(LOG, encoding="utf-8")
    rules = root / "site-rules"
    rules.mkdir()
    (rules / "lora.toml").write_text(SITE_RULES, encoding="utf-8")
    return bundle, rules


def _report(bundle: Path, fmt: str, *rules: Path) -> str:
    args = ["report", str(bundle), "--format", fmt]
    for directory in rules:
        args += ["--rules", str(directory)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return result.stdout


def _band_x(html: str, phase: str) -> tuple[float, float]:
    found = re.search(
        rf'class="phase-band" data-phase="{phase}" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', html
    )
    assert found, phase
    return float(found.group(1)), float(found.group(1)) + float(found.group(2))


def _dot(html: str, marker: str) -> re.Match[str] | None:
    return re.search(
        rf'<circle class="milestone (reached|missed)" data-marker="{marker}" cx="([\d.]+)"', html
    )


def test_a_rules_marker_gets_its_slot_and_dot_in_the_html_timeline(site: tuple[Path, Path]) -> None:
    bundle, rules = site
    plain = _report(bundle, "html")
    assert _dot(plain, "lora_adapters") is None  # no built-in rule knows the milestone

    html = _report(bundle, "html", rules)
    dot = _dot(html, "lora_adapters")
    assert dot is not None and dot.group(1) == "reached"
    left, right = _band_x(html, "engine_reserve")
    assert left < float(dot.group(2)) < right
    # In the site's order: after the engine's last step, before the API server.
    done, api = _dot(html, "engine_init_done"), _dot(html, "api_server")
    assert done is not None and api is not None
    assert float(done.group(2)) < float(dot.group(2)) < float(api.group(2))


def test_the_report_data_carries_the_milestone_order_of_the_loaded_rules(site: tuple[Path, Path]) -> None:
    bundle, rules = site
    built_in = json.loads(_report(bundle, "json"))["milestone_order"]
    assert built_in == [{"marker": m, "phase": p} for m, p in load().milestone_phases()]
    with_site = json.loads(_report(bundle, "json", rules))["milestone_order"]
    markers = [m["marker"] for m in with_site]
    assert markers.index("engine_init_done") + 1 == markers.index("lora_adapters")
    assert {"marker": "lora_adapters", "phase": "engine_reserve"} in with_site


def test_the_timeline_lays_out_only_what_it_is_given() -> None:
    """A pure function of its arguments: the milestones it is handed are its slots, whatever
    rule files exist on disk."""
    run = {
        "label": "t1",
        "number": 1,
        "phase": "none",
        "ready": True,
        "requests": 1,
        "milestones": [{"marker": "warmed_up", "where": "vllm.log:3"}],
        "first_error": None,
    }
    order = [{"marker": "warmed_up", "phase": "engine_reserve"}, {"marker": "served", "phase": "request"}]
    geometry = timeline([run], order)
    assert [s["marker"] for s in geometry["slots"]] == ["warmed_up", "served"]
    assert [(d["marker"], d["reached"]) for d in geometry["lanes"][0]["dots"]] == [
        ("warmed_up", True),
        ("served", False),
    ]
