"""The redaction every output passes (bundle/redact/payload.py) must not blank what a real log says:
on the labelled real logs of ../shared/corpus/dev, when that corpus is there, triage's JSON holds
no placeholder (none of them carries a credential in what triage reports). Its first false
positives were found this way: `KeyError: '<tensor name>'` and code under a traceback's frames."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vllm_triage.cli import cli

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "dev"
CASES = sorted(d for d in CORPUS.iterdir() if (d / "log.txt").is_file()) if CORPUS.is_dir() else []


@pytest.mark.skipif(not CASES, reason="../shared/corpus/dev is not here")
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_triage_of_a_real_log_redacts_nothing_it_reports(case: Path) -> None:
    result = CliRunner().invoke(cli, ["triage", str(case / "log.txt"), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert "<redacted:" not in json.dumps(data["first_error"]), data["first_error"]["text"]
    assert "<redacted:" not in result.output
