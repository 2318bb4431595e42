"""The bundles in samples/ (the README's examples) give the verdict they were written for."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
TriageJson = Callable[..., dict[str, Any]]
RunCli = Callable[..., Result]

# sample → (phase, log file, root line, rule, category, roles declared by bundle.toml)
EXPECTED: dict[str, tuple[str, str, int | None, str | None, str | None, dict[str, str]]] = {
    "kv-cache-too-small": (
        "engine_reserve",
        "vllm.log",
        74,
        "kv.max_seq_len_exceeds_cache",
        "max_seq_len_exceeds_kv_cache",
        {"vllm.log": "vllm_log", "command.sh": "launch_command", "nvidia-smi-host.txt": "nvidia_smi"},
    ),
    "driver-too-old-cu130": (
        "cuda_init",
        "docker-logs-t.txt",
        8,
        "cuda.driver_too_old",
        "driver_too_old",
        {
            "docker-logs-t.txt": "vllm_log",
            "nvidia-smi-host.txt": "nvidia_smi",
            "compose.yaml": "launch_command",
        },
    ),
    "request-illegal-access": (
        "request",
        "vllm.log",
        61,
        "cuda.illegal_memory_access",
        "illegal_memory_access",
        {"vllm.log": "vllm_log", "request.json": "request", "command.sh": "launch_command"},
    ),
    "healthy-v0": (
        "none",
        "server.log",
        None,
        None,
        None,
        {"server.log": "vllm_log", "launch.sh": "launch_command", "collect_env.txt": "collect_env"},
    ),
}


def test_every_sample_is_covered() -> None:
    assert sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()) == sorted(EXPECTED)
    for name in EXPECTED:
        assert (SAMPLES / name / "bundle.toml").is_file(), name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_verdict(name: str, triage_json: TriageJson) -> None:
    phase, log, line, rule, category, roles = EXPECTED[name]
    result = triage_json(SAMPLES / name)
    assert result["phase"] == phase
    fe = result["first_error"]
    if line is None:
        assert fe is None
    else:
        assert Path(fe["file"]).name == log
        assert (fe["line"], fe["rule"], fe["category"], fe["kind"]) == (line, rule, category, "root")
        assert fe["text"] == (SAMPLES / name / log).read_text(encoding="utf-8").splitlines()[line - 1]
    found = {Path(i["path"]).name: i["role"] for i in result["inputs"]}
    for file, role in roles.items():
        assert found[file] == role, file


def test_driver_sample_keeps_the_docker_timestamp(triage_json: TriageJson) -> None:
    fe = triage_json(SAMPLES / "driver-too-old-cu130")["first_error"]
    assert fe["timestamp"].startswith("2026-05-12T08:1")
    assert "found version 12090" in fe["message"]


def test_request_sample_lists_the_cascade(triage_json: TriageJson) -> None:
    result = triage_json(SAMPLES / "request-illegal-access")
    rules = {c["rule"] for c in result["consequences"]}
    assert {"engine.worker_died", "engine.executor_failed", "engine.dead", "engine.http_500"} <= rules
    assert result["first_error"]["process"] == "Worker_TP1"


def test_readme_example_reads_in_ten_seconds(run_cli: RunCli) -> None:
    """`vllm-triage triage samples/kv-cache-too-small`: the phase, where, what, and what next."""
    result = run_cli("triage", str(SAMPLES / "kv-cache-too-small"))
    assert result.exit_code == 0
    out = result.stdout
    assert out.startswith("failed in engine_reserve: the KV cache that fits in memory cannot hold")
    assert "vllm.log:74" in out
    assert "To serve at least one request with the models's max seq len" in out
    assert "Engine core initialization failed" in out  # listed as a consequence
    assert "\x1b[" not in out  # no colour when not a TTY
    assert "Traceback" in out  # the block is shown
    assert len(out.splitlines()) < 80
