"""`vllm-triage report --format html`: one self-contained file (no script, no network, no external
asset) opened in a real headless Chromium — it renders, shows the timeline (the SVG's lanes,
milestones and the first-error mark are in the rendered DOM), and logs no console error."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from checklist_bundles import Bundle, write_bundle
from click.testing import CliRunner

from vllm_triage.cli import cli

CHROMIUM = next((p for p in (shutil.which("chromium"), "/usr/bin/chromium") if p and Path(p).exists()), None)
needs_browser = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Chromium is not installed (Debian: apt-get install -y chromium); the HTML report is "
    "not opened in a browser",
)
# Flags for a headless run as root with nothing reaching the network or the profile of a person.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--enable-logging=stderr",
    "--v=0",
]
BROWSER_TIMEOUT_S = 90


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("html")
    base = Bundle(
        label="t1 base",
        collect_env_version="0.10.2",
        env={"HF_TOKEN": "hf_Zx9QwErTyUiOpAsDfGhJkLzXcVbNm12345"},
    )
    t1 = write_bundle(root, base, "t1")
    t2 = write_bundle(
        root,
        base.but(
            label="t2 prefix caching", started="2026-04-02T09:00:00Z", prefix_caching=True, failure="illegal"
        ),
        "t2",
    )
    oom = write_bundle(
        root,
        base.but(label="t3 oom", started="2026-04-03T09:00:00Z", failure="oom", max_model_len=16384),
        "oom",
    )
    hang = write_bundle(root, base.but(label="stuck loading", failure="hang", rollback="t0"), "hang")
    out: dict[str, Path] = {}
    for name, bundles in {"two": [t1, t2], "one": [hang], "three": [t1, t2, oom]}.items():
        target = root / f"{name}.html"
        result = CliRunner().invoke(
            cli, ["report", "--format", "html", "-o", str(target), *map(str, bundles)]
        )
        assert result.exit_code == 0, result.output
        out[name] = target
    return out


def test_self_contained(reports: dict[str, Path]) -> None:
    html = reports["two"].read_text()
    assert html.lstrip().startswith("<!DOCTYPE html>")
    assert "<script" not in html and "<link" not in html and "<iframe" not in html
    assert not re.search(r"\b(?:src|href)\s*=", html.split("<main>", 1)[0]), "an external asset in the head"
    assert not re.search(r"<(?:img|object|embed|video|audio|source)\b", html)
    assert "url(" not in html and "@import" not in html
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert '<svg id="timeline"' in html
    assert "hf_Zx9Qw" not in html  # redacted by default


def test_timeline_geometry(reports: dict[str, Path]) -> None:
    html = reports["two"].read_text()
    assert len(re.findall(r'<g class="lane"', html)) == 2
    assert len(re.findall(r'class="phase-band"', html)) == 6  # container … serving
    lane_two = html.split('<g class="lane" data-run="2"', 1)[1].split("</g>\n  <g class=", 1)[0]
    assert 'class="first-error"' in lane_two and 'data-phase="request"' in lane_two
    assert 'class="band band-failed" data-phase="request"' in lane_two
    lane_one = html.split('<g class="lane" data-run="1"', 1)[1].split('<g class="lane" data-run="2"', 1)[0]
    assert 'class="ready-mark"' in lane_one and 'class="first-error"' not in lane_one
    assert 'class="runs cols-2"' in html  # two runs side by side


def _browser(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=BROWSER_TIMEOUT_S,
        check=False,
    )


def _console_errors(stderr: str) -> list[str]:
    """Console messages (the page has no script: any message is an error — a blocked load, a parse
    error) and security-policy refusals, from Chromium's own log."""
    return [
        line
        for line in stderr.splitlines()
        if ":CONSOLE" in line or "Refused to" in line or "Uncaught" in line
    ]


@needs_browser
def test_harness_sees_console_errors(tmp_path: Path) -> None:
    """The check below would catch a problem: a page that tries a network load under the same policy."""
    page = tmp_path / "bad.html"
    page.write_text(
        '<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="default-src '
        '\'none\'"></head><body><img src="http://example.invalid/x.png"></body></html>'
    )
    result = _browser(["--dump-dom", page.as_uri()], tmp_path / "profile")
    assert _console_errors(result.stderr), result.stderr[-2000:]


@needs_browser
@pytest.mark.parametrize("name", ["two", "one", "three"])
def test_renders_in_chromium(reports: dict[str, Path], tmp_path: Path, name: str) -> None:
    page = reports[name]
    result = _browser(["--dump-dom", page.as_uri()], tmp_path / "profile")
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    assert _console_errors(result.stderr) == [], _console_errors(result.stderr)
    # Rendered: the parsed DOM holds the timeline and its parts.
    assert '<svg id="timeline"' in dom and "</svg>" in dom
    lanes = {"one": 1, "two": 2, "three": 3}[name]
    assert len(re.findall(r'<g class="lane"', dom)) == lanes
    assert len(re.findall(r'<circle class="milestone reached"', dom)) >= 6 * lanes
    assert ('<g class="first-error hang"' if name == "one" else '<g class="first-error"') in dom
    assert ("Runs side by side" if lanes > 1 else "The run") in dom


@needs_browser
def test_screenshot(reports: dict[str, Path], tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    result = _browser(
        ["--window-size=1100,1400", "--hide-scrollbars", f"--screenshot={shot}", reports["three"].as_uri()],
        tmp_path / "profile",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert _console_errors(result.stderr) == []
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a page with a picture, not a blank one
