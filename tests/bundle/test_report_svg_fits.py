"""The HTML timeline laid out by a real browser: every label's box, as Chromium measures it with
its fonts at 1400 px, is inside the picture; lane labels stay in their column and the error labels
clear of it. Runs on three samples given long labels that share a start."""

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
  const shown = [...t.childNodes].filter(n => n.nodeType === 3).map(n => n.data).join('');
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
    names = [t["text"] for t in lane_labels if t["cls"] == "lane-label"]
    assert len(set(names)) == 3  # three runs, three different labels
    error_labels = [t for t in texts if t["cls"] == "halo"]
    assert error_labels and all(t["left"] >= LABEL_WIDTH for t in error_labels), error_labels
    assert any(t["text"] == "first error: max_seq_len_exceeds_kv_cache" for t in error_labels)
