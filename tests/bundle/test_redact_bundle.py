"""`vllm-triage redact BUNDLE --out DIR` on a bundle with secrets planted in every kind of file
(conftest.py): everything caught, the same placeholder everywhere, look-alikes untouched, the input
unchanged, the leak scan failing when something is left behind on purpose."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import tarfile
from pathlib import Path

from click.testing import CliRunner

from vllm_triage.cli import cli


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under root with the sha256 of its bytes and its mode: proof that nothing changed."""
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        + oct(path.stat().st_mode)
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def all_output(root: Path) -> str:
    return "\n".join(p.read_bytes().decode("latin-1") for p in sorted(root.rglob("*")) if p.is_file())


def redact(*args: str):
    return CliRunner().invoke(cli, ["redact", *args])


def test_every_planted_secret_is_replaced_and_the_input_is_untouched(planted, tmp_path: Path) -> None:
    before = tree_digest(planted.root)
    out = tmp_path / "out"
    result = redact(str(planted.root), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert tree_digest(planted.root) == before
    written = all_output(out)
    for label, secret in planted.secrets.items():
        assert secret not in written, f"{label} leaked"
    assert "leak scan: clean" in result.output
    # Same layout, plus the report.
    assert {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} == set(before) | {
        "redaction-report.json"
    }


def test_the_same_secret_gets_the_same_placeholder_in_every_file(planted, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert redact(str(planted.root), "--out", str(out)).exit_code == 0
    report = json.loads((out / "redaction-report.json").read_text())
    hf_places = {r["placeholder"] for r in report["redactions"] if r["kind"] == "hf-token"}
    assert hf_places == {"<redacted:hf-token:1>"}
    files_with_hf = {r["file"] for r in report["redactions"] if r["placeholder"] == "<redacted:hf-token:1>"}
    assert files_with_hf == {
        "env/vllm.env",
        "container/inspect.json",
        "container/collect_env.txt",
        "vllm.log",
        "k8s/deployment.yaml",
    }
    for name in files_with_hf:
        assert "<redacted:hf-token:1>" in (out / name).read_text()
    # The flag's key is one secret seen in three shapes (launch flag, the log's arg dump, the
    # inspect Cmd list, where it stands bare): one placeholder.
    launch_flag = re.search(r"--api-key (\S+)", (out / "launch.sh").read_text()).group(1)
    log_flag = re.search(r"'api_key': \['([^']+)'\]", (out / "vllm.log").read_text()).group(1)
    assert launch_flag == log_flag and launch_flag.startswith("<redacted:")
    assert f'"{launch_flag}"' in (out / "container/inspect.json").read_text()
    # The key sent in the curl is the one set in the env file.
    env_key = re.search(r'VLLM_API_KEY="([^"]+)"', (out / "env/vllm.env").read_text()).group(1)
    curl_key = re.search(r"Authorization: Bearer (\S+)\"", (out / "request.sh").read_text()).group(1)
    assert env_key == curl_key


def test_kinds_and_where_are_reported_never_the_secret(planted, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert redact(str(planted.root), "--out", str(out)).exit_code == 0
    text = (out / "redaction-report.json").read_text()
    report = json.loads(text)
    assert report["schema"] == "vllm-triage.redaction/1"
    for secret in planted.secrets.values():
        assert secret not in text
    kinds = {r["kind"] for r in report["redactions"]}
    assert {
        "hf-token",
        "openai-key",
        "aws-access-key",
        "github-token",
        "slack-token",
        "ngc-key",
        "jwt",
        "private-key",
        "url-password",
        "password",
        "auth-header",
    } <= kinds
    entry = next(
        r for r in report["redactions"] if r["file"] == "env/vllm.env" and r["kind"] == "aws-access-key"
    )
    assert entry["line"] == 4 and entry["placeholder"] == "<redacted:aws-access-key:1>"
    assert set(entry) == {"category", "kind", "rule", "file", "line", "placeholder"}
    blob = next(f for f in report["files"] if f["path"] == "blob.bin")
    assert blob["status"] == "binary-copied" and "review" in blob["note"]
    assert report["leak_scan"] == {"status": "pass", "leaks": []}
    assert report["summary"]["distinct_secrets"] == len(report["pseudonyms"])


def test_look_alikes_are_left_alone(planted, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert redact(str(planted.root), "--out", str(out)).exit_code == 0
    written = all_output(out)
    for kept in planted.keep:
        assert kept in written, f"{kept!r} was altered"
    assert (out / "blob.bin").read_bytes() == (planted.root / "blob.bin").read_bytes()
    # A file with nothing secret comes out byte for byte.
    (planted.root / "plain.txt").write_text("NCCL_DEBUG=INFO\r\nmax_tokens: 16\r\n")
    out2 = tmp_path / "out2"
    assert redact(str(planted.root), "--out", str(out2)).exit_code == 0
    assert (out2 / "plain.txt").read_bytes() == b"NCCL_DEBUG=INFO\r\nmax_tokens: 16\r\n"


def test_masks_are_optional_and_stable(planted, tmp_path: Path) -> None:
    out = tmp_path / "plain"
    assert redact(str(planted.root), "--out", str(out)).exit_code == 0
    assert "gpu-node-17" in all_output(out)
    masked = tmp_path / "masked"
    result = redact(str(planted.root), "--out", str(masked), "--mask-hosts", "--mask-ips", "--mask-users")
    assert result.exit_code == 0, result.output
    written = all_output(masked)
    for identifying in ("gpu-node-17", "10.0.3.17", "10.0.3.5", "/home/alice", "alice@", "proxy.corp"):
        assert identifying not in written, identifying
    host = "<masked:host:1>"
    assert f'node = "{host}"' in (masked / "bundle.toml").read_text()
    assert f"{host}:1234:1290 [0] NCCL INFO" in (masked / "vllm.log").read_text()
    assert f'"Hostname": "{host}"' in (masked / "container/inspect.json").read_text()
    ip = re.search(r"Using eth0:(<masked:ip:\d+>)", (masked / "vllm.log").read_text()).group(1)
    assert f"http://{ip}:8000" in (masked / "request.sh").read_text()
    assert "/home/<masked:user:1>" in (masked / "env/vllm.env").read_text()


def test_leak_scan_fails_when_a_rule_is_switched_off(planted, tmp_path: Path) -> None:
    # The JWT stands bare in the log: only its own rule finds it.
    out = tmp_path / "out"
    result = redact(str(planted.root), "--out", str(out), "--disable", "jwt")
    assert result.exit_code == 1
    assert "leak-scan-failed" in result.stderr
    assert "vllm.log:6: jwt (rule jwt)" in result.output
    report = json.loads((out / "redaction-report.json").read_text())
    assert report["leak_scan"]["status"] == "fail"
    assert {"file": "vllm.log", "line": 6, "rule": "jwt", "kind": "jwt"} in report["leak_scan"]["leaks"]
    assert planted.secrets["jwt"] not in (out / "redaction-report.json").read_text()


def test_leak_scan_catches_a_known_secret_inside_a_binary_file(planted, tmp_path: Path) -> None:
    (planted.root / "core.bin").write_bytes(
        b"\x00\x01\x02" * 100 + planted.secrets["k8s"].encode() + b"\x00" * 50
    )
    out = tmp_path / "out"
    result = redact(str(planted.root), "--out", str(out), "--format", "json")
    assert result.exit_code == 1
    leaks = json.loads(result.stdout)["leak_scan"]["leaks"]
    assert [leak["file"] for leak in leaks] == ["core.bin"] and leaks[0]["rule"] == "known-secret"
    dropped = tmp_path / "dropped"
    result = redact(str(planted.root), "--out", str(dropped), "--drop-binary")
    assert result.exit_code == 0, result.output
    assert not (dropped / "core.bin").exists()


def test_leak_scan_catches_a_stale_file_left_in_a_forced_out_dir(planted, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "old-notes.txt").write_text(f"export HF_TOKEN={planted.secrets['hf']}\n")
    assert redact(str(planted.root), "--out", str(out)).exit_code == 2  # not empty
    result = redact(str(planted.root), "--out", str(out), "--force")
    assert result.exit_code == 1
    assert "old-notes.txt:1" in result.output


def test_refuses_to_write_into_or_around_the_input(planted, tmp_path: Path) -> None:
    before = tree_digest(planted.root)
    inside = redact(str(planted.root), "--out", str(planted.root / "redacted"))
    assert inside.exit_code == 2 and "out-inside-input" in inside.stderr
    same = redact(str(planted.root), "--out", str(planted.root), "--force")
    assert same.exit_code == 2
    around = redact(str(planted.root), "--out", str(tmp_path), "--force")
    assert around.exit_code == 2 and "input-inside-out" in around.stderr
    assert tree_digest(planted.root) == before
    assert "Traceback" not in inside.output + inside.stderr


def test_bad_input_is_exit_4_with_one_line(tmp_path: Path) -> None:
    result = redact(str(tmp_path / "nope"), "--out", str(tmp_path / "out"))
    assert result.exit_code == 4
    assert result.stderr.count("\n") == 1 and "missing-path" in result.stderr
    assert not (tmp_path / "out").exists()


def test_an_archive_comes_out_as_a_folder_with_the_same_layout(planted, tmp_path: Path) -> None:
    archive = tmp_path / "bundle.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(planted.root, arcname="bundle")
        log = b"DEBUG 10-20 08:15:12 [hub.py:77] token " + planted.secrets["hf"].encode() + b"\n"
        data = gzip.compress(log)
        info = tarfile.TarInfo("bundle/old/vllm.log.gz")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        evil = tarfile.TarInfo("../escape.txt")
        evil.size = 3
        tar.addfile(evil, io.BytesIO(b"bad"))
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    out = tmp_path / "out"
    result = redact(str(archive), "--out", str(out), "--format", "json")
    assert result.exit_code == 0, result.output
    assert hashlib.sha256(archive.read_bytes()).hexdigest() == digest
    assert (out / "bundle/env/vllm.env").is_file()
    assert b"<redacted:hf-token:1>" in gzip.decompress((out / "bundle/old/vllm.log.gz").read_bytes())
    assert not (tmp_path / "escape.txt").exists()
    statuses = {f["path"]: f["status"] for f in json.loads(result.stdout)["files"]}
    assert statuses[f"{archive}!../escape.txt"] == "skipped-unsafe-path"


def test_a_redacted_bundle_is_still_a_bundle(planted, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert redact(str(planted.root), "--out", str(out)).exit_code == 0
    result = CliRunner().invoke(cli, ["triage", str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    roles = {Path(i["path"]).name: i["role"] for i in json.loads(result.stdout)["inputs"]}
    assert roles["vllm.log"] == "vllm_log" and roles["inspect.json"] == "container_inspect"
    assert roles["redaction-report.json"] != "vllm_log"
    # Redacting the redacted copy changes nothing more: placeholders are never read as secrets.
    again = tmp_path / "again"
    assert redact(str(out), "--out", str(again)).exit_code == 0
    assert (again / "env/vllm.env").read_text() == (out / "env/vllm.env").read_text()


def test_stdin_is_redacted_too(tmp_path: Path) -> None:
    hf = "hf_" + "Q" * 34
    result = CliRunner().invoke(cli, ["redact", "-", "--out", str(tmp_path / "o")], input=f"HF_TOKEN={hf}\n")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "o/stdin.txt").read_text() == "HF_TOKEN=<redacted:hf-token:1>\n"
