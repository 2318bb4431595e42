"""The literal pass: what it extracts, that it never drops a line a rule would match, and that
`rules check` names the rules it cannot help."""

from __future__ import annotations

import polars as pl
import pytest
from click.testing import CliRunner

from vllm_triage.cli import cli
from vllm_triage.engine.check import PREFIXES
from vllm_triage.engine.literals import required_literals
from vllm_triage.engine.matcher import compile_rules, gate_pattern
from vllm_triage.engine.rules import load


def lits(pattern: str) -> set[str] | None:
    found = required_literals(pattern)
    return None if found is None else set(found[0])


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"CUDA out of memory\. Tried to allocate", {"CUDA out of memory. Tried to allocate"}),
        (r"^ValueError: (?:foo|barbaz) \d+", {"ValueError: foo ", "ValueError: barbaz "}),
        (
            r"Received (?:SIGTERM|SIGINT|signal \d+)",
            {"Received SIGTERM", "Received SIGINT", "Received signal "},
        ),
        (r"(?:optional )?required text", {"required text"}),
        (r"a[xy]bcd", {"axbcd", "aybcd"}),
        (r"NCCL error|\bXid \d+", {"NCCL error", "Xid "}),
        # An access line's ` HTTP/` is on every line of a busy server: the status is rarer.
        (r'"(?:GET|POST) \S+ HTTP/[\d.]+" 5\d\d ', {'" 5'}),
    ],
)
def test_extracts_the_literals_every_match_contains(pattern: str, expected: set[str]) -> None:
    assert lits(pattern) == expected


@pytest.mark.parametrize(
    "pattern",
    [
        r"^\d+ \w+$",  # no fixed text at all
        r"(?:foo)?\d+",  # the only text is optional
        r"abc|\d+",  # one branch without text makes the whole pattern textless
        r"\<word\>",  # Rust word boundaries: Python would read < and >
        r"[[:alpha:]]+ failed",  # a POSIX class inside brackets: Python reads `[[:alph]` then `]`
        r"ab",  # too short to be worth a pass
        r"(unclosed",  # not a pattern Python can read: no claim made
    ],
)
def test_no_literal_when_none_is_safe(pattern: str) -> None:
    assert lits(pattern) is None


def test_case_insensitive_literals_avoid_letters_with_unicode_partners() -> None:
    # Under (?i) the Kelvin sign matches k and the long s matches s: an ASCII search would miss them.
    found = required_literals(r"(?i)out of memory; killed")
    assert found is not None
    literals, folded = found
    assert folded
    assert all("k" not in s and "s" not in s for s in literals)
    gate = gate_pattern([r"(?i)out of memory; killed"])
    assert pl.Series(["OUT OF MEMORY; \u212aILLED"]).str.contains(gate)[0]


def _lines_of(rules: list) -> list[str]:
    return [prefix + ex for rule in rules for ex in rule.must_match for prefix in PREFIXES]


def test_every_example_of_every_shipped_rule_passes_the_gate() -> None:
    compiled = compile_rules(load())
    lines = pl.Series(_lines_of([r for r in compiled.ruleset.rules if r.kind != "noise"]))
    passed = lines.str.contains(compiled.gate(frozenset()))
    assert passed.all(), lines.filter(~passed).to_list()[:5]


def test_gate_selects_everything_the_prefilter_and_markers_select() -> None:
    compiled = compile_rules(load())
    examples = _lines_of(compiled.ruleset.rules)
    ordinary = [
        '(APIServer pid=1) INFO:     10.0.1.2:5000 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        '(APIServer pid=1) INFO:     10.0.1.2:5000 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
        "(APIServer pid=1) INFO 08-07 12:23:21 [logger.py:43] Received request chatcmpl-1: params: x",
        "(EngineCore_0 pid=250) ERROR 08-07 12:23:21 [core.py:1] RuntimeError: boom",
        "Traceback (most recent call last):",
        "torch.OutOfMemoryError",
        "",
    ]
    lines = pl.Series(examples + ordinary)
    for done in (frozenset(), frozenset(r.id for r in compiled.markers)):
        gate = lines.str.contains(compiled.gate(done))
        wanted = lines.str.contains(compiled.prefilter_without(done))
        if compiled.markers_wanted(done):
            wanted = wanted | lines.str.contains(compiled.marker_union(done))
        missed = lines.filter(wanted & ~gate).to_list()
        assert not missed, missed[:5]
    # The gate is a filter, not a pass-through: an ordinary serving line does not get through.
    assert not pl.Series([ordinary[0]]).str.contains(
        compiled.gate(frozenset(r.id for r in compiled.markers))
    )[0]


def test_rules_check_warns_about_a_rule_with_no_literal(tmp_path) -> None:
    (tmp_path / "extra.toml").write_text(
        """
[[rule]]
id = "x.digits_only"
kind = "error"
phase = "config"
category = "x"
pattern = '^\\d+ \\w+$'
explain = "A line of a number and a word."
advice = "None."
must_match = ["12 abc"]
must_not_match = ["abc"]
""",
        encoding="utf-8",
    )
    result = CliRunner().invoke(cli, ["rules", "check", "--rules", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "x.digits_only: no literal" in result.output
    assert "warning" in result.output
