"""`collect --log FILE` / `--journal UNIT` for a server that is not in a container, and exit 1
when a step the bundle cannot do without failed (the docker daemon down)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import tomllib
from click.testing import CliRunner

from vllm_triage.cli import cli

FIXTURES = Path(__file__).parent.parent / "fixtures"
SAMPLES = Path(__file__).resolve().parents[2] / "samples"
CAT = shutil.which("cat")


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def _bin(tmp_path: Path, docker_down: bool = False) -> Path:
    """nvidia-smi that prints a real table, journalctl that prints a unit's journal, and (if asked)
    a docker whose daemon is not running."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = FIXTURES / "nvidia_smi/table-535-l40s-x2-vllm.txt"
    _script(bin_dir / "nvidia-smi", f'[ "$1" = "" ] && {CAT} {smi} || {CAT} {smi}\n')
    journal = tmp_path / "journal.txt"
    lines = (SAMPLES / "kv-cache-too-small/vllm.log").read_text().splitlines()
    journal.write_text(
        "".join(
            f"2025-11-04T15:22:{i % 60:02d}.000000+0000 gpu-7 vllm[4242]: {x}\n" for i, x in enumerate(lines)
        )
    )
    _script(
        bin_dir / "journalctl",
        f'case "$*" in *"-u vllm.service"*) {CAT} {journal} ;; *) echo "-- No entries --" ; exit 1 ;; esac\n',
    )
    if docker_down:
        _script(
            bin_dir / "docker",
            'echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2\nexit 1\n',
        )
    return bin_dir


def _manifest(root: Path) -> dict:
    return tomllib.loads((root / "bundle.toml").read_text())


def test_a_plain_log_and_a_journal_are_collected_as_server_logs(tmp_path: Path) -> None:
    env = {"PATH": str(_bin(tmp_path))}
    out = tmp_path / "bundle"
    log = SAMPLES / "request-illegal-access/vllm.log"
    args = ["collect", "--out", str(out), "--log", str(log), "--journal", "vllm.service", "--format", "json"]
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["complete"] is True and data["required_failed"] == []
    files = {f["path"]: f["role"] for f in _manifest(out)["file"]}
    assert files["logs/vllm.log"] == "vllm_log" and files["journal/vllm.service.log"] == "vllm_log"
    assert (out / "logs/vllm.log").read_bytes() == log.read_bytes()
    steps = {s["name"]: s for s in _manifest(out)["step"]}
    assert (
        steps["journal.vllm.service"]["command"]
        == "journalctl -u vllm.service -o short-iso-precise --no-pager"
    )
    # The bundle reads as one run with two logs: the triage picks the first error among them.
    triage = CliRunner().invoke(cli, ["triage", str(out), "--format", "json"])
    assert triage.exit_code == 0, triage.output
    assert json.loads(triage.stdout)["phase"] in ("engine_reserve", "request")


def test_the_docker_daemon_down_is_exit_1_with_one_line_saying_so(tmp_path: Path) -> None:
    env = {"PATH": str(_bin(tmp_path, docker_down=True))}
    out = tmp_path / "bundle"
    result = CliRunner().invoke(cli, ["collect", "--out", str(out), "--container", "vllm"], env=env)
    assert result.exit_code == 1
    problem = result.stderr.strip().splitlines()
    assert len(problem) == 1 and problem[0].startswith(
        "vllm-triage: collect-incomplete: container.logs: failed"
    )
    assert "Cannot connect to the Docker daemon" in problem[0]
    assert (out / "bundle.toml").is_file() and "host/nvidia-smi.txt" in {
        f["path"] for f in _manifest(out)["file"]
    }


def test_a_journal_with_no_entries_is_a_failed_required_step(tmp_path: Path) -> None:
    env = {"PATH": str(_bin(tmp_path))}
    result = CliRunner().invoke(
        cli, ["collect", "--out", str(tmp_path / "b"), "--journal", "other.service"], env=env
    )
    assert result.exit_code == 1 and "journal.other.service: failed" in result.stderr


def test_a_missing_log_file_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["collect", "--out", str(tmp_path / "b"), "--log", str(tmp_path / "nope.log")]
    )
    assert result.exit_code == 2 and not (tmp_path / "b").exists()


def test_a_host_only_snapshot_needs_only_the_host_nvidia_smi(tmp_path: Path) -> None:
    env = {"PATH": str(_bin(tmp_path))}
    assert CliRunner().invoke(cli, ["collect", "--out", str(tmp_path / "b")], env=env).exit_code == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = CliRunner().invoke(cli, ["collect", "--out", str(tmp_path / "c")], env={"PATH": str(empty)})
    assert missing.exit_code == 1 and "host.nvidia-smi: missing" in missing.stderr


def test_a_log_that_is_a_fifo_or_a_device_is_a_failed_step_not_a_hang(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "server.log"
    os.mkfifo(fifo)
    for given in (fifo, Path("/dev/zero")):
        out = tmp_path / f"out-{given.name}"
        result = CliRunner().invoke(
            cli, ["collect", "--log", str(given), "--out", str(out), "--format", "json"]
        )
        steps = {s["name"]: s for s in json.loads(result.stdout)["steps"]}
        step = steps[f"log.{given.name}"]
        assert step["status"] == "failed" and "not a regular file" in step["reason"]
        assert not (out / "logs" / given.name).exists()


def test_a_log_is_copied_as_utf8_text_streamed(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"INFO ok\n\xff broken\n" * 200_000)
    out = tmp_path / "out"
    CliRunner().invoke(cli, ["collect", "--log", str(log), "--out", str(out)])
    copied = (out / "logs" / "server.log").read_bytes()
    assert copied == "INFO ok\n\ufffd broken\n".encode() * 200_000
