"""Attacks on archives: members that inflate far beyond their size, floods of entries, names
that cannot coexist in a tree, members that cannot be read. Limits are lowered by option."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
import time
import zipfile
from pathlib import Path

import pytest
from hostile_inputs import LOG, NVIDIA_SMI_L, RunCli, run_process

from vllm_triage.core.errors import ExitCode
from vllm_triage.ingest import archives, readers
from vllm_triage.ingest.sources import collect


def _gz_bomb(inflated: int) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9) as inner:
        inner.write(LOG)  # sniffed as a vLLM log, so every command reads on
        block = b"INFO 01-02 03:04:05 [x.py:1] a line repeated until the member is huge\n" * 8192
        for _ in range(inflated // len(block) + 1):
            inner.write(block)
    return buffer.getvalue()


def _tar(path: Path, members: list[tuple[str, bytes | None]], mode: str = "w") -> Path:
    """members: (name, data) for a file, (name, None) for a folder entry."""
    with tarfile.open(path, mode) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


def test_a_gz_member_of_a_zip_counts_inflated(run_cli: RunCli, tmp_path: Path) -> None:
    bomb = _gz_bomb(8 * 1024 * 1024)
    assert len(bomb) < 200_000
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("vllm.log", LOG)
        out.writestr("old/vllm.log.1.gz", bomb)
    result = run_cli("triage", archive, "--max-input", "2M")
    assert result.exit_code == ExitCode.INPUT
    assert "archive-too-large" in result.stderr and "unpacks to more than 2 MiB" in result.stderr


def test_a_gz_member_of_a_tar_counts_inflated(run_cli: RunCli, tmp_path: Path) -> None:
    archive = _tar(tmp_path / "bundle.tar", [("vllm.log.gz", _gz_bomb(8 * 1024 * 1024)), ("x.txt", LOG)])
    result = run_cli("fingerprint", archive, "--max-input", "2M")
    assert result.exit_code == ExitCode.INPUT
    assert "archive-too-large" in result.stderr


def test_a_gz_member_within_the_limit_is_read_as_its_log(run_cli: RunCli, tmp_path: Path) -> None:
    archive = _tar(tmp_path / "bundle.tar.gz", [("logs/vllm.log.gz", gzip.compress(LOG))], mode="w:gz")
    result = run_cli("triage", archive, "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["first_error"]["line"] == 8


def test_folder_entries_count_against_the_member_limit(tmp_path: Path) -> None:
    entries: list[tuple[str, bytes | None]] = [(f"d{i}", None) for i in range(5000)] + [("vllm.log", LOG)]
    archive = _tar(tmp_path / "many.tar.gz", entries, mode="w:gz")
    started = time.monotonic()
    done = run_process("triage", archive, "--max-members", "100", timeout=60)
    assert done.returncode == ExitCode.INPUT
    assert "has more than 100 entries" in done.stderr.decode()
    assert time.monotonic() - started < 30


def test_zip_entries_count_folders_too(run_cli: RunCli, tmp_path: Path) -> None:
    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for i in range(30):
            out.writestr(f"d{i}/", b"")
        out.writestr("vllm.log", LOG)
    result = run_cli("triage", archive, "--max-members", "10")
    assert result.exit_code == ExitCode.INPUT and "more than 10 entries" in result.stderr


def test_a_file_and_a_folder_of_the_same_name_are_reported_not_a_crash(
    run_cli: RunCli, tmp_path: Path
) -> None:
    archive = _tar(tmp_path / "clash.tar", [("a", b"hi\n"), ("a/b.txt", NVIDIA_SMI_L), ("vllm.log", LOG)])
    result = run_cli("triage", archive, "--format", "json")
    assert result.exit_code == 0, result.stderr
    skipped = [f for f in json.loads(result.stdout)["findings"] if f["id"] == "input-skipped"]
    assert [f["evidence"][0]["file"] for f in skipped] == [f"{archive}!a"]
    assert "same name as a folder" in skipped[0]["message"]
    out = tmp_path / "shared"
    redacted = run_cli("redact", archive, "--out", out)
    assert redacted.exit_code in (0, 1), redacted.stderr  # no FileExistsError, no exit 70
    assert (out / "a" / "b.txt").is_file() or any(out.rglob("b.txt"))


def test_an_encrypted_zip_member_is_skipped_and_named(run_cli: RunCli, tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as out:
        out.writestr("vllm.log", LOG)
        out.writestr("secret.txt", b"hidden")
    data = bytearray(buffer.getvalue())
    for signature, flags_at, name_len_at, name_at in ((b"PK\x03\x04", 6, 26, 30), (b"PK\x01\x02", 8, 28, 46)):
        start = 0
        while (start := data.find(signature, start)) >= 0:
            length = int.from_bytes(data[start + name_len_at : start + name_len_at + 2], "little")
            if data[start + name_at : start + name_at + length] == b"secret.txt":
                data[start + flags_at] |= 0x1  # the "encrypted" flag, as `zip -e` sets it
            start += 4
    archive = tmp_path / "bundle.zip"
    archive.write_bytes(bytes(data))
    result = run_cli("triage", archive, "--format", "json")
    assert result.exit_code == 0, result.stderr
    skipped = [f for f in json.loads(result.stdout)["findings"] if f["id"] == "input-skipped"]
    assert (
        len(skipped) == 1 and "secret.txt" in skipped[0]["message"] and "encrypted" in skipped[0]["message"]
    )
    # The note names the member; its name is no secret (the report's leak scan must agree).
    report = run_cli("report", archive)
    assert report.exit_code == 0, report.stderr


def test_large_tar_members_are_streamed_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archives, "CACHE_MEMBER_BYTES", 1024)
    serving = b"(APIServer pid=7) INFO 01-02 03:05:00 [loggers.py:1] Avg prompt throughput: 0.0\n" * 2000
    archive = _tar(
        tmp_path / "b.tar.gz", [("nvidia-smi-L.txt", NVIDIA_SMI_L), ("vllm.log", serving + LOG)], mode="w:gz"
    )
    sources = collect([str(archive)])
    log = next(s for s in sources if s.name.endswith("vllm.log"))
    assert log.read_bytes() == serving + LOG
    assert log.read_bytes() == serving + LOG  # read again: a fresh stream, the same bytes
    small = next(s for s in sources if s.name.endswith("nvidia-smi-L.txt"))
    assert small.read_bytes() == NVIDIA_SMI_L


def test_a_tar_cut_short_is_corrupt(run_cli: RunCli, tmp_path: Path) -> None:
    whole = _tar(tmp_path / "whole.tar", [("vllm.log", LOG * 50)]).read_bytes()
    cut = tmp_path / "cut.tar"
    cut.write_bytes(whole[: len(whole) // 2])
    result = run_cli("triage", cut)
    assert result.exit_code == ExitCode.INPUT and "corrupt-archive" in result.stderr


def test_a_tar_on_stdin_is_read_as_a_bundle(run_cli: RunCli, tmp_path: Path) -> None:
    data = _tar(tmp_path / "b.tar.gz", [("run/vllm.log", LOG)], mode="w:gz").read_bytes()
    result = run_cli("triage", "-", "--format", "json", input=data)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["first_error"]["file"] == "<stdin>!run/vllm.log"


def test_a_gz_bomb_is_stopped_by_its_ratio_long_before_the_size_limit(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(readers, "RATIO_SLACK", 1024 * 1024)
    bomb = io.BytesIO()
    with gzip.GzipFile(fileobj=bomb, mode="wb", compresslevel=9) as inner:
        inner.write(LOG)
        for _ in range(16):
            inner.write(b"a" * (1024 * 1024))  # a run of one byte: about 1000 to 1
    archive = _tar(tmp_path / "bundle.tar", [("vllm.log.gz", bomb.getvalue())])
    result = run_cli("triage", archive)
    assert result.exit_code == ExitCode.INPUT
    assert "inflates more than 200 times its compressed size" in result.stderr
    assert "vllm.log.gz inflates" in result.stderr  # named as the user knows it
    assert run_cli("triage", archive, "--max-ratio", "5000").exit_code == 0


def test_nul_padding_in_a_rotated_gz_log_is_not_a_bomb(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """logrotate's copytruncate leaves the cut bytes as NULs: they compress like a bomb."""
    monkeypatch.setattr(readers, "RATIO_SLACK", 1024 * 1024)
    log = tmp_path / "vllm.log.1.gz"
    log.write_bytes(gzip.compress(b"\x00" * (16 * 1024 * 1024) + LOG, compresslevel=9))
    result = run_cli("triage", log, "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["first_error"]["line"] == 8


def test_a_zip_member_declaring_a_bomb_ratio_is_refused_at_listing(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archives, "RATIO_SLACK", 1024 * 1024)
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as out:
        out.writestr("vllm.log", LOG)
        out.writestr("big.log", b"b" * (8 * 1024 * 1024))
    result = run_cli("triage", archive)
    assert result.exit_code == ExitCode.INPUT and "big.log inflates more than 200 times" in result.stderr
