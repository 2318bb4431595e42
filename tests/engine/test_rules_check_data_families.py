"""`rules check` validates every data family under rules/, not only the triage rules."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from vllm_triage.cli import cli


def test_builtin_data_families_pass() -> None:
    result = CliRunner().invoke(cli, ["rules", "check"])
    assert result.exit_code == 0, result.output
    assert "0 problem(s)" in result.output


def test_broken_known_issue_and_redaction_files_are_named(tmp_path: Path) -> None:
    (tmp_path / "known.toml").write_text('[[known_issue]]\nid = "x"\nbogus = 1\n', encoding="utf-8")
    (tmp_path / "redact.toml").write_text(
        '[[secret]]\nid = "s"\npattern = "token=\\\\w+"\n', encoding="utf-8"
    )
    result = CliRunner().invoke(cli, ["rules", "check", "--rules", str(tmp_path)])
    assert result.exit_code == 1
    assert "known.toml" in result.output and "known_issue x" in result.output
    assert "redact.toml" in result.output
    assert "Traceback" not in result.output
