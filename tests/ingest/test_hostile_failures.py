"""Every failure is one clear line and a documented exit code: unreadable members are skipped and
named, a folder that cannot be listed says so, NUL padding is not "empty", a JSON too large is
refused by its size, and anything unexpected is exit 70 in one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hostile_inputs import LOG, NVIDIA_SMI_L, RunCli, bundle, run_process
from schema_check import validate_output

from vllm_triage import cli as cli_module
from vllm_triage.core.errors import ExitCode
from vllm_triage.fingerprint import combine
from vllm_triage.ingest import sources

INSPECT = {
    "Id": "3f2c",
    "Name": "/vllm",
    "Config": {"Image": "vllm/vllm-openai:v0.10.1", "Env": ["NCCL_DEBUG=INFO"], "Cmd": ["--model", "m"]},
    "HostConfig": {"ShmSize": 1073741824, "IpcMode": "private"},
    "State": {"ExitCode": 1, "OOMKilled": False},
}
_UNPRIVILEGED = os.geteuid() == 0 and shutil.which("setpriv") is not None


def _as_nobody(*args: str | Path) -> subprocess.CompletedProcess:
    """As root every file is readable: drop to uid 65534 so a mode 000 file really is not."""
    return subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m", "vllm_triage"]
        + [str(a) for a in args],
        capture_output=True,
        timeout=120,
        env={**os.environ, "HOME": "/tmp"},
    )


def test_an_unreadable_file_in_a_bundle_is_skipped_and_named(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = bundle(tmp_path / "run", {"nvidia-smi-L.txt": NVIDIA_SMI_L})
    locked = folder / "nvidia-smi-L.txt"
    real_open = os.open

    def denying_open(path, flags, *rest):  # type: ignore[no-untyped-def]
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *rest)

    monkeypatch.setattr(sources.os, "open", denying_open)
    result = run_cli("triage", folder, "--format", "json")
    assert result.exit_code == 0, result.stderr
    skipped = [f for f in json.loads(result.stdout)["findings"] if f["id"] == "input-skipped"]
    assert len(skipped) == 1 and "Permission denied" in skipped[0]["message"]
    assert skipped[0]["evidence"][0]["file"] == str(locked)


@pytest.mark.skipif(not _UNPRIVILEGED, reason="needs root and setpriv to drop privileges")
def test_mode_000_file_and_folder_for_an_unprivileged_user(tmp_path_factory: pytest.TempPathFactory) -> None:
    # pytest's own temporary folders are private to root: make one the other user can enter.
    tmp_path = Path(tempfile.mkdtemp(prefix="vllm-triage-test-"))
    tmp_path.chmod(0o755)
    try:
        _unprivileged_attacks(tmp_path)
    finally:
        for path in (tmp_path / "run" / "private", tmp_path / "denied"):
            if path.exists():
                path.chmod(0o755)
        shutil.rmtree(tmp_path)


def _unprivileged_attacks(tmp_path: Path) -> None:
    folder = bundle(tmp_path / "run", {"nvidia-smi-L.txt": NVIDIA_SMI_L})
    (folder / "nvidia-smi-L.txt").chmod(0)
    (folder / "private").mkdir()
    (folder / "private").chmod(0)
    done = _as_nobody("triage", folder, "--format", "json")
    assert done.returncode == 0, done.stderr.decode()
    assert validate_output(done.stdout, "triage --format json as an unprivileged user") == "triage"
    messages = [f["message"] for f in json.loads(done.stdout)["findings"] if f["id"] == "input-skipped"]
    assert any("nvidia-smi-L.txt" in m and "Permission denied" in m for m in messages)
    assert any("private" in m and "folder cannot be read" in m for m in messages)
    denied = tmp_path / "denied"
    bundle(denied)
    denied.chmod(0)
    done = _as_nobody("triage", denied)
    assert done.returncode == ExitCode.INPUT
    assert "cannot read folder" in done.stderr.decode() and "holds no files" not in done.stderr.decode()


def test_a_dangling_symlink_in_a_bundle_is_named(run_cli: RunCli, tmp_path: Path) -> None:
    folder = bundle(tmp_path / "run")
    (folder / "nvidia-smi.txt").symlink_to(tmp_path / "gone")
    result = run_cli("triage", folder, "--format", "json")
    assert result.exit_code == 0, result.stderr
    messages = [f["message"] for f in json.loads(result.stdout)["findings"] if f["id"] == "input-skipped"]
    assert messages == [f"{folder / 'nvidia-smi.txt'} was skipped (a dangling symbolic link)"]


def test_a_folder_of_only_unusable_entries_says_why(run_cli: RunCli, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    os.mkfifo(folder / "vllm.log")
    result = run_cli("triage", folder)
    assert result.exit_code == ExitCode.INPUT
    assert "holds no readable files" in result.stderr and "FIFO" in result.stderr


@pytest.mark.parametrize("command", ["fingerprint", "check", "triage"])
def test_nul_padding_before_a_log_is_stripped_not_empty(
    run_cli: RunCli, tmp_path: Path, command: str
) -> None:
    log = tmp_path / "vllm.log"
    log.write_bytes(b"\x00" * (200 * 1024) + LOG)  # more than the 64 KiB sniff window
    result = run_cli(command, log)
    assert result.exit_code in (0, 1), result.stderr  # check: 1 = incomplete bundle
    assert "is empty" not in result.stderr


def test_a_json_too_large_is_refused_by_its_size_not_called_cut_short(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(combine, "ARTEFACT_MAX_BYTES", 64 * 1024)
    document = dict(INSPECT, Config=dict(INSPECT["Config"], Env=[f"V{i}={'x' * 100}" for i in range(2000)]))
    inspect = tmp_path / "docker-inspect.json"
    inspect.write_text(json.dumps([document], indent=2))  # complete and well formed
    result = run_cli("fingerprint", inspect)
    assert result.exit_code == ExitCode.INPUT
    assert "input-too-large" in result.stderr and "cut short" not in result.stderr
    folder = bundle(tmp_path / "run")
    shutil.copy(inspect, folder / "docker-inspect.json")
    result = run_cli("fingerprint", folder, "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert "cut short" not in result.stdout


def test_a_json_within_the_limit_is_read_whole(run_cli: RunCli, tmp_path: Path) -> None:
    inspect = tmp_path / "docker-inspect.json"
    inspect.write_text(json.dumps([INSPECT], indent=2))
    result = run_cli("fingerprint", inspect, "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert "cut short" not in result.stdout and "vllm/vllm-openai:v0.10.1" in result.stdout


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("triage", ExitCode.INPUT),
        ("fingerprint", ExitCode.INPUT),
        ("check", ExitCode.INPUT),
        ("report", ExitCode.INPUT),
        ("redact", ExitCode.INPUT),
        ("scan", ExitCode.INPUT),
        ("diff", 2),
        ("series", 2),
    ],
)
def test_every_reading_command_refuses_a_fifo_in_one_line(
    tmp_path: Path, command: str, expected: int
) -> None:
    fifo = tmp_path / "vllm.log"
    os.mkfifo(fifo)
    good = tmp_path / "good.log"
    good.write_bytes(LOG)
    args: list[str | Path] = {
        "redact": [fifo, "--out", tmp_path / "out"],
        "scan": [fifo, "--out", tmp_path / "fleet", "--jobs", "1"],
        "diff": [good, fifo],
        "series": [good, fifo],
    }.get(command, [fifo])
    done = run_process(command, *args, timeout=120)
    stderr = done.stderr.decode()
    assert done.returncode == expected, stderr
    assert len(stderr.splitlines()) == 1 and "not-a-regular-file" in stderr


def test_an_unexpected_error_is_one_line_and_exit_70(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from vllm_triage.render import triage_text

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("renderer bug\nsecond line")

    monkeypatch.setattr(triage_text, "render_triage_text", broken)
    log = tmp_path / "vllm.log"
    log.write_bytes(LOG)
    monkeypatch.setattr(sys, "argv", ["vllm-triage", "triage", str(log)])
    with pytest.raises(SystemExit) as exited:
        cli_module.main()
    assert exited.value.code == ExitCode.INTERNAL
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal-error: RuntimeError: renderer bug" in err
