"""The triage JSON contract (DESIGN §4): schema vllm-triage.triage/1, `first_error.text` is the
input line verbatim, `line` is 1-based in `file`, `first_error` is null when there is no failure."""

from __future__ import annotations

import json
import re
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from vllm_triage.core.phases import PHASES

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
SAMPLES = Path(__file__).resolve().parents[2] / "samples"
TriageJson = Callable[..., dict[str, Any]]

SEVERITIES = {"error", "warning", "info"}
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _file_lines(path: Path) -> list[str]:
    return [line.rstrip("\r") for line in path.read_bytes().decode("utf-8", errors="replace").split("\n")]


def _check_contract(data: dict[str, Any], resolve: Callable[[str], list[str]]) -> None:
    """Everything DESIGN §4 promises, for any triage result. `resolve(file)` gives that file's lines."""
    assert data["schema"] == "vllm-triage.triage/1"
    assert data["phase"] in (*PHASES, "none")
    for entry in data["inputs"]:
        assert set(entry) >= {"path", "role", "lines"}
    for milestone in data["milestones"]:
        assert set(milestone) >= {"phase", "marker", "file", "line"}
        assert milestone["line"] >= 1
        assert resolve(milestone["file"])[milestone["line"] - 1].strip()
    lines_in_order = [m["line"] for m in data["milestones"]]
    assert lines_in_order == sorted(lines_in_order)

    fe = data["first_error"]
    if data["phase"] == "none":
        assert fe is None
    else:
        assert fe is not None
        assert set(fe) >= {
            "file",
            "line",
            "text",
            "message",
            "block",
            "rule",
            "category",
            "process",
            "timestamp",
        }
        lines = resolve(fe["file"])
        assert 1 <= fe["line"] <= len(lines)
        assert fe["text"] == lines[fe["line"] - 1]  # verbatim, terminator removed
        assert fe["block"]["start"] <= fe["line"] <= fe["block"]["end"]
        # The message is what is left of the line once every prefix is stripped.
        assert fe["message"].strip()
        assert fe["message"].strip() in _ANSI.sub("", fe["text"])
    for consequence in data["consequences"]:
        assert set(consequence) >= {"file", "line", "text", "rule"}
        assert consequence["text"] == resolve(consequence["file"])[consequence["line"] - 1]
    for finding in data["findings"]:
        assert set(finding) >= {"id", "severity", "message", "evidence", "advice"}
        assert finding["severity"] in SEVERITIES
        assert finding["id"] == finding["id"].lower() and " " not in finding["id"]
        for evidence in finding["evidence"]:
            assert set(evidence) >= {"file", "line"}
    json.dumps(data)  # plain JSON all the way down


LOG_FILES = sorted(p.name for p in LOGS.iterdir())


@pytest.mark.parametrize("name", LOG_FILES)
def test_contract_on_every_fixture_log(name: str, triage_json: TriageJson) -> None:
    data = triage_json(LOGS / name)
    _check_contract(data, lambda file: _file_lines(Path(file)))


@pytest.mark.parametrize(
    "name", ["kv-cache-too-small", "request-illegal-access", "healthy-v0", "driver-too-old-cu130"]
)
def test_contract_on_every_sample_bundle(name: str, triage_json: TriageJson) -> None:
    data = triage_json(SAMPLES / name)
    _check_contract(data, lambda file: _file_lines(Path(file)))
    roles = {Path(i["path"]).name: i["role"] for i in data["inputs"]}
    assert "manifest" in roles.values()


def test_first_error_is_null_for_a_healthy_log(triage_json: TriageJson) -> None:
    data = triage_json(LOGS / "v1-0.11.0-healthy-then-shutdown.log")
    assert data["phase"] == "none"
    assert data["first_error"] is None
    assert data["ready"] is True
    assert "first_error" in data  # present, and null — not missing


def test_text_is_verbatim_with_colour_and_docker_timestamps(tmp_path: Path, triage_json: TriageJson) -> None:
    lines = (LOGS / "v1-0.10.2-tp1-profile-oom.log").read_text().splitlines()
    given_lines = [
        f"2025-09-21T11:05:{i % 60:02d}.{i:09d}Z \x1b[0;36m{line}\x1b[0m"
        if line.startswith("(")
        else f"2025-09-21T11:05:{i % 60:02d}.{i:09d}Z {line}"
        for i, line in enumerate(lines)
    ]
    given = tmp_path / "docker.log"
    given.write_text("\r\n".join(given_lines) + "\r\n")
    fe = triage_json(given)["first_error"]
    assert fe["text"] == given_lines[71]
    assert fe["text"].startswith("2025-09-21T11:05:11.000000071Z \x1b[0;36m(EngineCore_DP0 pid=157)")
    assert fe["message"].startswith("torch.OutOfMemoryError: CUDA out of memory.")
    assert fe["timestamp"] == "2025-09-21T11:05:11.000000071Z"
    assert fe["process"] == "EngineCore_DP0"


def test_line_is_in_the_member_of_an_archive(tmp_path: Path, triage_json: TriageJson) -> None:
    archive = tmp_path / "bundle.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(SAMPLES / "request-illegal-access", arcname="node-b07")
    data = triage_json(archive)
    member = "node-b07/vllm.log"
    assert data["first_error"]["file"] == f"{archive}!{member}"
    originals = {
        f"{archive}!node-b07/{p.name}": _file_lines(p) for p in (SAMPLES / "request-illegal-access").iterdir()
    }
    _check_contract(data, lambda file: originals[file])


def test_file_names_the_log_among_several_files(triage_json: TriageJson) -> None:
    data = triage_json(SAMPLES / "driver-too-old-cu130")
    assert Path(data["first_error"]["file"]).name == "docker-logs-t.txt"
    assert {e["file"] for f in data["findings"] for e in f["evidence"] if "docker-logs" in e["file"]}


def test_output_is_deterministic(triage_json: TriageJson) -> None:
    first = triage_json(SAMPLES / "request-illegal-access")
    second = triage_json(SAMPLES / "request-illegal-access")
    assert first == second
