"""Splitting a placeholder pattern into its top-level branches (bundle/check/branches.py): the
split is exact where it is made, refused where it could change a branch's meaning, and the
branch-wise Rust search answers as the whole pattern does."""

from __future__ import annotations

import random

import pytest
import regex

from vllm_triage.bundle.check.branches import top_level_branches
from vllm_triage.bundle.check.data import _rust_search

PASTE_HERE = (
    r"(?i)<\s*(?:paste|insert|your|put)\b[^<>\n]{0,60}>|\[\s*paste[^\]\n]{0,60}\]"
    r"|\bpaste (?:(?:it|the [\w -]{1,30}|your [\w -]{1,30}|output|log|logs|command) )?here\b"
    r"|^\s*(?:TODO|TBD|FIXME)\s*:?\s*$"
)


def test_a_placeholder_pattern_splits_into_its_four_branches_with_the_flags() -> None:
    branches = top_level_branches(PASTE_HERE)
    assert branches is not None and len(branches) == 4
    assert all(b.startswith("(?i)") for b in branches)
    assert branches[3] == r"(?i)^\s*(?:TODO|TBD|FIXME)\s*:?\s*$"


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("a|b", ["a", "b"]),
        ("[|]x|y", ["[|]x", "y"]),  # a bar in a class is no branch
        ("[]|]|c", ["[]|]", "c"]),  # nor after a leading ] in a class
        (r"(?m)\(|\)", [r"(?m)\(", r"(?m)\)"]),  # escaped parentheses
    ],
)
def test_split(pattern: str, expected: list[str]) -> None:
    assert top_level_branches(pattern) == expected


@pytest.mark.parametrize(
    "pattern",
    [
        "abc",  # one branch
        "(a|b)",  # the bar is inside a group
        r"a\|b",  # an escaped bar
        "(?x)a | b  # verbose",  # whitespace and comments would need parsing
        "a|(?i)b",  # a flag group whose reach the split would change
        "[[:alpha:]]|c",  # class syntax the engines read differently
        "(a|b",  # unbalanced
        "a)|b",
    ],
)
def test_no_split(pattern: str) -> None:
    assert top_level_branches(pattern) is None


TEXTS = [
    "INFO 08-27 16:40:01 [loggers.py:123] Engine 000: Avg prompt throughput: 4.2 tokens/s\n",
    "<paste the log here>\n",
    "  todo  \n",
    "[ paste nvidia-smi output ]\n",
    "Please paste your full log here.\n",
    "paste here\n",
    "<insertion point>\n",
    "the PASTE command here\n",
    "TODO: fix later\n",
]


def test_branch_wise_search_answers_as_the_whole_pattern() -> None:
    rng = random.Random(5)
    whole = regex.compile(PASTE_HERE, regex.MULTILINE)
    for _ in range(200):
        text = "".join(rng.choice(TEXTS) for _ in range(rng.randint(0, 8)))
        assert _rust_search(PASTE_HERE, text) == (whole.search(text) is not None), text
