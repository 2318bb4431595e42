"""Large files are redacted block by block: a key block or a two-line name/value pair cut by a
block boundary is still caught, line numbers stay right, encodings and line endings survive.
(tests/bundle/test_redact_stream.py attacks the boundaries further.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vllm_triage.bundle.redact import bundle_copy as redact_copy
from vllm_triage.bundle.redact.bundle_copy import redact_bundle
from vllm_triage.cli import cli

KEY_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" * 2
HF = "hf_" + "Mn4Bv6Cx8Za1" * 3


def _text() -> str:
    filler = "".join(f"INFO 10-20 08:14:{i % 60:02d} [x.py:1] line {i}\n" for i in range(40))
    return (
        filler
        + "-----BEGIN RSA PRIVATE KEY-----\n"
        + "\n".join([KEY_BODY] * 6)
        + "\n-----END RSA PRIVATE KEY-----\n"
        + filler
        + "  - name: HF_TOKEN\n    value: "
        + HF
        + "\n"
        + filler
    )


def test_blocks_never_cut_a_key_or_a_pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redact_copy, "READ_CHUNK", 97)  # a boundary every line or two
    text = _text()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "k8s.yaml").write_text(text)
    result = redact_bundle(str(tmp_path / "in"), str(tmp_path / "out"))
    out = (tmp_path / "out" / "k8s.yaml").read_text()
    assert KEY_BODY not in out and HF not in out
    assert out.count("\n") == text.count("\n") - 7  # the key's 8 lines became one placeholder
    lines = {r.kind: r.line for r in result.redactor.redactions}
    assert lines == {"private-key": 41, "hf-token": 90}
    assert result.clean


def test_utf16_and_crlf_inputs(tmp_path: Path) -> None:
    bundle = tmp_path / "in"
    bundle.mkdir()
    (bundle / "env.txt").write_bytes(("\ufeffHF_TOKEN=" + HF + "\r\nNCCL_DEBUG=INFO\r\n").encode("utf-16-le"))
    (bundle / "crlf.env").write_bytes(b"VLLM_API_KEY=abc-123-def\r\nX=1\r\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["redact", str(bundle), "--out", str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert (out / "env.txt").read_bytes() == b"HF_TOKEN=<redacted:hf-token:1>\r\nNCCL_DEBUG=INFO\r\n"
    assert (out / "crlf.env").read_bytes() == b"VLLM_API_KEY=<redacted:key:1>\r\nX=1\r\n"
    notes = {f["path"]: f.get("note", "") for f in json.loads(result.stdout)["files"]}
    assert notes["env.txt"] == "re-encoded from utf-16 to UTF-8"
