"""A folder of bundles, or several runs, is triaged one run at a time, never merged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner, Result

from vllm_triage.cli import cli

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_a_folder_of_bundles_is_triaged_run_by_run() -> None:
    result = invoke("triage", str(SAMPLES))
    assert result.exit_code == 0
    out = result.stdout
    headings = [line for line in out.splitlines() if line.startswith("══ run ")]
    assert headings == [
        f"══ run {n}/4: {SAMPLES / name}"
        for n, name in enumerate(
            ["driver-too-old-cu130", "healthy-v0", "kv-cache-too-small", "request-illegal-access"], 1
        )
    ]
    # Merged, the four runs' knobs contradicted each other and one run's GPUs met another's launch.
    assert "value-conflict" not in out
    assert "fewer-gpus-than-parallel" not in out
    assert "each analysed alone" in result.stderr and "series" in result.stderr


def test_each_run_gives_its_own_verdict() -> None:
    data = json.loads(invoke("triage", str(SAMPLES), "--format", "json").stdout)
    assert [d["phase"] for d in data] == ["cuda_init", "none", "engine_reserve", "request"]
    assert all(d["schema"] == "vllm-triage.triage/1" for d in data)


def test_two_run_folders_are_not_merged() -> None:
    """`triage t1 t2`: a failing and a passing run stay two answers."""
    out = invoke("triage", str(SAMPLES / "kv-cache-too-small"), str(SAMPLES / "healthy-v0")).stdout
    assert "══ run 1/2" in out and "══ run 2/2" in out
    first, second = out.split("══ run 2/2")
    assert "failed in engine_reserve" in first and "no failure" not in first
    assert "no failure: ready" in second and "failed in" not in second


def test_files_of_one_run_are_still_one_run(tmp_path: Path) -> None:
    """Loose files given by name are the artefacts of one run, as before."""
    bundle = SAMPLES / "kv-cache-too-small"
    out = invoke("triage", str(bundle / "vllm.log"), str(bundle / "command.sh")).stdout
    assert "══ run" not in out
    assert out.startswith("failed in engine_reserve")


def test_one_bad_run_does_not_hide_the_others(tmp_path: Path) -> None:
    shutil.copytree(SAMPLES / "kv-cache-too-small", tmp_path / "good")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "bundle.toml").write_text('[run]\nlabel = "nothing collected"\n')
    result = invoke("triage", str(tmp_path))
    assert result.exit_code == 4
    assert "failed in engine_reserve" in result.stdout
    assert "[run 1/2:" in result.stderr and "Traceback" not in result.stderr


def test_fingerprint_of_a_folder_of_bundles_is_run_by_run() -> None:
    result = invoke("fingerprint", str(SAMPLES), "--format", "json")
    data = json.loads(result.stdout)
    assert len(data) == 4
    assert all("value-conflict" not in {f["id"] for f in d["findings"]} for d in data)
    text = invoke("fingerprint", str(SAMPLES)).stdout
    assert text.count("══ run ") == 4


def test_sample_lists_and_uses_the_bundled_samples() -> None:
    listed = invoke("triage", "--sample")
    assert listed.exit_code == 0
    names = [line.split()[0] for line in listed.stdout.splitlines()]
    assert names == sorted(p.name for p in SAMPLES.iterdir() if p.is_dir())
    used = invoke("triage", "--sample", "kv-cache-too-small")
    assert used.exit_code == 0 and used.stdout.startswith("failed in engine_reserve")
    unknown = invoke("triage", "--sample", "no-such-sample")
    assert unknown.exit_code == 2 and "kv-cache-too-small" in unknown.stderr


def test_no_path_and_no_sample_is_a_usage_error() -> None:
    result = invoke("triage")
    assert result.exit_code == 2
