"""Attacks on matching: lines that make a backtracking engine explode, and rule files that
`rules check` rejects, which triage must refuse instead of running."""

from __future__ import annotations

import json
import time
from pathlib import Path

import polars as pl
import pytest
from hostile_inputs import LOG, RunCli, run_process

from vllm_triage.core.errors import ExitCode
from vllm_triage.engine import matcher
from vllm_triage.logframe import parse_lines
from vllm_triage.pipeline import load_rules

ERROR_PREFIX = b"(EngineCore_0 pid=9) ERROR 01-02 03:04:31 [core.py:700] "


def _rule_file(folder: Path, pattern: str, name: str = "mine.toml", rule_id: str = "mine.evil") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    escaped = pattern.replace("\\", "\\\\").replace('"', '\\"')
    (folder / name).write_text(
        "[[rule]]\n"
        f'id = "{rule_id}"\nkind = "error"\nphase = "any"\ncategory = "mine"\n'
        f'pattern = "{escaped}"\nexplain = "a rule of ours"\nmust_match = ["aaa"]\n'
    )
    return folder


@pytest.mark.parametrize("command", ["triage", "diff"])
def test_a_long_value_error_line_does_not_hang(tmp_path: Path, command: str) -> None:
    """A few hundred KB of `Value error, ` after an ERROR prefix: Python's regex backtracks on
    the built-in `Value error, .*(?:must|…)`; the line must be matched in linear time."""
    log = tmp_path / "vllm.log"
    log.write_bytes(LOG + ERROR_PREFIX + b"Value error, " * 25_000 + b"\n")
    args = ("triage", log) if command == "triage" else ("diff", tmp_path / "a.log", log)
    (tmp_path / "a.log").write_bytes(LOG)
    started = time.monotonic()
    done = run_process(*args, timeout=120)
    assert done.returncode in (0, 3), done.stderr.decode()
    assert time.monotonic() - started < 60


def test_the_python_path_falls_back_to_the_linear_engine_on_a_slow_pattern(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compiled = load_rules()
    message = "Value error, " * 3000 + "max_model_len must be positive"
    raw = pl.Series("raw", [message, "INFO 01-02 03:04:05 [x.py:1] fine"])
    frame = parse_lines(raw, "t.log", 1)
    monkeypatch.setattr(matcher, "PYTHON_LINE_MAX", 10**9)  # let the long line into the Python path
    # Only the rules whose literals the line holds are searched now (engine/literals.py), which
    # this line's searches finish inside 5 ms: a budget no search can meet stands for the slow one.
    monkeypatch.setattr(matcher, "PYTHON_BUDGET_S", 1e-9)
    started = time.monotonic()
    classified = matcher.classify(frame, compiled)
    assert time.monotonic() - started < 10
    assert compiled.python_ok is False  # the rest of the run uses polars only
    linear = matcher.classify(frame, compiled)
    assert classified.get_column("cls").to_list() == linear.get_column("cls").to_list()
    assert classified.get_column("cls")[0] == "config.validation"


def test_both_paths_classify_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = load_rules()
    raw = pl.Series("raw", LOG.decode().splitlines())
    frame = parse_lines(raw, "t.log", 1)
    small = matcher.classify(frame, compiled)
    monkeypatch.setattr(matcher, "SMALL_FRAME_ROWS", 0)
    big = matcher.classify(frame, compiled)
    assert small.select("marker", "cls", "exc", "tb").equals(big.select("marker", "cls", "exc", "tb"))


def test_a_catastrophic_user_pattern_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    rules = _rule_file(tmp_path / "rules", "(a+)+$")
    log = tmp_path / "vllm.log"
    log.write_bytes(LOG)
    result = run_cli("triage", log, "--rules", rules)
    assert result.exit_code == ExitCode.INPUT
    lines = result.stderr.splitlines()
    assert (
        len(lines) == 1
        and "invalid-rules" in lines[0]
        and "backtracks" in lines[0]
        and "mine.evil" in lines[0]
    )


def test_a_toml_syntax_error_in_a_user_file_is_refused_not_ignored(run_cli: RunCli, tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    # A typo that hides the table header from the engine's quick look ([[rule]] is not there).
    (rules / "typo.toml").write_text('[[rule]\nid = "x"\n')
    log = tmp_path / "vllm.log"
    log.write_bytes(LOG)
    result = run_cli("triage", log, "--rules", rules)
    assert result.exit_code == ExitCode.INPUT
    assert "is not valid TOML" in result.stderr and "typo.toml" in result.stderr


def test_an_invalid_huge_pattern_is_named_without_the_union(run_cli: RunCli, tmp_path: Path) -> None:
    rules = _rule_file(tmp_path / "rules", "(" + "a" * 5000)
    log = tmp_path / "vllm.log"
    log.write_bytes(LOG)
    result = run_cli("triage", log, "--rules", rules)
    assert result.exit_code == ExitCode.INPUT
    assert len(result.stderr) < 1200, len(result.stderr)
    assert "CUDA out of memory" not in result.stderr  # no built-in pattern, let alone the union


def test_a_user_rule_that_does_not_match_its_example_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    rules = _rule_file(tmp_path / "rules", "bbb")
    log = tmp_path / "vllm.log"
    log.write_bytes(LOG)
    result = run_cli("triage", log, "--rules", rules)
    assert result.exit_code == ExitCode.INPUT
    assert "must_match example does not match" in result.stderr


def test_a_good_user_rule_is_used(run_cli: RunCli, tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "mine.toml").write_text(
        '[[rule]]\nid = "mine.weird_failure"\nkind = "error"\nphase = "any"\ncategory = "mine"\n'
        'priority = 99\npattern = "Weird failure number \\\\d+"\nexplain = "ours"\n'
        'must_match = ["Weird failure number 7"]\nmust_not_match = ["Weird failure"]\n'
    )
    log = tmp_path / "vllm.log"
    log.write_bytes(LOG + ERROR_PREFIX + b"Weird failure number 12\n")
    result = run_cli("triage", log, "--rules", rules, "--format", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert "mine.weird_failure" in json.dumps(data)
