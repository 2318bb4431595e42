"""The literal-screened first match (engine/screen.py) must name the same rule for every row as the
when/then chain of every pattern over every row (matcher.marker_expr / class_expr)."""

from __future__ import annotations

import random

import polars as pl
import pytest

from vllm_triage.engine.matcher import CompiledRules, compile_rules
from vllm_triage.engine.rules import Rule, load
from vllm_triage.engine.screen import LiteralIndex, first_match


@pytest.fixture(scope="module")
def compiled() -> CompiledRules:
    return compile_rules(load())


def _chain(messages: pl.Series, compiled: CompiledRules) -> tuple[list, list]:
    frame = pl.DataFrame({"message": messages})
    old = frame.select(m=compiled.marker_expr(), c=compiled.class_expr())
    return old["m"].to_list(), old["c"].to_list()


def _screened(messages: pl.Series, compiled: CompiledRules) -> tuple[list, list]:
    return (
        first_match(messages, compiled.literal_index("markers")).to_list(),
        first_match(messages, compiled.literal_index("classifiers")).to_list(),
    )


def _examples(compiled: CompiledRules) -> list[str]:
    rules = compiled.markers + compiled.classifiers
    return [text for r in rules for text in r.must_match + r.must_not_match]


def test_every_rule_example_gets_the_same_rule(compiled: CompiledRules) -> None:
    examples = _examples(compiled)
    assert len(examples) > 200
    messages = pl.Series("message", [*examples, None, "", "nothing to see here"], dtype=pl.String)
    old_markers, old_classes = _chain(messages, compiled)
    assert sum(c is not None for c in old_classes) > 100  # the examples really hit rules
    assert _screened(messages, compiled) == (old_markers, old_classes)


def test_mixed_and_cut_examples_get_the_same_rule(compiled: CompiledRules) -> None:
    """Rows that hold several rules' texts (precedence decides), and examples cut in two, case
    changed or glued to other text (a literal may then be there while its pattern does not match)."""
    rng = random.Random(5)
    examples = _examples(compiled)
    rows = []
    for _ in range(3000):
        a, b = rng.choice(examples), rng.choice(examples)
        cut = rng.randrange(len(a) + 1)
        shape = rng.randrange(5)
        if shape == 0:
            rows.append(f"{a} {b}")
        elif shape == 1:
            rows.append(a[:cut] + b[cut:])
        elif shape == 2:
            rows.append(a.swapcase())
        elif shape == 3:
            rows.append(f"(APIServer pid=1) ERROR 08-06 10:00:00 [x.py:1] {a}")
        else:
            rows.append(a[cut:] + a[:cut])
    messages = pl.Series("message", rows, dtype=pl.String)
    assert _screened(messages, compiled) == _chain(messages, compiled)


def _rule(rule_id: str, pattern: str) -> Rule:
    return Rule(id=rule_id, kind="error", phase="runtime", category="x", pattern=pattern, file="t.toml")


def test_rules_with_no_literal_and_case_insensitive_ones() -> None:
    rules = [
        _rule("a.nocase", r"(?i)out of memory"),
        _rule("b.noliteral", r"^\d+\s*$"),
        _rule("c.exact", r"CUDA error: (?:an illegal|unspecified)"),
        _rule("d.also_oom", r"Out Of Memory"),
    ]
    index = LiteralIndex.of(rules)
    assert index.always == (1,)
    assert not index.folded.is_empty()
    messages = pl.Series(
        "message",
        [
            "OUT OF MEMORY",
            "Out Of Memory",
            "12 ",
            "CUDA error: unspecified launch",
            "cuda error: an illegal",
            None,
        ],
        dtype=pl.String,
    )
    assert first_match(messages, index).to_list() == [
        "a.nocase",
        "a.nocase",
        "b.noliteral",
        "c.exact",
        None,
        None,
    ]
