"""The bundles in samples/ (the README's examples) give the verdict they were written for."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import tomllib
from click.testing import Result

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
TriageJson = Callable[..., dict[str, Any]]
RunCli = Callable[..., Result]


def _manifests() -> dict[str, dict[str, Any]]:
    return {
        folder.name: tomllib.loads((folder / "bundle.toml").read_text(encoding="utf-8"))
        for folder in sorted(p for p in SAMPLES.iterdir() if p.is_dir())
    }


def test_every_sample_says_what_it_must_give() -> None:
    manifests = _manifests()
    assert manifests, "no samples found"
    for name, manifest in manifests.items():
        assert "expect" in manifest, f"{name}/bundle.toml has no [expect] table"
        assert manifest["expect"]["phase"], name


@pytest.mark.parametrize("name", sorted(_manifests()))
def test_sample_verdict(name: str, triage_json: TriageJson) -> None:
    """Each sample's bundle.toml [expect] table: the phase, and the root error (file, line, rule,
    category, kind) or none; and every declared [[file]] read in its role."""
    manifest = _manifests()[name]
    expect = manifest["expect"]
    result = triage_json(SAMPLES / name)
    assert result["phase"] == expect["phase"]
    fe, want = result["first_error"], expect.get("first_error")
    if want is None:
        assert fe is None
    else:
        assert Path(fe["file"]).name == want["file"]
        got = {key: fe[key] for key in ("line", "rule", "category", "kind")}
        assert got == {key: want[key] for key in ("line", "rule", "category", "kind")}
        log = (SAMPLES / name / want["file"]).read_text(encoding="utf-8")
        assert fe["text"] == log.splitlines()[want["line"] - 1]
    found = {Path(i["path"]).name: i["role"] for i in result["inputs"]}
    for entry in manifest["file"]:
        assert found[entry["path"]] == entry["role"].partition(".")[0], entry["path"]


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
