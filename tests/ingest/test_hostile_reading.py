"""Attacks on the reader: non-regular files, unbounded stdin, lines with no end.

Each input is built by the test; the limits are set low through the command-line options so the
attacks stay small and fast."""

from __future__ import annotations

import io
import json
import os
import random
import resource
import socket
import stat
import time
from pathlib import Path

import pytest
from hostile_inputs import LOG, RunCli, bundle, run_process

from vllm_triage.core.errors import ExitCode
from vllm_triage.ingest import readers
from vllm_triage.ingest.decode import iter_line_batches_cut, iter_line_chunks
from vllm_triage.ingest.limits import parse_size

READING_COMMANDS = ("triage", "fingerprint", "check", "report")


@pytest.mark.parametrize("command", READING_COMMANDS)
def test_a_fifo_given_as_a_path_is_refused_before_it_is_opened(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "vllm.log"
    os.mkfifo(fifo)  # no writer: opening it for reading the usual way would block forever
    done = run_process(command, fifo, timeout=60)
    assert done.returncode == ExitCode.INPUT
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and "not-a-regular-file" in lines[0] and "FIFO" in lines[0]


def test_diff_refuses_a_fifo_with_its_own_bad_input_code(tmp_path: Path) -> None:
    fifo = tmp_path / "run-b.log"
    os.mkfifo(fifo)
    good = tmp_path / "run-a.log"
    good.write_bytes(LOG)
    done = run_process("diff", good, fifo, timeout=60)
    assert done.returncode == 2  # diff and series: 2 for bad input, 0/3 carry the verdict
    assert "not-a-regular-file" in done.stderr.decode()


def test_a_device_behind_a_symlink_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "vllm.log"
    link.symlink_to("/dev/zero")
    done = run_process("triage", link, timeout=60)
    assert done.returncode == ExitCode.INPUT
    assert "character device" in done.stderr.decode()


def test_open_regular_checks_what_was_really_opened(tmp_path: Path) -> None:
    """The walk may see a file and the open a FIFO swapped in since: fstat on the descriptor."""
    fifo = tmp_path / "swapped"
    os.mkfifo(fifo)
    with pytest.raises(readers.InputError) as caught:
        readers.open_regular(str(fifo))
    assert caught.value.problem_id == "not-a-regular-file"


def test_a_fifo_and_a_socket_inside_a_folder_are_skipped_and_named(run_cli: RunCli, tmp_path: Path) -> None:
    folder = bundle(tmp_path / "run")
    os.mkfifo(folder / "nvidia-smi.txt")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "docker.sock"))
    try:
        result = run_cli("triage", folder, "--format", "json")
    finally:
        server.close()
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    skipped = {f["evidence"][0]["file"]: f["message"] for f in data["findings"] if f["id"] == "input-skipped"}
    assert "FIFO" in skipped[str(folder / "nvidia-smi.txt")]
    assert "socket" in skipped[str(folder / "docker.sock")]
    assert data["first_error"]["line"] == 8  # the log itself is still triaged


def test_stdin_over_the_limit_is_refused_by_size(run_cli: RunCli) -> None:
    result = run_cli("triage", "-", "--max-input", "4K", input=LOG * 100)
    assert result.exit_code == ExitCode.INPUT
    assert "input-too-large" in result.stderr and "<stdin> holds more than 4 KiB" in result.stderr


def test_stdin_of_nuls_only_is_empty_not_a_memory_error(run_cli: RunCli) -> None:
    result = run_cli("triage", "-", input=b"\x00" * (3 * 1024 * 1024))
    assert result.exit_code == ExitCode.INPUT
    assert "empty-input" in result.stderr


def test_nul_padding_on_stdin_is_dropped_and_lines_keep_their_numbers(run_cli: RunCli) -> None:
    result = run_cli("triage", "-", "--format", "json", input=b"\x00" * 200_000 + LOG)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["first_error"]["line"] == 8


def test_a_large_stdin_is_spooled_to_disk_and_read_again(
    run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(readers, "SPOOL_IN_MEMORY", 1024)  # spill to the temporary file at once
    serving = b"".join(
        b"(APIServer pid=7) INFO 01-02 03:05:00 [loggers.py:1] Avg prompt throughput: 0.0\n"
        for _ in range(200)
    )
    result = run_cli("triage", "-", "--format", "json", input=serving + LOG)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["first_error"]["line"] == 208


def test_an_over_long_line_is_cut_and_reported(run_cli: RunCli, tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    lines = LOG.splitlines(keepends=True)
    log.write_bytes(
        b"".join(lines[:3]) + b"INFO 01-02 03:04:21 [x.py:1] " + b"y" * 50_000 + b"\n" + b"".join(lines[3:])
    )
    result = run_cli("triage", log, "--format", "json", "--max-line", "1K")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    cut = [f for f in data["findings"] if f["id"] == "line-truncated"]
    assert len(cut) == 1 and "(line 4)" in cut[0]["message"] and "1 KiB" in cut[0]["message"]
    assert data["first_error"]["line"] == 9  # later lines keep their numbers


class _Stream(io.RawIOBase):
    """`size` bytes of `fill` produced on the fly: a huge input with no file behind it."""

    def __init__(self, size: int, fill: bytes = b"x") -> None:
        self.left, self.fill = size, fill

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        n = min(self.left, n if n >= 0 else self.left)
        self.left -= n
        return self.fill * n


def test_a_200_mb_line_without_newline_takes_seconds_and_flat_memory() -> None:
    """Re-copying the carried line for every 16 MB chunk was quadratic (2 GiB never ended)."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    batches = list(iter_line_batches_cut(_Stream(200 * 1024 * 1024), "utf-8", max_line=1024 * 1024))
    elapsed = time.monotonic() - started
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert [(len(s), s[0][:3], cuts) for s, cuts in batches] == [(1, "xxx", [0])]
    assert batches[0][0].str.len_bytes()[0] == 1024 * 1024
    assert elapsed < 20, elapsed
    assert grown_mib < 200, grown_mib  # one 16 MB block and the 1 MiB carry, not the line


@pytest.mark.parametrize("seed", range(12))
def test_cut_lines_are_the_same_whatever_the_chunk_size(seed: int) -> None:
    rng = random.Random(seed)
    lines = [
        "".join(rng.choice("ab é\t") for _ in range(rng.choice((0, 1, 5, 30, 90, 400)))) for _ in range(60)
    ]
    data = "\n".join(lines).encode() + (b"\n" if seed % 2 else b"")
    if not seed % 2 and not lines[-1]:
        lines.pop()  # "a\n" is one line: the empty piece after the last newline is no line
    limit = rng.choice((8, 25, 64))
    chunk = rng.choice((1, 3, 7, 64, 1000))
    got, cut_lines, offset = [], [], 0
    for series, cuts in iter_line_batches_cut(io.BytesIO(data), "utf-8", chunk_bytes=chunk, max_line=limit):
        got.extend(series.to_list())
        cut_lines.extend(offset + c for c in cuts)
        offset += len(series)
    expected = [ln.encode()[:limit].decode("utf-8", "replace") for ln in lines]
    # A multi-byte character cut in half becomes U+FFFD: compare what is left before it.
    assert [g.rstrip("\ufffd")[:limit] for g in got] == [e.rstrip("\ufffd")[:limit] for e in expected]
    assert cut_lines == [i for i, ln in enumerate(lines) if len(ln.encode()) > limit]


def test_sizes_on_the_command_line() -> None:
    assert parse_size("8G") == 8 * 1024**3
    assert parse_size("512MiB") == 512 * 1024**2
    assert parse_size("100k") == 100 * 1024
    assert parse_size("4096") == 4096
    with pytest.raises(ValueError):
        parse_size("lots")


def test_a_bad_size_is_a_usage_error(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("triage", tmp_path, "--max-input", "lots")
    assert result.exit_code == 2


def test_regular_files_only_even_for_the_kind_check() -> None:
    assert readers.file_kind(stat.S_IFREG | 0o644) is None
    assert readers.file_kind(stat.S_IFIFO) == "a FIFO (named pipe)"
    assert readers.file_kind(stat.S_IFSOCK) == "a socket"
    assert readers.file_kind(stat.S_IFBLK) == "a block device"


@pytest.mark.parametrize("seed", range(8))
def test_byte_chunks_end_at_lines_and_cut_endless_ones(seed: int) -> None:
    rng = random.Random(seed)
    lines = [b"z" * rng.choice((0, 3, 10, 70, 300)) for _ in range(40)]
    data = b"\n".join(lines) + b"\n"
    limit, chunk = rng.choice((8, 33)), rng.choice((1, 5, 16, 4096))
    chunks = list(iter_line_chunks(io.BytesIO(data), chunk_bytes=chunk, max_line=limit))
    assert all(c.endswith(b"\n") for c in chunks)
    got = b"".join(chunks).split(b"\n")[:-1]
    # Only a line still open at a block's end is cut; one inside a block is bounded by the block.
    assert len(got) == len(lines)
    assert all(
        g == ln or (len(g) >= min(limit, len(ln)) and ln.startswith(g))
        for g, ln in zip(got, lines, strict=True)
    )
    assert max(len(g) for g in got) <= max(limit, chunk)


@pytest.mark.parametrize("command", ["check", "report", "diff", "series"])
def test_stdin_is_bounded_for_the_bundle_commands(run_cli: RunCli, tmp_path: Path, command: str) -> None:
    good = tmp_path / "a.log"
    good.write_bytes(LOG)
    args = [command, good, "-"] if command in ("diff", "series") else [command, "-"]
    result = run_cli(*args, "--max-input", "4K", input=LOG * 100)
    assert result.exit_code == (2 if command in ("diff", "series") else ExitCode.INPUT), result.stderr
    assert "input-too-large" in result.stderr
