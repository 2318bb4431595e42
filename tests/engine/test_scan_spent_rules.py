"""Lines only a spent rule matches (its hit budget used up) are not parsed again: a day of serving
repeats one per-request error hundreds of thousands of times, and the structural exception
pattern would select every one of them only for the budget to drop it (engine/scan.py). What is
kept must be what keeping them would have kept."""

from __future__ import annotations

import io

import polars as pl
import pytest

from vllm_triage.analysis.triage import analyse_log
from vllm_triage.engine import scan as scan_module
from vllm_triage.engine.matcher import CompiledRules, compile_rules
from vllm_triage.engine.rules import load
from vllm_triage.engine.scan import MAX_HITS_PER_RULE, ScanResult, scan
from vllm_triage.ingest.sources import Source

P = "(APIServer pid=41) ERROR 12-01 10:00:{s:02d} [serving_chat.py:222] "
TOO_LONG = (
    "ValueError: This model's maximum context length is 8192 tokens. However, you requested "
    "{n} tokens in the messages, Please reduce the length of the messages."
)


@pytest.fixture(scope="module")
def compiled() -> CompiledRules:
    return compile_rules(load())


def _serving_log(repeats: int, tail: str) -> bytes:
    lines = ["(APIServer pid=41) INFO 12-01 09:59:59 [launcher.py:1] Application startup complete."]
    lines += [P.format(s=i % 60) + TOO_LONG.format(n=9000 + i) for i in range(repeats)]
    return ("\n".join(lines) + "\n" + tail).encode()


def _scan(data: bytes, compiled: CompiledRules, chunk: int) -> ScanResult:
    return scan(
        Source(name="log", opener=lambda: io.BytesIO(data), size=len(data)), compiled, chunk_bytes=chunk
    )


def test_a_repeated_error_past_its_budget_is_not_parsed_and_the_result_is_the_same(compiled, monkeypatch):
    tail = (
        "(EngineCore_DP0 pid=77) ERROR 12-01 10:05:00 [core.py:900] RuntimeError: CUDA error: an illegal "
        "memory access was encountered\n"
    )
    data = _serving_log(3000, tail)
    parsed: list[int] = []
    real_parse = scan_module._parse

    def counting(raw: pl.Series, lines: pl.Series, state: object) -> pl.DataFrame:
        parsed.append(raw.len())
        return real_parse(raw, lines, state)  # type: ignore[arg-type]

    monkeypatch.setattr(scan_module, "_parse", counting)
    with_skip = _scan(data, compiled, 64 * 1024)
    skipped_rows = sum(parsed)
    parsed.clear()
    monkeypatch.setattr(CompiledRules, "spent", lambda self, done: None)
    without = _scan(data, compiled, 64 * 1024)
    assert with_skip.frame.equals(without.frame)
    assert analyse_log(with_skip, compiled).first_error == analyse_log(without, compiled).first_error
    assert "illegal memory access" in analyse_log(with_skip, compiled).first_error.row.message
    assert with_skip.hit_counts["request.prompt_too_long"] >= MAX_HITS_PER_RULE
    assert skipped_rows < sum(parsed) / 3  # most of the 3000 lines were never parsed


def test_a_line_a_live_rule_also_matches_is_still_read(compiled):
    # must-not: the spent rule's text inside a line another rule names keeps the line
    other = (
        "(EngineCore_DP0 pid=77) ERROR 12-01 10:05:00 [core.py:900] torch.OutOfMemoryError: CUDA out of "
        "memory. Tried to allocate 2.00 GiB. This model's maximum context length is 8192 tokens.\n"
    )
    result = _scan(_serving_log(1000, other), compiled, 64 * 1024)
    last = result.frame.filter(pl.col("line") == result.total_lines)
    assert last.height == 1 and last.get_column("cls").item() is not None


def test_no_rule_spent_means_nothing_to_skip(compiled):
    assert compiled.spent(frozenset()) is None
    spent, live = compiled.spent(frozenset({"request.prompt_too_long"}))
    assert "maximum context length" in spent and "maximum context length" not in live
