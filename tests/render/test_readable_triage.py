"""The triage text read as a person reads it: the verdict in words on line 1, the fix under it,
findings most severe first, the block's prefix once, every line within the width."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from vllm_triage.cli import cli

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
FAILING = ("driver-too-old-cu130", "kv-cache-too-small", "request-illegal-access")


def invoke(*args: str, input: str | None = None) -> Result:  # noqa: A002 - click's name
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def columns(line: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


def words(text: str) -> str:
    """The text with its wrapping undone (line breaks and indentation are layout, not words)."""
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()))
@pytest.mark.parametrize("width", [100, 80])
def test_every_sample_fits_the_width(sample: str, width: int) -> None:
    out = invoke("triage", str(SAMPLES / sample), "--width", str(width)).stdout
    too_wide = [line for line in out.splitlines() if columns(line) > width]
    assert too_wide == []


def test_piped_output_is_80_columns_unless_told() -> None:
    out = invoke("triage", str(SAMPLES / "request-illegal-access")).stdout
    assert max(columns(line) for line in out.splitlines()) <= 80
    wide = invoke("triage", str(SAMPLES / "request-illegal-access"), "--width", "200").stdout
    assert max(columns(line) for line in wide.splitlines()) > 100


@pytest.mark.parametrize("sample", FAILING)
def test_the_decisive_fix_is_in_the_first_five_lines(sample: str) -> None:
    data = json.loads(invoke("triage", str(SAMPLES / sample), "--format", "json").stdout)
    lines = invoke("triage", str(SAMPLES / sample), "--width", "100").stdout.splitlines()
    assert lines[0].startswith(f"failed in {data['phase']}: ")
    fix_at = next(i for i, line in enumerate(lines) if line.strip().startswith("fix: "))
    assert fix_at < 5
    advice = data["first_error"]["advice"]
    assert words(" ".join(lines[fix_at:])).startswith(f" fix: {words(advice)}")


def test_the_headline_says_the_cause_in_words() -> None:
    first = invoke("triage", str(SAMPLES / "kv-cache-too-small")).stdout.splitlines()[0]
    assert first.startswith("failed in engine_reserve: the KV cache that fits in memory cannot hold")


def test_a_healthy_run_is_not_headed_phase_none() -> None:
    out = invoke("triage", str(SAMPLES / "healthy-v0")).stdout
    first = out.splitlines()[0]
    # The sample answered one request with 200 and one with 400: two requests seen, one refused.
    assert first == "no failure: ready and served 2 requests (1 answered with an error status)"
    assert "phase: none" not in out and "phase none" not in out


def test_findings_come_most_severe_first() -> None:
    out = invoke("triage", str(SAMPLES / "driver-too-old-cu130"), "--width", "100").stdout
    labels = re.findall(r"^  (ERROR|WARNING|INFO) ", out, flags=re.MULTILINE)
    rank = {"ERROR": 0, "WARNING": 1, "INFO": 2}
    assert labels[0] == "ERROR"
    assert [rank[x] for x in labels] == sorted(rank[x] for x in labels)
    # The image/driver mismatch, fifth in the analysis's own order, is now the first finding.
    assert out.index("ERROR   driver-too-old-for-cuda") < out.index("INFO    next-step")


def test_the_block_shows_its_prefix_once() -> None:
    out = invoke("triage", str(SAMPLES / "kv-cache-too-small")).stdout
    block = out[out.index("block  lines 58-74") : out.index("known issue")]
    assert block.count("EngineCore_DP0 pid=263 ERROR 11-04 15:23:28 [core.py:718]") == 1
    assert "(EngineCore_DP0 pid=263) ERROR" not in block  # the raw prefix is not repeated per line
    assert "│ Traceback (most recent call last):" in block
    assert '│   File "…/vllm/v1/engine/core.py", line 709, in run_engine_core' in block


def test_a_partial_paste_does_not_claim_platform_is_missing() -> None:
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/model_executor/model_loader/loader.py", line 91\n'
        "    raise KeyError(name)\n"
        "KeyError: 'model.layers.0.mlp.experts.w2_weight_scale'\n"
    )
    out = invoke("triage", "-", input=paste).stdout
    assert "platform" not in out
    assert "no start-up milestone in the input" in out
    assert out.startswith("failed in ")


def test_markdown_items_do_not_run_into_one_paragraph() -> None:
    """GitHub joins consecutive plain lines: outside fences every line is a heading, a list item,
    a <details> tag, or stands alone between blank lines."""
    md = invoke("triage", str(SAMPLES / "kv-cache-too-small"), "--format", "md").stdout
    fenced = False
    previous = ""
    for line in md.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            previous = ""
            continue
        if fenced or not line.strip():
            previous = "" if not fenced else previous
            continue
        structural = line.startswith(("#", "- ", "<"))
        if previous and not structural:
            pytest.fail(f"{line!r} runs into {previous!r}")
        previous = "" if structural else line
    # The same order as the text: verdict, fix, then the first error, then findings.
    assert md.index("failed in engine_reserve") < md.index("**Fix:**") < md.index("**First error**")
    assert md.index("**First error**") < md.index("**Findings:**")


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()))
def test_fingerprint_text_fits_and_says_the_folder_once(sample: str) -> None:
    out = invoke("fingerprint", str(SAMPLES / sample)).stdout
    lines = out.splitlines()
    assert max(columns(line) for line in lines) <= 80
    assert lines[0].startswith(("findings (", "no findings"))
    assert f"inputs in {SAMPLES / sample}/" in out
    inputs = [line for line in lines if line.startswith("input  ")]
    assert inputs and not any(str(SAMPLES) in line for line in inputs)  # said once, then relative
    host = lines[lines.index("host") + 1 : lines.index("host") + 4] if "host" in lines else []
    assert not any(str(SAMPLES) in line for line in host)
