"""`vllm-triage report --format md|json`: the Markdown gives vLLM's bug-report form
(.github/ISSUE_TEMPLATE/400-bug-report.yml) its fields one block at a time, each pasting cleanly
into GitHub; the JSON is the same data; secrets are redacted by default and the leak scan refuses
a report that still holds one. The form's fitting to GitHub's limit: test_report_form.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from checklist_bundles import HF_TOKEN, Bundle, write_bundle
from click.testing import CliRunner

from vllm_triage.cli import cli

# The guide's headings: one per field of the form, in the form's order, then the checkbox.
FORM_HEADINGS = [
    "## 1. Title — `--field title`",
    "## 2. Your current environment — `--field environment`",
    "## 3. 🐛 Describe the bug — `--field bug`",
    "## 4. Before submitting a new issue...",
]
COLLECT_ENV_DETAILS = "<details>\n<summary>The output of <code>python collect_env.py</code></summary>"
API_KEY = "sk-local-5f2e9a7c1b3d77aa"
PASSWORD = "correct-horse-battery-9"

SECRET_ENV = {"NCCL_DEBUG": "WARN", "HF_TOKEN": HF_TOKEN, "MY_DB_PASSWORD": PASSWORD}


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("report")
    base = Bundle(
        label="t1 base",
        collect_env_version="0.10.2",
        env=SECRET_ENV,
        command_args={"api_key": API_KEY},
        extra_files={},
    )
    return {
        "one": write_bundle(root, base.but(failure="illegal", rollback="t0"), "one"),
        "t1": write_bundle(root, base, "t1"),
        "t2": write_bundle(
            root,
            base.but(
                label="t2 prefix caching",
                started="2026-04-02T09:00:00Z",
                prefix_caching=True,
                failure="illegal",
            ),
            "t2",
        ),
        "ticks": write_bundle(
            root,
            base.but(
                command="vllm_serve",
                extra_files={"notes.md": "x"},
                command_args={"chat_template": "```{{ messages }}```"},
            ),
            "ticks",
        ),
    }


def sections(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("## ")]


def field(*args: str) -> str:
    """One field's body as `report --field NAME` prints it."""
    result = run("report", "--field", *args)
    assert result.exit_code == 0, result.output
    return result.output


def outside_code(text: str) -> str:
    """The Markdown with fenced blocks and inline code spans removed: what GitHub parses as prose/HTML."""
    out, fence = [], None
    for line in text.splitlines():
        match = re.match(r"^(`{3,})", line)
        if fence is None and match:
            fence = match.group(1)
            continue
        if fence is not None:
            if line.startswith(fence) and line.strip("`") == "":
                fence = None
            continue
        out.append(re.sub(r"(`+).+?\1", "", line))
    assert fence is None, "a code fence is left open"
    return "\n".join(out)


def test_one_block_per_field_of_the_bug_form(bundles: dict[str, Path]) -> None:
    result = run("report", str(bundles["one"]))
    assert result.exit_code == 0, result.output
    text = result.output
    assert sections(text) == FORM_HEADINGS
    assert "open **New issue → 🐛 Bug report**" in text
    assert field("environment", str(bundles["one"])).startswith(COLLECT_ENV_DETAILS)
    assert field("title", str(bundles["one"])).startswith("[Bug]: ")
    assert "Tick the box yourself" in text


def test_environment_is_collect_env_as_pasted(bundles: dict[str, Path]) -> None:
    text = run("report", str(bundles["one"])).output
    environment = field("environment", str(bundles["one"]))
    assert environment.rstrip() in text  # the block of the guide is the field, whole
    assert "```text\nCollecting environment information..." in environment
    assert "vLLM Version: 0.10.2" in environment
    assert "Your output of `python collect_env.py` here" not in text  # never the template's placeholder
    assert "| vLLM | `0.10.2` | `vllm.log:2` |" in environment  # the fingerprint, with where it was read


def test_bug_section_holds_command_request_and_full_error_block(bundles: dict[str, Path]) -> None:
    bug = field("bug", str(bundles["one"]))
    assert (
        "**Launch command** (`command.sh`, as kept in the bundle):\n\n```sh\ndocker run -d --name vllm-qwen"
        in bug
    )
    assert "**Request** (`request.sh`):\n\n```sh\ncurl -sS -m 120" in bug
    block = bug.split("**First error**", 1)[1]
    assert "vllm.log:" in block.splitlines()[0] and "with the full traceback" in block.splitlines()[0]
    for expected in (
        "WorkerProc hit an exception.",
        "Traceback (most recent call last):",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ):
        assert expected in block
    assert "Later errors are consequences of this one" in bug
    assert "EngineDeadError" in bug.split("Later errors are consequences", 1)[1]
    assert "**What was tried:** one run only" in bug
    # The command is the one kept, not one anybody made minimal: the report does not call it that.
    assert "inimal" not in bug


def test_what_was_tried_for_two_runs(bundles: dict[str, Path]) -> None:
    text = field("bug", str(bundles["t1"]), str(bundles["t2"]))
    tried = text.split("**What was tried, one variable at a time:**", 1)[1]
    rows = [line for line in tried.splitlines() if line.startswith("| T")]
    assert rows[0].startswith("| T1 | t1 base | (first) | passed |")
    assert (
        "`--enable-prefix-caching: False → True`" in rows[1] and "request — illegal_memory_access" in rows[1]
    )
    assert "more than one variable" not in rows[1]
    # The report is about the run that failed.
    title = field("title", str(bundles["t1"]), str(bundles["t2"]))
    assert title.startswith("[Bug]: RuntimeError: CUDA error: an illegal memory access")


def test_pastes_cleanly(bundles: dict[str, Path]) -> None:
    for name, part in [(n, p) for n in ("one", "ticks") for p in ("environment", "bug")]:
        text = field(part, str(bundles[name]))
        prose = outside_code(text)
        # A placeholder outside code would be taken for an HTML tag by GitHub and vanish.
        assert "<redacted" not in prose
        allowed = {"details", "/details", "summary", "/summary", "code", "/code", "sub", "/sub", "br"}
        tags = set(re.findall(r"<(/?[a-z]+)[ >]", prose))
        assert tags <= allowed, tags - allowed
        assert "\x1b[" not in text


def test_backticks_in_an_artefact_do_not_close_the_fence(bundles: dict[str, Path]) -> None:
    text = field("bug", str(bundles["ticks"]))
    assert "````sh\n#!/usr/bin/env bash" in text  # a longer fence around a command holding ```
    outside_code(text)  # every fence closes
    # The guide's block around the field is longer still.
    assert "`````markdown\n" in run("report", str(bundles["ticks"])).output


def test_secrets_are_redacted_by_default(bundles: dict[str, Path]) -> None:
    for fmt in ("md", "json", "html"):
        text = run("report", "--format", fmt, str(bundles["one"])).output
        for secret in (HF_TOKEN, API_KEY, PASSWORD):
            assert secret not in text, (fmt, secret)
    text = run("report", str(bundles["one"])).output
    assert "HF_TOKEN=<redacted:hf-token:1>" in text
    assert "--api-key <redacted:openai-key:1>" in text
    # The same secret has the same placeholder in the command and in the environment listing.
    assert text.count("<redacted:hf-token:1>") >= 2


def test_no_redact_keeps_secrets_and_warns(bundles: dict[str, Path]) -> None:
    result = CliRunner().invoke(cli, ["report", "--no-redact", str(bundles["one"])])
    assert result.exit_code == 0
    assert HF_TOKEN in result.stdout
    assert "NOT redacted" in result.stderr


def test_leak_scan_refuses_a_report_left_unredacted(
    bundles: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A redaction that misses a secret on purpose: the leak scan fails the report, nothing is written."""
    from vllm_triage.bundle.report import redact as report_redact

    monkeypatch.setattr(report_redact.PayloadRedactor, "redact", lambda self, payload: payload)
    target = tmp_path / "report.md"
    result = CliRunner().invoke(cli, ["report", "-o", str(target), str(bundles["one"])])
    assert result.exit_code == 1
    assert "leak-scan-failed" in result.stderr and result.stderr.count("\n") == 1
    assert HF_TOKEN not in result.stderr
    assert not target.exists()


def test_json_is_the_report_data(bundles: dict[str, Path]) -> None:
    data = json.loads(run("report", "--format", "json", str(bundles["t1"]), str(bundles["t2"])).output)
    assert data["schema"] == "vllm-triage.report/1"
    assert [r["label"] for r in data["runs"]] == ["t1 base", "t2 prefix caching"]
    assert data["primary"] == 1
    assert data["runs"][1]["first_error"]["category"] == "illegal_memory_access"
    assert data["runs"][0]["milestones"][-1]["marker"] == "ready"
    assert data["tried"]["rows"][1]["changed"]
    assert data["redaction"]["enabled"] is True
    kinds = {k["kind"] for k in data["redaction"]["by_kind"]}
    assert {"hf-token", "openai-key", "password"} <= kinds
    assert all("value" not in p for p in data["redaction"]["pseudonyms"])
    assert data["checklist"]["summary"]["pass"] > 0


def test_output_file_and_inputs_untouched(bundles: dict[str, Path], tmp_path: Path) -> None:
    before = sorted(p.name for p in bundles["one"].iterdir())
    target = tmp_path / "issue.md"
    result = CliRunner().invoke(cli, ["report", "-o", str(target), str(bundles["one"])])
    assert result.exit_code == 0 and result.stdout == ""
    assert target.read_text().startswith("<!-- vllm-triage report")
    assert sorted(p.name for p in bundles["one"].iterdir()) == before


def test_refuses_to_write_into_the_bundle(bundles: dict[str, Path]) -> None:
    result = CliRunner().invoke(cli, ["report", "-o", str(bundles["one"] / "report.md"), str(bundles["one"])])
    assert result.exit_code == 2 and "out-inside-input" in result.stderr
    assert not (bundles["one"] / "report.md").exists()


def test_missing_bundle_is_one_line() -> None:
    result = CliRunner().invoke(cli, ["report", "/nonexistent/bundle"])
    assert result.exit_code == 4 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
