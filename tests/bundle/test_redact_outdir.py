"""Output folders are written inside and nowhere else: a symlink in --out is refused (exit 4, one
line) before anything is written, and the writer itself never follows one, even if one appears
after the check (bundle/outdir.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from vllm_triage.bundle.collect.run import Host
from vllm_triage.bundle.collect.scene import Request, collect
from vllm_triage.bundle.layout import UnsafeOutputError
from vllm_triage.bundle.outdir import SafeTree
from vllm_triage.cli import cli

HF = "hf_" + "Zq7Lm3Np9Rt2" * 3


def bundle(root: Path) -> Path:
    (root / "env").mkdir(parents=True)
    (root / "env/vllm.env").write_text(f"HF_TOKEN={HF}\n")
    (root / "vllm.log").write_text("INFO 10-20 08:14:02 [api_server.py:1] start\n")
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    "link",
    ["env", "redaction-report.json", "vllm.log", "deep/er/env"],
)
def test_redact_force_refuses_an_out_holding_a_symlink_and_writes_nothing_outside(
    tmp_path: Path, link: str
) -> None:
    source = bundle(tmp_path / "bundle")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine\n")
    out = tmp_path / "out"
    (out / link).parent.mkdir(parents=True, exist_ok=True)
    target = outside if link.endswith("env") else outside / "keep.txt"
    (out / link).symlink_to(target)
    before = snapshot(outside)
    result = CliRunner().invoke(cli, ["redact", str(source), "--out", str(out), "--force"])
    assert result.exit_code == 4, result.output
    lines = [line for line in result.output.splitlines() if line]
    assert lines == [
        f"vllm-triage: out-holds-symlink: --out {out} holds a symlink ({link}); nothing was written "
        "(use an empty or new folder)"
    ]
    assert snapshot(outside) == before
    assert not (out / "redaction-report.json").is_file() or (out / "redaction-report.json").is_symlink()


def test_collect_refuses_an_out_holding_a_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    out = tmp_path / "bundle"
    out.mkdir()
    (out / "host").symlink_to(outside)
    host = Host(environ={"PATH": str(tmp_path / "no-tools")}, hostname=lambda: "node")
    with pytest.raises(UnsafeOutputError, match="holds a symlink"):
        collect(Request(str(out), force=True), host)
    assert list(outside.iterdir()) == []


def test_collect_writes_its_bundle_when_out_is_clean(tmp_path: Path) -> None:
    host = Host(environ={"PATH": str(tmp_path / "no-tools"), "HF_TOKEN": HF}, hostname=lambda: "node")
    result = collect(Request(str(tmp_path / "bundle")), host)
    assert (result.root / "bundle.toml").is_file()
    assert f"HF_TOKEN={HF}" in (result.root / "environment.env").read_text()


def test_the_writer_never_follows_a_link_that_appears_after_the_check(tmp_path: Path) -> None:
    root = tmp_path / "out"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    tree = SafeTree(root)
    # A link where a file goes, and a link where a folder goes: both refused, nothing outside.
    (root / "report.json").symlink_to(outside / "report.json")
    with pytest.raises(UnsafeOutputError, match="not a regular file"):
        tree.write_bytes("report.json", b"x")
    (root / "env").symlink_to(outside)
    with pytest.raises(UnsafeOutputError, match="env is not a plain folder"):
        tree.write_bytes("env/vllm.env", b"x")
    assert list(outside.iterdir()) == []
    with pytest.raises(UnsafeOutputError, match="not a plain relative path"):
        tree.write_bytes("../escape.txt", b"x")
    assert not (tmp_path / "escape.txt").exists()


def test_the_writer_replaces_a_regular_file_and_creates_folders(tmp_path: Path) -> None:
    root = tmp_path / "out"
    (root / "a").mkdir(parents=True)
    (root / "a/old.txt").write_text("old\n")
    os.chmod(root / "a/old.txt", 0o444)  # replaced, not written through: its mode does not matter
    tree = SafeTree(root)
    tree.write_bytes("a/old.txt", b"new\n")
    tree.write_bytes("b/c/d.txt", b"deep\n")
    assert (root / "a/old.txt").read_text() == "new\n"
    assert (root / "b/c/d.txt").read_text() == "deep\n"
