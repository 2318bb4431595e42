"""The published JSON Schemas: valid themselves, printed by `vllm-triage schema NAME`, met by every
command's JSON over every bundled sample, and strict enough to refuse a payload that breaks them."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner, Result
from schema_check import CHECKED, validate_payload

from vllm_triage import __version__, schemas
from vllm_triage.cli import cli

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
NAMES = sorted(p.name for p in SAMPLES.iterdir() if p.is_dir())
CONTRACTS = ["check", "diff", "fingerprint", "fleet", "report", "series", "triage"]


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_one_schema_per_contract_each_a_valid_schema() -> None:
    assert schemas.names() == CONTRACTS
    for name in CONTRACTS:
        jsonschema.Draft202012Validator.check_schema(schemas.load(name))


@pytest.mark.parametrize("name", CONTRACTS)
def test_schema_command_prints_it(name: str) -> None:
    result = invoke("schema", name)
    assert result.exit_code == 0
    assert json.loads(result.stdout) == schemas.load(name)


def test_schema_alone_lists_them_and_an_unknown_name_is_a_usage_error() -> None:
    listed = invoke("schema").stdout.split()
    assert "vllm-triage.triage/1" in listed and "fleet" in listed
    assert invoke("schema", "nope").exit_code == 2


@pytest.mark.parametrize("sample", NAMES)
def test_triage_and_fingerprint_of_every_sample_meet_their_schema(sample: str) -> None:
    for command, name in (("triage", "triage"), ("fingerprint", "fingerprint"), ("check", "check")):
        result = invoke(command, str(SAMPLES / sample), "--format", "json")
        assert result.exit_code in (0, 1), result.stderr
        payload = json.loads(result.stdout)
        assert validate_payload(payload, f"{command} {sample}") == name
        assert payload["tool_version"] == __version__


def test_diff_series_report_and_fleet_meet_their_schema(tmp_path: Path) -> None:
    runs = [str(SAMPLES / n) for n in ("kv-cache-too-small", "request-illegal-access", "healthy-v0")]
    diff = invoke("diff", runs[0], runs[1], "--format", "json")
    assert validate_payload(json.loads(diff.stdout), "diff") == "diff"
    series = invoke("series", *runs, "--format", "json")
    assert validate_payload(json.loads(series.stdout), "series") == "series"
    report = tmp_path / "report.json"
    assert invoke("report", "--format", "json", "-o", str(report), *runs).exit_code == 0
    written = json.loads(report.read_text())
    assert validate_payload(written, "report") == "report" and written["tool_version"] == __version__
    assert invoke("scan", str(SAMPLES), "-o", str(tmp_path / "scan")).exit_code == 0
    fleet = json.loads(invoke("fleet", str(tmp_path / "scan"), "--format", "json").stdout)
    assert validate_payload(fleet, "fleet") == "fleet" and fleet["tool_version"] == __version__


def test_the_lead_s_additive_triage_fields_are_allowed() -> None:
    payload = json.loads(invoke("triage", str(SAMPLES / "kv-cache-too-small"), "--format", "json").stdout)
    payload["first_error"]["component"] = "kv_cache_manager"
    payload["phase_confidence"] = "medium"
    payload["phase_alternative"] = "cuda_init"
    payload["findings"].append({"id": "survived-error", "severity": "warning", "message": "m", "advice": "a"})
    payload["a_field_added_later"] = {"any": "shape"}
    assert validate_payload(payload, "extended triage") == "triage"
    payload["phase_alternative"] = None
    assert validate_payload(payload, "extended triage") == "triage"


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda p: p.update(phase="booting"), "an unknown phase"),
        (
            lambda p: p["findings"].append({"id": "x", "severity": "fatal", "message": "m"}),
            "a severity not in the set",
        ),
        (lambda p: p.pop("first_error"), "a required field gone"),
        (lambda p: p.update(phase_confidence="certain"), "a confidence not in the set"),
        (lambda p: p["first_error"].update(line="74"), "a line number as a string"),
    ],
)
def test_a_payload_that_breaks_the_contract_is_refused(change, why: str) -> None:
    payload = json.loads(invoke("triage", str(SAMPLES / "kv-cache-too-small"), "--format", "json").stdout)
    change(payload)
    with pytest.raises(AssertionError, match="does not validate"):
        validate_payload(payload, why)


def test_the_conftest_hook_checks_cli_output() -> None:
    before = CHECKED.get("triage", 0)
    invoke("triage", str(SAMPLES / "healthy-v0"), "--format", "json")
    assert CHECKED.get("triage", 0) == before + 1
