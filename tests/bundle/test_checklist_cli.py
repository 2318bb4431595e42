"""`vllm-triage check` as a person runs it (exit codes, text, JSON, bad input), and the checklist
data's strictness (rules/checklist.toml beside the engine's rules)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from checklist_bundles import Bundle, write_bundle
from click.testing import CliRunner

from vllm_triage.bundle.check import data as checklist_data
from vllm_triage.bundle.check.checklist import KNOWN_ITEMS
from vllm_triage.cli import cli
from vllm_triage.core.errors import RuleError
from vllm_triage.resources import rules_dir


def run(*args: str, stdin: bytes | None = None):
    return CliRunner().invoke(cli, list(args), input=stdin)


def test_complete_bundle_exits_0(tmp_path: Path) -> None:
    folder = write_bundle(tmp_path, Bundle())
    result = run("check", str(folder))
    assert result.exit_code == 0, result.output
    assert "complete  (13 pass, 0 fail, 0 missing)" in result.output
    assert "\x1b[" not in result.output  # no colour when not on a terminal


def test_incomplete_bundle_exits_1_with_commands(tmp_path: Path) -> None:
    folder = write_bundle(tmp_path, Bundle(smi_container=False, smi_list=False, image_digest=False))
    result = run("check", str(folder))
    assert result.exit_code == 1
    assert "FAIL     image identified by name and immutable digest" in result.output
    assert "MISSING  nvidia-smi kept from the host and from inside the container" in result.output
    assert "→ container: docker exec vllm-qwen nvidia-smi > nvidia-smi-container.txt" in result.output
    assert "vllm-triage collect --out BUNDLE_DIR --container vllm-qwen" in result.output


def test_json_contract(tmp_path: Path) -> None:
    folder = write_bundle(tmp_path, Bundle(failure="oom", request=None))
    result = run("check", "--format", "json", str(folder))
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["schema"] == "vllm-triage.check/1"
    assert data["complete"] is False and data["exit_code"] == 1
    assert set(data["summary"]) == {"pass", "fail", "missing"}
    assert data["diagnoses"][0]["id"] == "out-of-memory"
    for entry in data["items"]:
        assert entry["status"] in ("pass", "fail", "missing")
        assert {"id", "title", "message", "evidence", "collect", "why"} <= set(entry)


def test_a_pasted_issue_body_on_stdin(tmp_path: Path) -> None:
    """The bug-report template with its placeholder left in: collect_env counts as missing."""
    body = (
        b"### Your current environment\n\n<details>\n<summary>The output of <code>python collect_env.py</code>"
        b"</summary>\n\n```text\nYour output of `python collect_env.py` here\n```\n\n</details>\n"
    )
    result = run("check", "--format", "json", "-", stdin=body)
    assert result.exit_code == 1, result.output
    data = json.loads(result.output)
    assert data["placeholders"][0]["placeholder"] == "collect-env-template"
    version = next(i for i in data["items"] if i["id"] == "vllm-version")
    assert version["status"] == "missing" and "placeholder" in version["message"]


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["check", "/nonexistent/bundle"], "missing-path"),
    ],
)
def test_bad_input_is_one_line(args: list[str], problem: str) -> None:
    result = run(*args)
    assert result.exit_code == 4
    assert result.output.count("\n") == 1 and problem in result.output
    assert "Traceback" not in result.output


def test_empty_file_is_bad_input(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("")
    result = run("check", str(empty))
    assert result.exit_code == 4 and "empty" in result.output


def test_rules_check_still_passes() -> None:
    """rules/checklist.toml sits beside the engine's rules: the engine must not read it as rules."""
    result = run("rules", "check")
    assert result.exit_code == 0, result.output


def test_rules_check_names_a_broken_checklist(monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm_triage.bundle.check import checklist

    def broken():
        raise RuleError("rules/checklist.toml: [[item]] coffee-brewed: no check in the code for this id")

    monkeypatch.setattr(checklist, "checklist_data", broken)
    result = run("rules", "check")
    assert result.exit_code == 1
    assert "rules/checklist.toml" in result.output and "coffee-brewed" in result.output


def test_data_matches_the_code() -> None:
    data = checklist_data.load(KNOWN_ITEMS)
    assert {i.id for i in data.items} == KNOWN_ITEMS
    assert {d.id for d in data.diagnoses} == {"communication", "weight-load", "out-of-memory"}
    for item in data.items:
        assert item.collect, f"{item.id} says nothing about how to collect it"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "checklist.toml"
    path.write_text((rules_dir() / "checklist.toml").read_text() + text)
    return path


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('\n[[item]]\nid = "image-digest"\ntitle = "x"\nwhy = "y"\n', "duplicate id"),
        ('\n[[item]]\nid = "coffee-brewed"\ntitle = "x"\nwhy = "y"\n', "no check in the code"),
        ('\n[[diagnosis]]\nid = "x"\nlabel = "x"\nrequires = ["nope"]\n', "requires unknown item"),
        ('\n[[diagnosis]]\nid = "x"\nlabel = "x"\nrequires = []\ncolour = "red"\n', "unknown field"),
        (
            '\n[[placeholder]]\nid = "x"\nexplain = "x"\npattern = "TBD"\nmust_match = ["nothing here"]\n',
            "must_match example",
        ),
        ('\n[[placeholder]]\nid = "x"\nexplain = "x"\npattern = "("\n', "does not compile"),
    ],
)
def test_data_is_strict(tmp_path: Path, extra: str, message: str) -> None:
    with pytest.raises(RuleError, match=message):
        checklist_data.load(KNOWN_ITEMS, _write(tmp_path, extra))


def test_collect_place_must_be_known(tmp_path: Path) -> None:
    text = (
        (rules_dir() / "checklist.toml")
        .read_text()
        .replace(
            '[item.collect]\nlog = "{logs}"\n\n[[item]]\nid = "request-recorded"',
            '[item.collect]\nlaptop = "x"\n\n[[item]]\nid = "request-recorded"',
        )
    )
    path = tmp_path / "checklist.toml"
    path.write_text(text)
    with pytest.raises(RuleError, match="unknown place"):
        checklist_data.load(KNOWN_ITEMS, path)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Your output of `python collect_env.py` here", "collect-env-template"),
        ("<paste here>", "paste-here"),
        ("  --max-model-len 32768 …", "elision"),
        ("docker run ... vllm/vllm-openai:v0.10.2", "elision"),
    ],
)
def test_placeholders_in_data(line: str, expected: str) -> None:
    data = checklist_data.load(KNOWN_ITEMS)
    found = [p.id for p in data.placeholders if p.search(line)]
    assert expected in found
