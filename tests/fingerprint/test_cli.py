"""`vllm-triage fingerprint` as a person runs it, and the environment findings `triage` adds."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fingerprint_helpers import BUNDLES

from vllm_triage import pipeline
from vllm_triage.cli import cli


def invoke(*args: str, input: bytes | str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


def test_lone_nvidia_smi_file_as_json() -> None:
    result = invoke(
        "fingerprint", str(BUNDLES / "shared-gpu-node" / "nvidia-smi-host.txt"), "--format", "json"
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["schema"] == "vllm-triage.fingerprint/1"
    used = data["facts"]["host.gpu_memory_used_mib"]
    assert used["value"] == [4, 61234]
    assert used["source"] == {"file": str(BUNDLES / "shared-gpu-node" / "nvidia-smi-host.txt"), "line": 11}
    assert [f["id"] for f in data["findings"]] == ["gpu-occupied"]
    assert set(data["findings"][0]) == {"id", "severity", "message", "evidence", "advice"}


def test_text_findings_first_then_grouped_by_layer() -> None:
    """What to act on comes first (most severe first), then the values layer by layer."""
    result = invoke("fingerprint", str(BUNDLES / "cu130-image-r575-node"), "--width", "160")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("findings (1 error")
    assert lines[1].startswith("  ERROR   driver-too-old-for-cuda")
    order = [lines.index(title) for title in ("host", "image", "launch")]
    assert order == sorted(order)
    assert any("host.driver_version" in line and "nvidia-smi-host.txt:4" in line for line in lines)
    assert "\x1b[" not in result.stdout  # no colour when piped


def test_stdin() -> None:
    text = (BUNDLES / "debug-left-on" / "launch.sh").read_text()
    result = invoke("fingerprint", "-", "--format", "json", input=text)
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["knobs"]["arg.model"]["source"] == {"file": "<stdin>", "line": 5}


@pytest.mark.parametrize(
    ("files", "target", "problem"),
    [
        ({}, "missing.txt", "missing-path"),
        ({"empty.txt": ""}, "empty.txt", "empty-input"),
        ({"notes.txt": "remember to rotate the keys\n"}, "notes.txt", "not-an-artefact"),
        ({"a.txt": "hello\n", "b.txt": "world\n"}, ".", "no-artefact"),
    ],
)
def test_bad_input_is_one_line_and_exit_4(
    scratch: Callable[..., Path], files: dict[str, str], target: str, problem: str
) -> None:
    folder = scratch(files=files)
    result = invoke("fingerprint", str(folder / target), "--format", "json")
    assert result.exit_code == 4
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert problem in result.stderr and "Traceback" not in result.stderr


def test_binary_input(scratch: Callable[..., Path]) -> None:
    blob = scratch() / "core.bin"
    blob.write_bytes(bytes(range(256)) * 64)
    result = invoke("fingerprint", str(blob))
    assert result.exit_code == 4 and "binary-input" in result.stderr


def test_bad_rules_dir_exit_4(scratch: Callable[..., Path]) -> None:
    rules = scratch()
    (rules / "recipes").mkdir()
    (rules / "recipes" / "bad.toml").write_text("[[recipe]]\nid = 'x'\n")
    result = invoke("fingerprint", str(BUNDLES / "pinned-baseline"), "--rules", str(rules))
    assert result.exit_code == 4 and len(result.stderr.strip().splitlines()) == 1


def _triage_bundle(scratch: Callable[..., Path]) -> Path:
    log = (BUNDLES / "log-vs-command" / "server.log").read_text() + (
        "(EngineCore_DP0 pid=310) ERROR 11-30 09:20:40 [core.py:700] RuntimeError: CUDA error: "
        "CUDA driver version is insufficient for CUDA runtime version\n"
    )
    return scratch("cu130-image-r575-node", {"server.log": log})


def test_triage_includes_compatibility_findings(scratch: Callable[..., Path]) -> None:
    result = invoke("triage", str(_triage_bundle(scratch)), "--format", "json")
    assert result.exit_code == 0, result.stderr
    found = {f["id"]: f for f in json.loads(result.stdout)["findings"]}
    assert "driver-too-old-for-cuda" in found
    assert found["driver-too-old-for-cuda"]["evidence"][0]["line"] == 4


def test_triage_survives_a_failing_fingerprint(
    scratch: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(pipeline, "fingerprint_sources", broken)
    result = invoke("triage", str(_triage_bundle(scratch)), "--format", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["first_error"] is not None
    assert "fingerprint-failed" in [f["id"] for f in data["findings"]]
