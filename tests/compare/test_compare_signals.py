"""Runtime signals read for a series (stats lines, requests, /metrics), and runs read from single
logs and archives rather than bundle folders."""

from __future__ import annotations

import tarfile
from pathlib import Path

from compare_builders import Trial, vllm_log, write_bundle

from vllm_triage.compare.diff import diff_paths
from vllm_triage.compare.load import load_run
from vllm_triage.compare.signals import read_signals
from vllm_triage.pipeline import gather

V0_STATS = """\
INFO 11-02 10:00:05 metrics.py:351] Avg prompt throughput: 812.4 tokens/s, Avg generation throughput: 40.1 tokens/s, Running: 3 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 2.1%, CPU KV cache usage: 0.0%.
INFO 11-02 10:00:05 metrics.py:367] Prefix cache hit rate: GPU: 0.00%, CPU: 0.00%
INFO 11-02 10:00:10 metrics.py:351] Avg prompt throughput: 402.0 tokens/s, Avg generation throughput: 61.3 tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 2.4%, CPU KV cache usage: 0.0%.
INFO 11-02 10:00:10 metrics.py:367] Prefix cache hit rate: GPU: 37.50%, CPU: 0.00%
INFO 11-02 10:00:12 logger.py:37] Received request chatcmpl-4b0e2c1f9a: prompt: 'hi', params: SamplingParams(n=1), lora_request: None.
"""

METRICS = """\
# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="Qwen/Qwen3-8B"} 4096.0
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="Qwen/Qwen3-8B"} 1536.0
"""


def test_v0_stats_lines(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(V0_STATS)
    signals = read_signals(gather([str(log)]))
    assert signals.stats_lines == 2
    assert signals.hit_rate_lines == 2
    assert signals.hit_rate_max == 37.5
    assert signals.first_hit == {"file": str(log), "line": 4, "value": 37.5}
    assert signals.max_running == 3
    assert signals.requests_received == 1
    assert signals.cache_hits is True


def test_v1_stats_lines_and_access_log(tmp_path: Path) -> None:
    trial = Trial(requests=3, running=(1, 2), hit_rates=(0.0, 0.0), prefix_caching=True)
    log = tmp_path / "vllm.log"
    log.write_text(vllm_log(trial))
    signals = read_signals(gather([str(log)]))
    assert (signals.requests_ok, signals.requests_failed) == (3, 0)
    assert signals.max_running == 2
    assert signals.cache_hits is False  # the signal is there, and it says no hit
    assert signals.last_hit_rate is not None and signals.last_hit_rate["value"] == 0.0


def test_no_stats_lines_means_unknown(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(vllm_log(Trial(prefix_caching=True)))
    assert read_signals(gather([str(log)])).cache_hits is None


def test_metrics_dump_in_a_bundle_shows_hits(tmp_path: Path) -> None:
    folder = write_bundle(tmp_path, Trial(label="with-metrics", prefix_caching=True, requests=2))
    (folder / "metrics.txt").write_text(METRICS)
    run = load_run(str(folder))
    assert run.signals.metrics is not None
    assert (run.signals.metrics["hits"], run.signals.metrics["queries"]) == (1536.0, 4096.0)
    assert run.signals.cache_hits is True


def test_manifest_metadata_reaches_the_run(tmp_path: Path) -> None:
    run = load_run(
        str(write_bundle(tmp_path, Trial(label="t7", node="rental-01", started="2026-03-01T10:00:00Z")))
    )
    assert run.label == "t7"
    assert run.node is not None and run.node.value == "rental-01"
    assert run.node.source["file"].endswith("bundle.toml")
    assert run.started is not None and run.started.value == "2026-03-01T10:00:00Z"


def test_diff_of_two_single_logs(tmp_path: Path) -> None:
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text(vllm_log(Trial(failure="oom")))
    b.write_text(vllm_log(Trial(failure="oom", args={"max_model_len": 4096, "port": 8000})))
    result = diff_paths(str(a), str(b)).to_json()
    assert [c["id"] for c in result["changes"]] == ["arg.max_model_len"]
    assert result["failure"]["conclusion"] == "same-failure"
    assert (result["a"]["label"], result["b"]["label"]) == ("a.log", "b.log")


def test_diff_of_archived_bundles(tmp_path: Path) -> None:
    archives = []
    for trial in (Trial(label="x", failure="oom"), Trial(label="y", failure="driver")):
        folder = write_bundle(tmp_path / "src", trial)
        archive = tmp_path / f"{trial.label}.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(folder, arcname=trial.label)
        archives.append(str(archive))
    result = diff_paths(*archives).to_json()
    assert result["verdict"] == "identical"
    assert result["failure"]["conclusion"] == "moved-phase"
