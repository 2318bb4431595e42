"""The lnav format shipped for vLLM logs, and `--quiet` on every command."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
import regex
from click.testing import CliRunner, Result

from vllm_triage.cli import cli

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
# lnav reads these capture names itself; every other one must be declared under "value".
SPECIAL = {"timestamp", "level", "body"}


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def fmt() -> dict:
    result = invoke("lnav-format")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["$schema"] == "https://lnav.org/schemas/format-v1.schema.json"
    return data["vllm_log"]


def _patterns(fmt: dict) -> list[regex.Pattern]:
    return [regex.compile(p["pattern"]) for p in fmt["regex"].values()]


def test_every_sample_line_parses_with_its_fields(fmt: dict) -> None:
    for sample in fmt["sample"]:
        match = next((m for p in _patterns(fmt) if (m := p.match(sample["line"]))), None)
        assert match is not None, sample["line"]
        assert match["level"] in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}
        assert match["timestamp"] and match["body"]


def test_the_process_prefix_and_the_docker_timestamp_are_fields(fmt: dict) -> None:
    (pattern,) = _patterns(fmt)
    m = pattern.match(
        "2026-05-12T08:15:11.713425582Z (EngineCore_DP0 pid=97) ERROR 05-12 08:15:11 [core.py:1120] EngineCore failed to start."
    )
    assert (m["transport_time"], m["process"], m["pid"]) == (
        "2026-05-12T08:15:11.713425582Z",
        "EngineCore_DP0",
        "97",
    )
    assert (m["src_file"], m["src_line"], m["body"]) == ("core.py", "1120", "EngineCore failed to start.")
    # Not a vLLM logger line: lnav shows it as a continuation of the message before it.
    assert (
        pattern.match(
            '(APIServer pid=1) INFO:     10.4.0.23:48812 - "POST /v1/chat/completions HTTP/1.1" 200 OK'
        )
        is None
    )


def test_the_lines_of_the_bundled_logs_with_a_level_parse(fmt: dict) -> None:
    (pattern,) = _patterns(fmt)
    logger_line = regex.compile(r"(?:^|\) )(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d")
    seen = 0
    for log in (
        "kv-cache-too-small/vllm.log",
        "healthy-v0/server.log",
        "driver-too-old-cu130/docker-logs-t.txt",
    ):
        for line in (SAMPLES / log).read_text().splitlines():
            if logger_line.search(line):
                seen += 1
                assert pattern.match(line), line
    assert seen > 100


def test_every_capture_is_declared_and_levels_are_lnav_s(fmt: dict) -> None:
    names = {n for p in _patterns(fmt) for n in p.groupindex}
    assert names - SPECIAL <= set(fmt["value"])
    assert set(fmt["level"]) <= {
        "trace",
        "debug",
        "info",
        "stats",
        "notice",
        "warning",
        "error",
        "critical",
        "fatal",
    }


def _leaf_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            out.extend(_leaf_commands(command, (*prefix, name)))
        else:
            out.append((*prefix, name))
    return out


@pytest.mark.parametrize("path", _leaf_commands(cli))
def test_every_command_takes_quiet(path: tuple[str, ...]) -> None:
    result = invoke(*path, "--help")
    assert "-q, --quiet" in result.stdout


def test_quiet_prints_nothing_but_keeps_the_exit_code(tmp_path: Path) -> None:
    result = invoke("triage", str(SAMPLES / "kv-cache-too-small"), "-q")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    listed = invoke("rules", "list", "--quiet")
    assert (listed.exit_code, listed.stdout, listed.stderr) == (0, "", "")
    check = invoke("check", str(SAMPLES / "kv-cache-too-small"), "-q")
    assert check.exit_code == 1 and check.stdout == ""  # incomplete: the exit code says it
    target = tmp_path / "r.md"
    report = invoke("report", str(SAMPLES / "kv-cache-too-small"), "-o", str(target), "-q")
    assert report.exit_code == 0 and report.stderr == "" and target.read_text().strip()
    missing = invoke("triage", str(tmp_path / "nope"), "-q")
    assert missing.exit_code == 4 and "missing-path" in missing.stderr  # errors still reach stderr
    # The next command is not quiet: the state does not leak from one invocation to the next.
    assert invoke("triage", str(SAMPLES / "kv-cache-too-small")).stdout.startswith("failed in")


def _complete(words: str) -> list[str]:
    """What bash completion offers after `words` (click's protocol: `type,value` per line)."""
    parts = words.split(" ")
    env = {"_VLLM_TRIAGE_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(len(parts) - 1)}
    result = CliRunner().invoke(cli, [], env=env, prog_name="vllm-triage")
    return [line.split(",", 1)[1] for line in result.stdout.splitlines() if "," in line]


def test_shell_completion_offers_commands_samples_and_schemas() -> None:
    assert "triage" in _complete("vllm-triage tr")
    assert "lnav-format" in _complete("vllm-triage ln")
    assert _complete("vllm-triage triage --sample kv") == ["kv-cache-too-small"]
    assert _complete("vllm-triage schema f") == ["fingerprint", "fleet"]
