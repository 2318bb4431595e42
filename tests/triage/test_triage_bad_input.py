"""Bad input gives one clear line on stderr and exit 4 (documented in --help), never a traceback;
and nothing is ever written into the input."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import random
import shutil
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from vllm_triage.core.errors import ExitCode

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
SAMPLES = Path(__file__).resolve().parents[2] / "samples"
NVIDIA_SMI = SAMPLES / "kv-cache-too-small" / "nvidia-smi-host.txt"
RunCli = Callable[..., Result]


def _random_bytes(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


def _big_log() -> bytes:
    """Large enough that its gzip is longer than the 64 KB sniff window."""
    rng = random.Random(7)
    lines = (LOGS / "v1-0.10.1-tp2-runtime-illegal-access.log").read_text().splitlines()
    ready = next(i for i, line in enumerate(lines) if "Application startup complete" in line)
    serving = [
        f"(APIServer pid=1) INFO:     10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(256)}:"
        f'{rng.randrange(1024, 65535)} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
        for _ in range(40_000)
    ]
    return ("\n".join(lines[: ready + 1] + serving + lines[ready + 1 :]) + "\n").encode()


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _tgz(tmp_path: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(SAMPLES / "kv-cache-too-small", arcname="kv-cache-too-small")
    return buffer.getvalue()


def _tar() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(SAMPLES / "kv-cache-too-small", arcname="kv-cache-too-small")
    return buffer.getvalue()


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in sorted((SAMPLES / "request-illegal-access").iterdir()):
            zf.write(path, f"request-illegal-access/{path.name}")
    return buffer.getvalue()


def _zip_with_bad_crc() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("bundle/vllm.log", (LOGS / "v1-0.9.2-tp4-worker-nccl.log").read_bytes())
    data = bytearray(buffer.getvalue())
    at = data.find(b"RuntimeError: NCCL error")
    data[at : at + 12] = b"XXXXXXXXXXXX"  # stored data no longer matches its CRC
    return bytes(data)


# name → (file name, bytes, problem id expected in the message)
BAD_FILES: dict[str, tuple[str, Callable[[Path], bytes], str]] = {
    "empty file": ("vllm.log", lambda _: b"", "empty-input"),
    "only blank lines": ("vllm.log", lambda _: b"\n\r\n   \n\t\n", "empty-input"),
    "only NULs": ("vllm.log", lambda _: b"\x00" * 200_000, "empty-input"),
    "random bytes": ("core.bin", lambda _: _random_bytes(20_000, 1), "binary-input"),
    "a PNG screenshot of the log": (
        "screenshot.png",
        lambda _: b"\x89PNG\r\n\x1a\n" + _random_bytes(9000, 2),
        "binary-input",
    ),
    "an ELF binary": (
        "vllm",
        lambda _: b"\x7fELF\x02\x01\x01" + b"\x00" * 9 + b"\x02\x00\x3e\x00" + _random_bytes(8000, 3),
        "binary-input",
    ),
    "a CSV of numbers": (
        "metrics.csv",
        lambda _: (
            b"step,loss,lr,tokens_per_s\n"
            + b"".join(b"%d,%.4f,0.0001,%d\n" % (i, 2.5 - i / 900, 5100 + i % 37) for i in range(400))
        ),
        "not-a-log",
    ),
    "nvidia-smi output": ("nvidia-smi.txt", lambda _: NVIDIA_SMI.read_bytes(), "not-a-log"),
    "a .tar.gz that is not gzip": (
        "bundle.tar.gz",
        lambda _: b"this was supposed to be an archive\n",
        "corrupt-archive",
    ),
    "a truncated .tgz": ("bundle.tgz", lambda p: _tgz(p)[:1500], "corrupt-archive"),
    "a truncated .tar": ("bundle.tar", lambda _: _tar()[:9000], "corrupt-archive"),
    "a truncated .zip": ("bundle.zip", lambda _: _zip()[:3000], "corrupt-archive"),
    "a truncated small .gz log": (
        "vllm.log.gz",
        lambda _: gzip.compress((LOGS / "v1-0.9.2-tp4-worker-nccl.log").read_bytes())[:900],
        "corrupt-archive",
    ),
    "a truncated large .gz log": (
        "vllm.log.gz",
        lambda _: gzip.compress(_big_log())[:-4000],
        "corrupt-archive",
    ),
    "a zip that is not a zip": ("bundle.zip", lambda _: b"PK\x03\x04" + b"garbage" * 20, "corrupt-archive"),
    "a zip member with a bad CRC": ("bundle.zip", lambda _: _zip_with_bad_crc(), "corrupt-archive"),
}


def _assert_one_clean_line(result: Result, problem: str) -> None:
    assert result.exit_code == ExitCode.INPUT, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"vllm-triage: {problem}: ")
    assert "Traceback" not in result.output


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_file(case: str, fmt: str, tmp_path: Path, run_cli: RunCli) -> None:
    name, make, problem = BAD_FILES[case]
    given = _write(tmp_path / name, make(tmp_path))
    result = run_cli("triage", str(given), "--format", fmt)
    _assert_one_clean_line(result, problem)
    assert str(given) in result.stderr


def test_missing_path(tmp_path: Path, run_cli: RunCli) -> None:
    result = run_cli("triage", str(tmp_path / "no-such-vllm.log"))
    _assert_one_clean_line(result, "missing-path")


def test_one_missing_path_among_good_ones(tmp_path: Path, run_cli: RunCli) -> None:
    result = run_cli("triage", str(LOGS / "v1-0.9.2-tp4-worker-nccl.log"), str(tmp_path / "worker-3.log"))
    _assert_one_clean_line(result, "missing-path")


def test_empty_folder(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "bundle").mkdir()
    _assert_one_clean_line(run_cli("triage", str(tmp_path / "bundle")), "empty-bundle")


def test_a_bundle_without_a_log(tmp_path: Path, run_cli: RunCli) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    shutil.copy(NVIDIA_SMI, bundle / "nvidia-smi-host.txt")
    shutil.copy(SAMPLES / "kv-cache-too-small" / "command.sh", bundle / "command.sh")
    _assert_one_clean_line(run_cli("triage", str(bundle)), "no-log-in-bundle")


def test_a_manifest_that_does_not_parse(tmp_path: Path, run_cli: RunCli) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(SAMPLES / "kv-cache-too-small", bundle)
    (bundle / "bundle.toml").write_text('[run]\nlabel = "unterminated\n')
    _assert_one_clean_line(run_cli("triage", str(bundle)), "bad-manifest")


@pytest.mark.parametrize(
    ("stdin", "problem"),
    [
        (b"", "empty-input"),
        (_random_bytes(5000, 9), "binary-input"),
        # `tar cf - bundle | head -c 9000 | vllm-triage triage -`: must not be read as a log
        (_tar()[:9000], "corrupt-archive"),
        (gzip.compress(_tar())[:2000], "corrupt-archive"),
        (_zip()[:3000], "corrupt-archive"),
        (_zip_with_bad_crc(), "corrupt-archive"),
    ],
    ids=["empty", "binary", "truncated-tar", "truncated-tar-gz", "truncated-zip", "zip-bad-crc"],
)
def test_bad_stdin(stdin: bytes, problem: str, run_cli: RunCli) -> None:
    _assert_one_clean_line(run_cli("triage", "-", input=stdin), problem)


@pytest.mark.parametrize("make", [_tar, _zip], ids=["tar", "zip"])
def test_a_whole_archive_on_stdin_is_a_bundle(make: Callable[[], bytes], run_cli: RunCli) -> None:
    result = run_cli("triage", "-", "--format", "json", input=make())
    assert result.exit_code == 0, result.stderr
    assert "<stdin>!" in result.stdout


def test_usage_errors_exit_2_without_traceback(run_cli: RunCli) -> None:
    for args in (["triage"], ["triage", str(LOGS / "only-consequences-paste.txt"), "--format", "yaml"]):
        result = run_cli(*args)
        assert result.exit_code == 2
        assert "Traceback" not in result.output


def test_exit_codes_are_documented(run_cli: RunCli) -> None:
    text = run_cli("triage", "--help").stdout
    assert "4 bad input" in " ".join(text.split())


# --------------------------------------------------------------------------------------------
# Inputs are read-only: nothing written, nothing touched, nothing extracted next to them.


def _snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    out = {}
    for path in sorted(root.rglob("*")):
        stat = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        out[str(path.relative_to(root))] = (stat.st_mtime_ns, stat.st_size, digest)
    return out


def test_inputs_are_never_modified(tmp_path: Path, run_cli: RunCli) -> None:
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    folder = inputs / "kv-cache-too-small"
    shutil.copytree(SAMPLES / "kv-cache-too-small", folder)
    (inputs / "bundle.tgz").write_bytes(_tgz(tmp_path))
    with zipfile.ZipFile(inputs / "bundle.zip", "w") as zf:
        zf.write(LOGS / "v1-0.9.2-tp4-worker-nccl.log", "run/vllm.log")
    _write(inputs / "vllm.log.gz", gzip.compress((LOGS / "v0-0.6.3-mq-tp2-safetensors.log").read_bytes()))
    shutil.copy(LOGS / "v1-0.10.2-hang-in-weight-load.log", inputs / "hang.log")
    # Old timestamps make any touch visible.
    for path in inputs.rglob("*"):
        os.utime(path, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    os.utime(inputs, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    before = _snapshot(inputs)
    inputs_mtime = inputs.stat().st_mtime_ns

    runs = [("kv-cache-too-small", fmt) for fmt in ("text", "json", "md")]
    runs += [(target, "json") for target in ("bundle.tgz", "bundle.zip", "vllm.log.gz", "hang.log")]
    for target, fmt in runs:
        result = run_cli("triage", str(inputs / target), "--format", fmt)
        assert result.exit_code == 0, (target, fmt, result.stderr)

    assert _snapshot(inputs) == before
    assert inputs.stat().st_mtime_ns == inputs_mtime  # no file created and removed either
