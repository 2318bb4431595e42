"""The report's leak scan reads the HTML as a reader sees it (tags stripped, entities decoded), so
a placeholder right before markup is never taken for a secret — and a secret in markup still is."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from vllm_triage.bundle.redact.redactor import Redactor
from vllm_triage.bundle.report.redact import html_text, leak_scan
from vllm_triage.cli import cli

HF = "hf_" + "Zq7Lm3Np9Rt2" * 3


def test_a_placeholder_before_a_closing_tag_is_not_a_leak() -> None:
    page = "<pre>VLLM_PORT=8000\nHF_TOKEN=&lt;redacted:hf-token:1&gt;</pre><p>next</p>"
    assert html_text(page) == "\nVLLM_PORT=8000\nHF_TOKEN=<redacted:hf-token:1>\n\nnext\n"
    assert leak_scan({}, page, "html", Redactor()) == []


def test_a_secret_in_markup_or_in_an_attribute_is_still_a_leak() -> None:
    for page in (
        f"<pre>HF_TOKEN={HF}</pre>",
        f"<p>token <code>{HF[:10]}</code>{HF[10:]}</p>".replace("</code>", ""),
        f'<a title="{HF}" href="#x">x</a>',
        f"<p>x</p><!-- HF_TOKEN={HF} -->",
        f"<td>api&#95;key: sk-proj-{'Ab3De6Gh9Jk2' * 3}</td>",
    ):
        assert [leak.kind for leak in leak_scan({}, page, "html", Redactor())], page


def test_a_bundle_whose_error_line_ends_with_a_token_gets_its_html_report(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "vllm.log").write_text(
        "INFO 10-20 08:14:02 [api_server.py:1] vLLM API server version 0.9.2\n"
        f"ERROR 10-20 08:14:05 [engine.py:1] ValueError: invalid token HF_TOKEN={HF}\n"
    )
    (bundle / "vllm.env").write_text(f"VLLM_PORT=8000\nHF_TOKEN={HF}")
    page = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["report", str(bundle), "--format", "html", "-o", str(page)])
    assert result.exit_code == 0, result.output
    written = page.read_text()
    assert HF not in written
    assert "HF_TOKEN=&lt;redacted:hf-token:1&gt;</pre>" in written
