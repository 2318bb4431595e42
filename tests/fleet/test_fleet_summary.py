"""fleet: the summary of a scanned directory, as data and through the CLI (text, JSON, Markdown)."""

from __future__ import annotations

import io
import json
import sys
from datetime import datetime, timezone

import pytest
from click.testing import CliRunner
from fleet_factory import FLEET_SIZE, LATE, LATE_RUNS, START

from vllm_triage.cli import cli
from vllm_triage.fleet.summary import parse_since, summarise
from vllm_triage.render.fleet_text import render


def test_totals_and_signatures(scanned_fleet):
    summary = summarise(str(scanned_fleet.out))
    totals = summary["totals"]
    assert totals["runs"] == FLEET_SIZE + 1
    assert totals["unreadable"] == 1
    assert totals["ok"] + totals["failed"] + totals["hang"] + totals["unreadable"] == totals["runs"]
    assert totals["nodes"] == 5
    signatures = summary["signatures"]
    assert sum(s["runs"] for s in signatures) == totals["failed"] + totals["hang"]
    assert [s["runs"] for s in signatures] == sorted((s["runs"] for s in signatures), reverse=True)
    kv = next(s for s in signatures if s["category"] == "max_seq_len_exceeds_kv_cache")
    runs = [sp for sp in scanned_fleet.specs if sp.scenario.name == "kv-cache"]
    assert kv["runs"] == len(runs)
    assert kv["first_seen"] == min(sp.started for sp in runs)
    assert kv["last_seen"] == max(sp.started for sp in runs)
    assert kv["nodes"] == sorted({sp.node for sp in runs})
    assert kv["drivers"] == sorted({sp.driver for sp in runs})
    assert kv["images"] == sorted({sp.image for sp in runs})
    assert kv["known_issue"]["id"] == "kv-cache-too-small-for-max-seq-len"
    assert kv["known_issue"]["score"] >= 0.75


def test_known_issue_in_summary_is_gated_per_version(scanned_fleet):
    summary = summarise(str(scanned_fleet.out))
    bf16 = next(s for s in summary["signatures"] if s["category"] == "dtype_unsupported_on_gpu")
    assert bf16["vllm_versions"] == ["0.8.5", "0.9.2"]
    # reported, because the 0.8.5 runs do not contain the 0.9.0 fix; the 0.9.2 ones do
    assert bf16["known_issue"]["id"] == "bfloat16-on-pre-ampere"
    assert (bf16["known_issue"]["versions_matched"], bf16["known_issue"]["versions_seen"]) == (1, 2)


def test_new_signatures_since_a_date(scanned_fleet):
    late_start = min(sp.started for sp in scanned_fleet.specs if sp.scenario is LATE)
    summary = summarise(str(scanned_fleet.out), since=late_start)
    new = summary["new_signatures"]
    # only the late scenario is new; it is one signature per model (normalise keeps repo ids)
    assert {s["category"] for s in new} == {LATE.category}
    assert sum(s["runs"] for s in new) == LATE_RUNS
    assert len(summarise(str(scanned_fleet.out), since=START)["new_signatures"]) == summary["signature_count"]


@pytest.mark.parametrize("by, column_values", [("node", 5), ("driver", 4), ("phase", 7), ("image", 10)])
def test_group_by(scanned_fleet, by, column_values):
    summary = summarise(str(scanned_fleet.out), by=by)
    groups = summary["groups"]
    assert sum(g["runs"] for g in groups) == FLEET_SIZE + 1
    known = [g for g in groups if g["key"] != "(unknown)"]
    assert len(known) >= column_values
    assert all(g["failed"] + g["ok"] <= g["runs"] for g in groups)


def test_text_and_markdown_render(scanned_fleet):
    summary = summarise(str(scanned_fleet.out), since=parse_since("2026-10-10"))
    text = render(summary, "text")
    assert f"Fleet: {FLEET_SIZE + 1} runs" in text
    assert "max_seq_len_exceeds_kv_cache | ValueError: To serve at least one request" in text
    assert "known issue (score" in text and "vllm-project/vllm#16118" in text
    assert "New signatures since 2026-10-10" in text
    assert "interrupted-copy.tar.gz: corrupt-archive" in text
    md = render(summary, "md")
    assert md.startswith("## vllm-triage fleet summary")
    assert "| runs | first seen | last seen |" in md
    assert "[vllm-project/vllm#16118](https://github.com/vllm-project/vllm/issues/16118)" in md
    by_node = render(summarise(str(scanned_fleet.out), by="node"), "md")
    assert "| node | runs | failed |" in by_node and "gpu-c03" in by_node


def test_parse_since():
    assert parse_since("2026-10-10") == datetime(2026, 10, 10, tzinfo=timezone.utc)
    assert parse_since("2026-10-10T12:00:00Z") == datetime(2026, 10, 10, 12, tzinfo=timezone.utc)
    assert parse_since(None) is None


def test_cli_scan_and_fleet(tmp_path, scanned_fleet):
    runner = CliRunner()
    one = [str(s.path) for s in scanned_fleet.specs[:3]]
    result = runner.invoke(
        cli, ["scan", *one, "-o", str(tmp_path / "out"), "--jobs", "1", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    assert stats["analysed"] == 3 and stats["schema"] == "vllm-triage.fleet/1"
    result = runner.invoke(cli, ["scan", *one, "-o", str(tmp_path / "out"), "-j", "1"])
    assert result.exit_code == 0
    assert "3 bundle(s)" in result.stdout and "3 unchanged" in result.stdout
    assert "scanning" not in result.output  # no progress bar when not on a terminal
    result = runner.invoke(cli, ["fleet", str(tmp_path / "out"), "--format", "json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["totals"]["runs"] == 3
    result = runner.invoke(cli, ["fleet", str(scanned_fleet.out), "--by", "driver", "--format", "md"])
    assert result.exit_code == 0 and "| driver | runs |" in result.stdout


@pytest.mark.parametrize(
    "args, problem",
    [
        (["fleet", "{tmp}/nothing-here"], "not-a-fleet-dir"),
        (["fleet", "{out}", "--since", "last tuesday"], "bad-date"),
        (["scan", "{tmp}/missing", "-o", "{tmp}/o"], "missing-path"),
    ],
)
def test_cli_errors_are_one_line_with_exit_4(tmp_path, scanned_fleet, args, problem):
    args = [a.format(tmp=tmp_path, out=scanned_fleet.out) for a in args]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 4
    assert result.stderr.strip().count("\n") == 0
    assert f"vllm-triage: {problem}:" in result.stderr
    assert "Traceback" not in result.output


def test_an_empty_scan_summarises_to_nothing(tmp_path):
    from vllm_triage.fleet.scan import scan

    (tmp_path / "nothing").mkdir()
    stats = scan([str(tmp_path / "nothing")], str(tmp_path / "out"), jobs=1)
    assert stats.bundles == 0
    summary = summarise(str(tmp_path / "out"), by="node")
    assert summary["totals"]["runs"] == 0 and summary["signatures"] == [] and summary["groups"] == []
    assert "Fleet: 0 runs" in render(summary, "text")


class _FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal(monkeypatch):
    from vllm_triage.commands.scan import _ProgressBar

    terminal = _FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    bar = _ProgressBar()
    bar.start(4)
    bar.advance(4)
    bar.close()
    assert "scanning" in terminal.getvalue() and "4/4" in terminal.getvalue()

    piped = io.StringIO()
    monkeypatch.setattr(sys, "stderr", piped)
    bar = _ProgressBar()
    bar.start(4)
    bar.advance(4)
    bar.close()
    assert piped.getvalue() == ""
