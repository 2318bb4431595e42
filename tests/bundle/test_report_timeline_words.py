"""The HTML timeline read as a person reads it: whole labels inside the picture, lanes told apart,
a phase shown passed only on evidence, and "served" only for a run that served."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from checklist_bundles import Bundle, write_bundle
from click.testing import CliRunner

from vllm_triage.cli import cli
from vllm_triage.engine.rules import load
from vllm_triage.render.timeline import (
    ERROR_LABEL_SIZE,
    LABEL_WIDTH,
    LANE_LABEL_SIZE,
    WIDTH,
    bands,
    distinct_labels,
    lane,
    milestone_phases,
    text_width,
)


def _run(label: str, phase: str = "none", ready: bool = True, requests: int | None = 0, **kw) -> dict:
    milestones = kw.pop("milestones", ["platform", "version", "args", "engine_banner", "ready"])
    return {
        "label": label,
        "number": kw.pop("number", 1),
        "phase": phase,
        "ready": ready,
        "requests": requests,
        "milestones": [{"marker": m, "where": f"vllm.log:{i}"} for i, m in enumerate(milestones, 1)],
        "first_error": kw.pop("first_error", None),
    }


@pytest.fixture(scope="module")
def all_bands():
    built_in = [{"marker": m, "phase": p} for m, p in load().milestone_phases()]
    order, phase_of = milestone_phases(built_in)
    return bands(order, phase_of)


def test_lanes_with_a_long_common_start_are_told_apart() -> None:
    labels = [
        "llama-3.1-70b tp2 on h100 node gpu-node-17",
        "llama-3.1-70b tp2 on h100 node gpu-node-18",
        "llama-3.1-70b tp2 on h100 node gpu-node-19, prefix caching on",
    ]
    room = LABEL_WIDTH - 14 - text_width("T00 ", LANE_LABEL_SIZE, True)
    shown = distinct_labels(labels, room, LANE_LABEL_SIZE)
    assert len(set(shown)) == 3
    assert all(text_width(s, LANE_LABEL_SIZE, True) <= room for s in shown)
    assert distinct_labels(["t1 base", "t2 fp8"], room, LANE_LABEL_SIZE) == ["t1 base", "t2 fp8"]


@pytest.mark.parametrize(
    "category", ["max_seq_len_exceeds_kv_cache", "illegal_memory_access_after_cuda_graph_capture"]
)
@pytest.mark.parametrize("phase", ["config", "weight_load", "engine_reserve", "request"])
def test_the_error_label_stays_inside_the_picture(all_bands, phase: str, category: str) -> None:
    fe = {
        "kind": "root",
        "category": category,
        "where": "logs/engine-core-rank-0.log:1234",
        "timestamp": "11-04 15:23:28",
    }
    geometry = lane(_run("t", phase=phase, ready=phase == "request", first_error=fe), 0, all_bands)
    error = geometry["error"]
    size = text_width(error["label_shown"], ERROR_LABEL_SIZE, True)
    if error["anchor"] == "start":
        left, right = error["label_x"], error["label_x"] + size
    else:
        left, right = error["label_x"] - size, error["label_x"]
    assert left >= LABEL_WIDTH and right <= WIDTH, (left, right, error)
    if size < 300:  # there was room: the label is whole
        assert error["label_shown"] == f"first error: {category}"


def test_a_phase_with_no_milestone_reached_is_not_shown_passed(all_bands) -> None:
    states = {b["phase"]: b["state"] for b in lane(_run("t"), 0, all_bands)["bands"]}
    assert states["container"] == "unseen"  # no container evidence in a log
    assert states["config"] == "passed"


def test_ready_with_no_request_is_not_called_served(all_bands) -> None:
    assert lane(_run("t", requests=0), 0, all_bands)["status"] == "ready, no request"
    assert lane(_run("t", requests=12), 0, all_bands)["status"] == "ready, served 12 requests"


def test_the_html_says_no_request_for_a_run_that_served_none(tmp_path: Path) -> None:
    folder = write_bundle(tmp_path, Bundle())
    target = tmp_path / "r.html"
    result = CliRunner().invoke(cli, ["report", "--format", "html", "-o", str(target), str(folder)])
    assert result.exit_code == 0, result.output
    html = target.read_text()
    assert "ready, served</span>" not in html
    lane_status = re.findall(r'class="lane-status"[^>]*>([^<]*)<', html)
    assert lane_status and all("served" not in s or re.search(r"served \d", s) for s in lane_status)


def test_each_run_card_reads_like_the_triage(tmp_path: Path) -> None:
    """The verdict in words, the fix under it, findings most severe first, the block's prefix once."""
    samples = Path(__file__).resolve().parents[2] / "samples"
    target = tmp_path / "r.html"
    bundle = str(samples / "driver-too-old-cu130")
    assert CliRunner().invoke(cli, ["report", "--format", "html", "-o", str(target), bundle]).exit_code == 0
    page = target.read_text()
    card = page[page.index('<section class="card') :]
    assert card.index('class="verdict"><strong>failed in cuda_init: the image/wheel was built') < card.index(
        'class="fix"><strong>Fix:</strong> Match driver and build'
    )
    severities = re.findall(r'class="sev-(error|warning|info)"', card)
    rank = {"error": 0, "warning": 1, "info": 2}
    assert severities and [rank[s] for s in severities] == sorted(rank[s] for s in severities)
    kv = tmp_path / "kv.html"
    kv_bundle = str(samples / "kv-cache-too-small")
    assert CliRunner().invoke(cli, ["report", "--format", "html", "-o", str(kv), kv_bundle]).exit_code == 0
    block = re.search(r'<pre class="error">(.*?)</pre>', kv.read_text(), re.S).group(1)
    assert block.count("EngineCore_DP0 pid=263 ERROR") == 1
    assert "(EngineCore_DP0 pid=263) ERROR" not in block
