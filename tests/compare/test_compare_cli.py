"""`vllm-triage diff` and `series` as a person runs them: exit codes, formats, --show-noise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from compare_builders import Trial, write_bundle

from vllm_triage.cli import cli

BASE = Trial(label="base", failure="oom")
ONE_KNOB = BASE.but(label="one-knob", args={"max_model_len": 4096, "port": 8000})
NOISE_ONLY = BASE.but(label="noise-only", container_id="f00d" * 16, started="2026-03-05T09:00:00Z", pid=99)
CONFOUNDED = BASE.but(
    label="confounded",
    driver="580.65.06",
    smi_cuda="13.0",
    image="vllm/vllm-openai:v0.11.0",
    version="0.11.0",
    image_id="sha256:" + "d4" * 32,
)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def bundles(tmp_path: Path) -> dict[str, str]:
    return {t.label: str(write_bundle(tmp_path, t)) for t in (BASE, ONE_KNOB, NOISE_ONLY, CONFOUNDED)}


@pytest.mark.parametrize(
    ("other", "code", "verdict"),
    [("noise-only", 0, "IDENTICAL"), ("one-knob", 0, "ONE-VARIABLE"), ("confounded", 3, "CONFOUNDED")],
)
def test_diff_exit_code_follows_the_verdict(
    bundles: dict[str, str], other: str, code: int, verdict: str
) -> None:
    exit_code, out, err = run("diff", bundles["base"], bundles[other])
    assert exit_code == code
    assert err == ""
    # The verdict is the second line: what a person reads first.
    assert out.splitlines()[1].startswith(verdict)


def test_diff_text_puts_the_changed_knobs_before_the_details(bundles: dict[str, str]) -> None:
    _, out, _ = run("diff", bundles["base"], bundles["confounded"], "--width", "200")
    lines = out.splitlines()
    assert lines[3] == "changed"
    assert lines[4].lstrip().startswith("host driver")
    assert "570.133.20 → 580.65.06" in lines[4]
    assert "nvidia-smi-host.txt:3" in lines[4]  # provenance, relative to the bundle
    assert out.index("re-test one change at a time") < out.index("failure:")
    assert "1. host driver" in out and "2. image" in out


def test_diff_json_contract(bundles: dict[str, str]) -> None:
    exit_code, out, _ = run("diff", bundles["base"], bundles["one-knob"], "--format", "json")
    assert exit_code == 0
    data = json.loads(out)
    assert data["schema"] == "vllm-triage.diff/1"
    assert data["verdict"] == "one-variable"
    for key in ("a", "b", "changes", "drift", "retest_order", "failure", "defaults", "not_compared", "noise"):
        assert key in data
    assert data["a"]["outcome"]["phase"] == "engine_reserve"
    assert data["a"]["outcome"]["signature_hash"] == data["b"]["outcome"]["signature_hash"]


def test_diff_json_exit_code_is_still_3_when_confounded(bundles: dict[str, str]) -> None:
    exit_code, out, _ = run("diff", bundles["base"], bundles["confounded"], "--format", "json")
    assert exit_code == 3
    assert json.loads(out)["verdict"] == "confounded"


def test_diff_markdown(bundles: dict[str, str]) -> None:
    exit_code, out, _ = run("diff", bundles["base"], bundles["confounded"], "--format", "md")
    assert exit_code == 3
    assert out.startswith("## vllm-triage diff: base → confounded — **confounded**")
    assert "| **host driver** | host and driver | `570.133.20` | `580.65.06` |" in out
    assert "**Re-test one change at a time**" in out


def test_show_noise_lists_what_was_left_out(bundles: dict[str, str]) -> None:
    _, out, _ = run("diff", bundles["base"], bundles["noise-only"])
    assert "--show-noise lists them" in out
    assert "container.id" not in out
    _, shown, _ = run("diff", bundles["base"], bundles["noise-only"], "--show-noise")
    assert "noise    container.id" in shown
    assert "[container-ids:" in shown


def test_diff_usage_errors_exit_2(bundles: dict[str, str]) -> None:
    assert run("diff", bundles["base"])[0] == 2
    assert run("diff", bundles["base"], bundles["one-knob"], "--format", "yaml")[0] == 2


def test_diff_missing_path_is_one_line_exit_2(bundles: dict[str, str], tmp_path: Path) -> None:
    exit_code, out, err = run("diff", bundles["base"], str(tmp_path / "nowhere"))
    assert exit_code == 2  # the diff/series contract: 2 for a usage or input error
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("vllm-triage: missing-path:")
    assert "Traceback" not in err


def test_diff_of_an_empty_file_is_exit_2(bundles: dict[str, str], tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("")
    exit_code, _, err = run("diff", bundles["base"], str(empty))
    assert exit_code == 2  # the diff/series contract: 2 for a usage or input error
    assert err.startswith("vllm-triage: ")


def test_help_documents_the_exit_codes() -> None:
    for command in ("diff", "series"):
        exit_code, out, _ = run(command, "--help")
        assert exit_code == 0
        out = " ".join(out.split())  # click wraps the epilog
        assert (
            "Exit codes: 0" in out
            and "3 confounded" in out
            and "2 also for bad input" in out
            and "2 usage" in out
        )


def test_series_exit_codes(bundles: dict[str, str]) -> None:
    exit_code, out, _ = run("series", bundles["base"], bundles["one-knob"], bundles["noise-only"])
    assert exit_code == 0
    assert out.splitlines()[1].startswith("ONE VARIABLE PER STEP")
    exit_code, out, _ = run("series", bundles["base"], bundles["confounded"])
    assert exit_code == 3
    assert "T1→T2" in out.splitlines()[1]


def test_series_json_and_markdown(bundles: dict[str, str]) -> None:
    exit_code, out, _ = run("series", bundles["base"], bundles["noise-only"], "--format", "json")
    assert exit_code == 0
    data = json.loads(out)
    assert data["schema"] == "vllm-triage.series/1"
    assert data["repeats"][0]["verdict"] == "stable"
    exit_code, out, _ = run("series", bundles["base"], bundles["noise-only"], "--format", "md")
    assert out.startswith("## vllm-triage series: 2 trials")


def test_series_needs_two_trials(bundles: dict[str, str], tmp_path: Path) -> None:
    assert run("series")[0] == 2  # no argument: usage
    exit_code, _, err = run("series", bundles["base"])  # one bundle folder: one trial
    assert exit_code == 2  # the diff/series contract: 2 for a usage or input error
    assert err.startswith("vllm-triage: too-few-trials:")


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "compare"


def test_shared_cluster_against_rental_node() -> None:
    # The README's example: the same OOM on both nodes, but the shared node's GPU was busy and it
    # inherited NCCL_P2P_DISABLE=1 — the comparison cannot blame the node alone.
    exit_code, out, _ = run(
        "diff", str(FIXTURES / "shared-cluster"), str(FIXTURES / "rental-node"), "--format", "json"
    )
    data = json.loads(out)
    assert exit_code == 3
    assert [c["id"] for c in data["changes"]] == ["node"]
    assert [d["id"] for d in data["drift"]] == ["gpu-occupancy", "nccl-inherited"]
    assert data["failure"]["conclusion"] == "same-failure"


def test_a_bundle_without_log_compares_what_it_has_and_says_so(tmp_path: Path) -> None:
    smi_only = tmp_path / "smi-only"
    smi_only.mkdir()
    (smi_only / "nvidia-smi-host.txt").write_text(
        (FIXTURES / "rental-node" / "nvidia-smi-host.txt").read_text()
    )
    exit_code, out, _ = run("diff", str(FIXTURES / "rental-node"), str(smi_only), "--format", "json")
    data = json.loads(out)
    assert exit_code == 0
    assert data["failure"]["conclusion"] == "unknown"
    assert data["coverage"]["not_compared"] > data["coverage"]["compared"]
    _, text, _ = run("diff", str(FIXTURES / "rental-node"), str(smi_only), "--width", "200")
    assert "collect the same artefacts for both" in text.splitlines()[2]
