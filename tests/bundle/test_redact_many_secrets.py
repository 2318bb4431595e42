"""A bundle that holds thousands of distinct secrets (a server that logged its arguments at every
restart, a proxy that logged each client's key): `redact` replaces them all, in work that grows
with the text and not with text x secrets, and its own report is not refused for its counts."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from vllm_triage.bundle.redact import detect
from vllm_triage.cli import cli


def key(rng: random.Random, length: int = 20) -> str:
    return "".join(
        rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789") for _ in range(length)
    )


def test_ten_thousand_keys_are_redacted_and_the_report_is_not_refused(tmp_path: Path) -> None:
    rng = random.Random(11)
    keys = [(key(rng), key(rng, 24)) for _ in range(5_000)]
    lines = [
        f"(APIServer pid={100 + i % 7}) INFO 01-02 03:{i % 60:02d}:05 [cli_args.py:419] vllm serve "
        f"Qwen/Qwen3-8B --api-key {a} {b} --port 8000"
        for i, (a, b) in enumerate(keys)
    ]
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "vllm.log").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["redact", str(bundle), "--out", str(out)])
    # `"secrets": 10000` in the report was read as a 5-digit secret named `secrets`: exit 1.
    assert result.exit_code == 0, result.output
    planted = {k for pair in keys for k in pair}
    # Every word written, the report's included: none is a planted key (a set, not 10,000 scans).
    for name in ("vllm.log", "redaction-report.json"):
        assert not planted & set(re.findall(r"[A-Za-z0-9]+", (out / name).read_text())), name
    report = json.loads((out / "redaction-report.json").read_text())
    assert report["summary"]["secrets"] == 10_000
    assert report["summary"]["distinct_secrets"] == 10_000
    assert not report.get("leaks")


SAMPLE = (
    "key=Zq8Lm3Np9Rt2 again Zq8Lm3Np9Rt2Vb6 and xZq8Lm3Np9Rt2 Zq8Lm3Np9Rt2-x\n"
    "host gpu-a01.example.internal gpu-a01 gpu-a01x Kp2Lm9Qr7St4 Kp2Lm9Qr7St4Kp2Lm9Qr7St4"
)
VALUES = {
    "Zq8Lm3Np9Rt2": "key",
    "Zq8Lm3Np9Rt2Vb6": "key",  # a longer value that starts with a shorter one
    "Np9Rt2": "password",  # one inside another
    "gpu-a01": "host",
    "Kp2Lm9Qr7St4": "token",  # next to itself: overlapping occurrences
    "Qr7St4Kp2L": "token",
}
WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


@pytest.mark.parametrize(
    ("before", "after"),
    [(frozenset(), frozenset()), (WORD, WORD), (WORD | frozenset("_.-"), WORD | frozenset("_-"))],
)
def test_the_one_pass_finds_what_a_search_per_value_finds(
    before: frozenset[str], after: frozenset[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def spans(limit: int) -> list[tuple[int, int, str]]:
        monkeypatch.setattr(detect, "FIND_PASSES_PER_LENGTH", limit)
        found = detect.literal_finds(SAMPLE, VALUES, before, after, "known-secret", "secret")
        return sorted((f.start, f.end, f.kind) for f in found)

    per_value, one_pass = spans(10**9), spans(0)
    assert per_value == one_pass
    assert per_value  # the sample holds occurrences under every boundary rule
