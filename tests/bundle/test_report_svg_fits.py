"""The HTML timeline laid out by a real browser: every label's box, as Chromium measures it with
its fonts at 1400 px, is inside the picture; lane labels are shown whole and stay in their column,
the error labels clear of it. Runs on three samples given long labels that share a start."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from vllm_triage.cli import cli
from vllm_triage.render.timeline import LABEL_WIDTH

CHROMIUM = next((p for p in (shutil.which("chromium"), "/usr/bin/chromium") if p and Path(p).exists()), None)
SAMPLES = Path(__file__).resolve().parents[2] / "samples"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--window-size=1400,1400",
]
# Measures every <text> after layout and writes the boxes into the page for --dump-dom to print.
MEASURE = """
<script>
const svg = document.getElementById('timeline');
const texts = [];
for (const t of svg.querySelectorAll('text')) {
  if (t.getAttribute('transform')) continue;  // the slanted milestone names above the lanes
  const b = t.getBBox();
  // What is drawn: the text and its second line (tspan), not the tooltip (title).
  const shown = [...t.childNodes].filter(n => n.nodeName !== 'title').map(n => n.textContent).join(' ');
  texts.push({text: shown, cls: t.getAttribute('class') || '', left: b.x, right: b.x + b.width});
}
document.getElementById('measured').textContent = JSON.stringify({width: svg.viewBox.baseVal.width, texts});
</script>
"""


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install -y chromium)")
def test_every_timeline_label_fits_its_box(tmp_path: Path) -> None:
    bundles = []
    for i, name in enumerate(("healthy-v0", "kv-cache-too-small", "request-illegal-access"), 17):
        copy = tmp_path / name
        shutil.copytree(SAMPLES / name, copy)
        manifest = copy / "bundle.toml"
        text = re.sub(
            r'label = "[^"]*"', f'label = "llama-3.1-70b tp2 on h100 node gpu-node-{i}"', manifest.read_text()
        )
        manifest.write_text(text)
        bundles.append(str(copy))
    report = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["report", "--format", "html", "-o", str(report), *bundles])
    assert result.exit_code == 0, result.output
    page = report.read_text()
    style = re.search(r"<style>.*?</style>", page, re.S).group(0)
    svg = re.search(r'<svg id="timeline".*?</svg>', page, re.S).group(0)
    probe = tmp_path / "probe.html"
    probe.write_text(
        f"<!DOCTYPE html><html><head>{style}</head><body>{svg}<pre "
        f"id='measured'></pre>{MEASURE}</body></html>"
    )
    run = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", probe.as_uri()],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    measured = json.loads(
        html.unescape(re.search(r"<pre id=\"measured\">(.*?)</pre>", run.stdout, re.S).group(1))
    )
    width, texts = measured["width"], measured["texts"]
    assert len(texts) > 10
    outside = [t for t in texts if t["left"] < 0 or t["right"] > width]
    assert outside == []
    lane_labels = [t for t in texts if t["cls"] in ("lane-label", "lane-status")]
    assert len(lane_labels) == 6
    assert all(t["right"] <= LABEL_WIDTH - 4 for t in lane_labels), lane_labels
    names = [" ".join(t["text"].split()) for t in lane_labels if t["cls"] == "lane-label"]
    # Each label whole (on two lines where one is too short), never cut to look like another.
    assert names == [
        f"T{n} llama-3.1-70b tp2 on h100 node gpu-node-{i}" for n, i in ((1, 17), (2, 18), (3, 19))
    ]
    error_labels = [t for t in texts if t["cls"] == "halo"]
    assert error_labels and all(t["left"] >= LABEL_WIDTH for t in error_labels), error_labels
    assert any(t["text"] == "first error: max_seq_len_exceeds_kv_cache" for t in error_labels)


# Measures every block of text in the run cards: how wide its content is against the box it has.
MEASURE_CARDS = """
<script>
const boxes = [];
for (const el of document.querySelectorAll('.card pre, .card table, .card')) {
  boxes.push({tag: el.tagName, cls: el.className, scroll: el.scrollWidth, client: el.clientWidth,
              start: (el.textContent || '').trim().slice(0, 60)});
}
document.getElementById('measured').textContent = JSON.stringify(boxes);
</script>
"""


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install -y chromium)")
def test_run_cards_show_their_text_whole_at_1400_px(tmp_path: Path) -> None:
    """Three runs side by side, each card a third of the page: no command, error block or table
    runs past its box (hidden behind a scroll bar, as a screenshot would cut it)."""
    bundles = [str(SAMPLES / n) for n in ("healthy-v0", "kv-cache-too-small", "request-illegal-access")]
    report = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["report", "--format", "html", "-o", str(report), *bundles])
    assert result.exit_code == 0, result.output
    page = report.read_text()
    # Python's ^^^^ marker lines point at nothing once wrapped: the cards leave them out (the
    # Markdown for the issue keeps the log as it was).
    errors = "".join(re.findall(r'<pre class="error">(.*?)</pre>', page, re.S))
    assert "Traceback (most recent call last):" in errors
    assert not re.search(r"^│\s*[\^~]+\s*$", errors, re.M)
    bug = CliRunner().invoke(cli, ["report", "--field", "bug", bundles[2]]).stdout
    assert re.search(r"^\(Worker_TP1 pid=2962\) ERROR .*\]\s+\^+$", bug, re.M)
    # The report's policy forbids scripts; the probe is the same page without it, plus the measure.
    probe_text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    probe_text = probe_text.replace("</body>", f"<pre id='measured'></pre>{MEASURE_CARDS}</body>")
    probe = tmp_path / "probe.html"
    probe.write_text(probe_text)
    run = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", probe.as_uri()],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    boxes = json.loads(
        html.unescape(re.search(r"<pre id=\"measured\">(.*?)</pre>", run.stdout, re.S).group(1))
    )
    assert len([b for b in boxes if b["tag"] == "PRE"]) >= 6  # commands and error blocks of three runs
    overflowing = [b for b in boxes if b["scroll"] > b["client"] + 1]
    assert overflowing == []
