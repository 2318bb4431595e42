"""The first rule (in precedence order) whose pattern matches each row, with each pattern run only
on the rows that hold one of its required literals.

A `when/then` chain of ~130 `str.contains` runs every pattern over every row: on a serving log
whose 400s each log a `ValueError:` line (thousands a chunk, every one parsed and classified),
that was a third of the triage. Here one Aho-Corasick pass (polars `extract_many`, overlapping,
so every literal at every position is reported) finds which rules' literals each row holds;
a rule's regex then runs only on those of its candidate rows that no earlier rule has claimed.
Exact by construction: a pattern can only match a text that contains one of its required
literals (engine/literals.py), and rules with no literal run on every open row.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from vllm_triage.engine.literals import required_literals
from vllm_triage.engine.rules import Rule


@dataclass(frozen=True)
class LiteralIndex:
    """Which rules (by position in the precedence list) each literal stands for."""

    rules: tuple[Rule, ...]
    exact: pl.DataFrame  # lit, rule: the case-sensitive literals
    folded: pl.DataFrame  # lit (lower case), rule: the ASCII case-insensitive ones
    always: tuple[int, ...]  # rules with no usable literal: tried on every row

    @classmethod
    def of(cls, rules: list[Rule]) -> LiteralIndex:
        exact: list[tuple[str, int]] = []
        folded: list[tuple[str, int]] = []
        always: list[int] = []
        for position, rule in enumerate(rules):
            found = required_literals(rule.pattern)
            if found is None:
                always.append(position)
                continue
            literals, ignore_case = found
            (folded if ignore_case else exact).extend((s, position) for s in literals)
        return cls(tuple(rules), _table(exact), _table(folded), tuple(always))


def _table(pairs: list[tuple[str, int]]) -> pl.DataFrame:
    return pl.DataFrame(
        {"lit": [p[0] for p in pairs], "rule": [p[1] for p in pairs]},
        schema={"lit": pl.String, "rule": pl.Int64},
    )


def first_match(messages: pl.Series, index: LiteralIndex) -> pl.Series:
    """The id of the first rule of `index` matching each message (null for none, or a null message)."""
    n = messages.len()
    result = pl.Series("id", [None] * n, dtype=pl.String)
    if n == 0 or not index.rules:
        return result
    candidates = _candidates(messages, index)
    open_rows = pl.Series("open", [True] * n, dtype=pl.Boolean)
    every_row = pl.Series("row", range(n), dtype=pl.UInt32)
    for position, rule in enumerate(index.rules):
        rows = every_row if position in index.always else candidates.get(position)
        if rows is None:
            continue
        rows = rows.filter(open_rows.gather(rows))
        if rows.is_empty():
            continue
        hit = rows.filter(messages.gather(rows).str.contains(rule.pattern))
        if hit.is_empty():
            continue
        result = result.scatter(hit, rule.id)
        open_rows = open_rows.scatter(hit, False)
    return result


def _candidates(messages: pl.Series, index: LiteralIndex) -> dict[int, pl.Series]:
    """Rule position -> the rows (sorted) holding one of its literals."""
    found = []
    for table, fold in ((index.exact, False), (index.folded, True)):
        if table.is_empty():
            continue
        lits = table.get_column("lit").unique().to_list()
        hits = messages.str.extract_many(lits, overlapping=True, ascii_case_insensitive=fold)
        pairs = pl.DataFrame({"row": pl.Series(range(messages.len()), dtype=pl.UInt32), "lit": hits})
        pairs = pairs.explode("lit").drop_nulls()
        if fold:
            pairs = pairs.with_columns(pl.col("lit").str.to_lowercase())
        found.append(pairs.unique().join(table, on="lit").select("rule", "row"))
    if not found:
        return {}
    parts = pl.concat(found).unique().sort("rule", "row").partition_by("rule", as_dict=True)
    return {int(key[0]): part.get_column("row") for key, part in parts.items()}
