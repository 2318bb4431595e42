"""Large files are redacted block by block: a key block or a two-line name/value pair cut by a
block boundary is still caught, line numbers stay right, encodings and line endings survive."""

from __future__ import annotations

import io
import json
from pathlib import Path

from click.testing import CliRunner

from vllm_triage.bundle.redact import Redactor
from vllm_triage.bundle.textio import iter_blocks
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


def test_blocks_cover_the_text_and_never_cut_a_key_or_a_pair() -> None:
    text = _text()
    blocks = list(iter_blocks(io.BytesIO(text.encode()), "utf-8", chunk_bytes=97))
    assert "".join(block for block, _ in blocks) == text
    line = 1
    for block, first in blocks:
        assert first == line
        line += block.count("\n")
        assert block.count("-----BEGIN") == block.count("-----END")
        assert not block.rstrip("\n").endswith("- name: HF_TOKEN")
    redactor = Redactor()
    for block, _ in blocks:
        redactor.learn(block)
    out = "".join(redactor.redact(block, "f", first) for block, first in blocks)
    assert KEY_BODY not in out and HF not in out
    lines = {r.kind: r.line for r in redactor.redactions}
    assert lines == {"private-key": 41, "hf-token": 90}


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
