"""Compile a RuleSet into vectorised polars expressions, plus the prefilter that keeps big logs fast.

The prefilter is one Rust regex, the union of every error/consequence pattern (with its start/end
anchors dropped, since it runs on the raw line before prefixes are stripped) and of the structural
patterns the analysis needs (tracebacks, exception lines). It can only over-select: a line it
rejects cannot match any such rule, so skipping the full prefix parse for it loses nothing.
Markers are found separately: only the first line of each milestone is needed.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import regex

from vllm_triage.engine.literals import literal_alternation, required_literals
from vllm_triage.engine.literals import prime as prime_literals
from vllm_triage.engine.rules import KIND_PRECEDENCE, Rule, RuleSet
from vllm_triage.engine.screen import LiteralIndex, first_match

TRACEBACK = r"^Traceback \(most recent call last\)"
# An exception line ends a traceback: `ValueError: …`, `torch.OutOfMemoryError: …`,
# `RuntimeError("…")` (a repr logged by V0), `KeyboardInterrupt`, `AssertionError`.
EXCEPTION_LINE = (
    # pynvml raises one class per NVML return code, named NVMLError_<Code>:
    # `pynvml.NVMLError_InvalidArgument: Invalid Argument`, `…NVMLError_DriverNotLoaded: …`.
    r"^(?:[a-z_][\w]*\.)*(?:[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Fault|Failure)(?:_[A-Z][A-Za-z]*)?"
    r"|StopIteration)"
    # `Type('…')`: V0's engine logs the exception it dies of as repr(e); a paste may cut it
    # before its closing parenthesis, so an opened quoted argument is enough.
    r"(?:: .*|:|\(.*\)|\((?:'|\").*|\s*)$"
)
_STRUCTURAL_PREFILTER = (
    r"Traceback \(most recent call last\)",
    r"[A-Za-z](?:Error|Exception|Interrupt|Exit|Fault|Failure)(?::|\(|\s*$|_[A-Z])",
    r"StopIteration",
)


_START_ANCHOR = re.compile(r"(^|\||\((?:\?:)?)\^")
_END_ANCHOR = re.compile(r"(?<!\\)\$(?=\||\)|$)")


def unanchor(pattern: str) -> str:
    """Drop ^/$ anchors (at the start, end, or either side of an alternation branch).

    The prefilter runs on the raw line, where the message starts after the prefixes; dropping
    anchors only widens the match, which is all a prefilter may do.
    """
    return _END_ANCHOR.sub("", _START_ANCHOR.sub(r"\1", pattern))


@dataclass
class CompiledRules:
    ruleset: RuleSet
    prefilter: str
    markers: list[Rule]
    classifiers: list[Rule]
    # Lines this matches are noise whatever else they contain (a client's 400 quoting an error
    # text): they are dropped before the costly prefix parse.
    noise_filter: str = ""
    # False once a pattern overran the Python budget (see classify): polars only from then on.
    python_ok: bool = True
    # Patterns strings built for one set of finished rules, reused for every chunk after it.
    _cache: dict[tuple[str, frozenset[str]], str] = field(default_factory=dict, repr=False, compare=False)
    _block_cache: dict[tuple[str, frozenset[str]], BlockGate | None] = field(
        default_factory=dict, repr=False, compare=False
    )
    _spent: dict[frozenset[str], tuple[str, str]] = field(default_factory=dict, repr=False, compare=False)
    _indexes: dict[tuple[str, frozenset[str]], LiteralIndex] = field(
        default_factory=dict, repr=False, compare=False
    )

    def prefilter_without(self, done: frozenset[str]) -> str:
        """The prefilter minus rules that need no more lines (a marker already seen, a rule whose
        hit budget is spent). Noise rules are never in it: a noise line matters only when another
        pattern selects it, and then it is classified (and discarded) like any selected line."""
        if not done:
            return self.prefilter
        key = ("prefilter", done)
        if key not in self._cache:
            self._cache[key] = _union([r for r in self.classifiers + self.stop_markers if r.id not in done])
        return self._cache[key]

    def spent(self, done: frozenset[str]) -> tuple[str, str] | None:
        """(the rules whose hit budget is spent, every other rule) as unanchored unions, or None
        when no rule is spent. A line only a spent rule matches is classified as that rule and
        then dropped over the budget (scan._cap_hits): the structural exception pattern that still
        selects it would have it parsed for nothing (a day of serving repeats one per-request
        ValueError hundreds of thousands of times)."""
        if done not in self._spent:
            spent = [r for r in self.classifiers if r.id in done and r.kind != "noise"]
            live = [r for r in self.classifiers + self.stop_markers if r.id not in done and r.kind != "noise"]
            self._spent[done] = (
                "|".join(f"(?:{unanchor(r.pattern)})" for r in spent),
                "|".join(f"(?:{unanchor(r.pattern)})" for r in live),
            )
        spent_union, live_union = self._spent[done]
        return (spent_union, live_union) if spent_union else None

    def markers_wanted(self, done: frozenset[str]) -> list[Rule]:
        """Milestones not seen yet (stop signals ride in the prefilter instead)."""
        return [r for r in self.markers if r.id not in done and not r.shutdown]

    def marker_union(self, done: frozenset[str]) -> str:
        key = ("markers", done)
        if key not in self._cache:
            wanted = self.markers_wanted(done)
            self._cache[key] = "|".join(f"(?:{unanchor(r.pattern)})" for r in wanted)
        return self._cache[key]

    def gate(self, done: frozenset[str]) -> str:
        """The first pass over every line: the required literals of the prefilter's rules and of
        the milestones still wanted (engine/literals.py), plus the whole pattern of any rule that
        has none. It can only over-select the prefilter and the marker union (each line it
        passes is then matched against them), and costs a fraction of them: one multi-literal
        search instead of ~100 regexes per line."""
        key = ("gate", done)
        if key not in self._cache:
            rules = [
                r for r in self.classifiers + self.stop_markers if r.id not in done and r.kind != "noise"
            ]
            self._cache[key] = gate_pattern(
                [r.pattern for r in rules + self.markers_wanted(done)] + list(_STRUCTURAL_PREFILTER)
            )
        return self._cache[key]

    def block_gate(self, done: frozenset[str]) -> BlockGate | None:
        """`gate` as literals for a byte-level search (engine/blocks.py): the same literals, and
        the structural exception pattern whole (its literal, `Error`, is on every client error's
        log line); None when a pattern has no literal (it would need the per-line regex)."""
        key = ("block_gate", done)
        if key not in self._block_cache:
            rules = [
                r for r in self.classifiers + self.stop_markers if r.id not in done and r.kind != "noise"
            ]
            self._block_cache[key] = block_gate_of(
                [r.pattern for r in rules] + list(_STRUCTURAL_PREFILTER), self.markers_wanted(done)
            )
        return self._block_cache[key]

    @property
    def stop_markers(self) -> list[Rule]:
        # Stop signals can come at any time, so they ride in the main prefilter.
        return [r for r in self.markers if r.shutdown]

    def literal_index(self, kind: str) -> LiteralIndex:
        """The literal index of the markers or of the classifiers (see engine/screen.py)."""
        key: tuple[str, frozenset[str]] = (kind, frozenset())
        if key not in self._indexes:
            self._indexes[key] = LiteralIndex.of(self.markers if kind == "markers" else self.classifiers)
        return self._indexes[key]

    def marker_expr(self, column: str = "message") -> pl.Expr:
        return _first_match(self.markers, column)

    def class_expr(self, column: str = "message") -> pl.Expr:
        return _first_match(self.classifiers, column)


def _first_match(rules: list[Rule], column: str) -> pl.Expr:
    if not rules:
        return pl.lit(None, dtype=pl.String)
    col = pl.col(column)
    chain: Any = pl.when(col.str.contains(rules[0].pattern)).then(pl.lit(rules[0].id))
    for rule in rules[1:]:
        chain = chain.when(col.str.contains(rule.pattern)).then(pl.lit(rule.id))
    expression: pl.Expr = chain.otherwise(pl.lit(None, dtype=pl.String))
    return expression


def compile_rules(ruleset: RuleSet) -> CompiledRules:
    prime_literals([r.pattern for r in ruleset.rules] + list(_STRUCTURAL_PREFILTER))
    markers = [r for r in ruleset.rules if r.kind == "marker"]
    classifiers = sorted(
        (r for r in ruleset.rules if r.kind in KIND_PRECEDENCE),
        key=lambda r: (KIND_PRECEDENCE[r.kind], -r.priority),
    )
    noise = [r for r in classifiers if r.kind == "noise"]
    noise_filter = "|".join(f"(?:{unanchor(r.pattern)})" for r in noise) if noise else ""
    stop_markers = [r for r in markers if r.shutdown]
    return CompiledRules(ruleset, _union(classifiers + stop_markers), markers, classifiers, noise_filter)


def gate_pattern(patterns: list[str]) -> str:
    """One alternation of the literals the patterns require; patterns with none go in whole."""
    exact: set[str] = set()
    folded: set[str] = set()
    whole: list[str] = []
    for pattern in patterns:
        found = required_literals(pattern)
        if found is None:
            whole.append(f"(?:{unanchor(pattern)})")
            continue
        literals, ignore_case = found
        # The start of a required literal is required too: 12 characters keep lines apart as
        # well as the whole literal on real logs, and fewer, shorter literals search faster.
        (folded if ignore_case else exact).update(s[:GATE_LITERAL_CHARS] for s in literals)
    exact, folded = _minimal(exact), _minimal(folded)
    parts = [literal_alternation(exact)] if exact else []
    if folded:
        parts.append(literal_alternation(folded, ignore_case=True))
    return "|".join(parts + whole)


GATE_LITERAL_CHARS = 12


@dataclass(frozen=True)
class BlockGate:
    """The gate for a byte-level search: any line `gate` passes holds one of these literals (or,
    for `caseless`, one of them in any ASCII case), or matches the structural exception pattern."""

    literals: tuple[str, ...]
    caseless: tuple[str, ...]
    structural: bool
    # The milestones still wanted, by literal: only the first line holding each is reported (one
    # is all a milestone needs; the stats and access lines of a serving log hold them by the
    # million). engine/scan.py checks that line is the milestone's first, else searches the chunk.
    markers: tuple[MarkerLiteral, ...] = ()


@dataclass(frozen=True)
class MarkerLiteral:
    text: str
    caseless: bool
    rules: tuple[str, ...]  # the milestones whose every match holds this literal


def block_gate_of(patterns: list[str], markers: list[Rule] | None = None) -> BlockGate | None:
    exact: set[str] = set()
    folded: set[str] = set()
    structural = False
    for pattern in patterns:
        if pattern == _STRUCTURAL_PREFILTER[1]:
            structural = True  # blocks.STRUCTURAL_BYTES: the pattern itself, not its literal
            continue
        found = required_literals(pattern)
        if found is None:
            return None
        literals, ignore_case = found
        (folded if ignore_case else exact).update(s[:GATE_LITERAL_CHARS] for s in literals)
    owners: dict[tuple[str, bool], list[str]] = {}
    for rule in markers or []:
        found = required_literals(rule.pattern)
        if found is None:
            return None
        literals, ignore_case = found
        # Whole literals, not their first 12 characters: "GPU KV cache size: " is a milestone,
        # "GPU KV cache usage" a stats line of every ten seconds.
        for text in literals:
            owners.setdefault((text, ignore_case), []).append(rule.id)
    marker_literals = tuple(
        MarkerLiteral(text, caseless, tuple(rules)) for (text, caseless), rules in sorted(owners.items())
    )
    return BlockGate(
        tuple(sorted(_minimal(exact))), tuple(sorted(_minimal(folded))), structural, marker_literals
    )


def _minimal(literals: set[str]) -> set[str]:
    """Drop literals that contain another one: a line holding the longer holds the shorter."""
    ordered = sorted(literals, key=len)
    kept: list[str] = []
    for text in ordered:
        if not any(short in text for short in kept):
            kept.append(text)
    return set(kept)


def no_literal(patterns: list[str]) -> list[str]:
    """The patterns with no required literal: each costs a full regex pass over every line."""
    return [p for p in patterns if required_literals(p) is None]


def _union(rules: list[Rule]) -> str:
    parts = [f"(?:{unanchor(r.pattern)})" for r in rules if r.kind != "noise"]
    parts += [f"(?:{p})" for p in _STRUCTURAL_PREFILTER]
    return "|".join(parts)


def classify(frame: pl.DataFrame, compiled: CompiledRules) -> pl.DataFrame:
    """Add marker / cls / exc / tb columns to LogFrame rows."""
    if frame.is_empty():
        return frame.with_columns(
            marker=pl.lit(None, dtype=pl.String),
            cls=pl.lit(None, dtype=pl.String),
            exc=pl.lit(False),
            tb=pl.lit(False),
        )
    if frame.height <= SMALL_FRAME_ROWS and compiled.python_ok:
        longest = frame.get_column("message").str.len_bytes().max()
        if longest is None or int(longest) <= PYTHON_LINE_MAX:  # type: ignore[arg-type]
            try:
                return _classify_small(frame, compiled)
            except TimeoutError:
                # A pattern backtracks on these lines: from now on this rule set runs in polars'
                # linear-time engine only, so the time lost is one budget per run, not per chunk.
                compiled.python_ok = False
    message = pl.col("message")
    # Each pattern only on the rows holding one of its literals (engine/screen.py): the same
    # answer as the when/then chain of marker_expr / class_expr, without ~130 passes over every row.
    messages = frame.get_column("message")
    return frame.with_columns(
        marker=first_match(messages, compiled.literal_index("markers")),
        cls=first_match(messages, compiled.literal_index("classifiers")),
        exc=message.str.contains(EXCEPTION_LINE),
        tb=message.str.contains(TRACEBACK),
    )


# Below this many rows a Python loop over pre-compiled patterns beats a polars expression chain,
# whose cost is per expression (some 120 of them, ≈ 20 ms a call), not per row. Measured with the
# built-in rules: 10 rows 2.4 ms in Python vs 20 ms in polars, 50 rows 9 vs 20, 256 rows 40 vs 24.
# Python's `regex` backtracks, so that path is bounded three ways:
# only lines up to PYTHON_LINE_MAX bytes, a time budget per call (each search gets what is left
# of it), and on the first overrun the answer comes from polars' Rust engine (linear time).
# Both engines give the same answer: `rules check` checks every pattern in both.
SMALL_FRAME_ROWS = 128
PYTHON_LINE_MAX = 4096
PYTHON_BUDGET_S = 0.25
_EXCEPTION_RE = regex.compile(EXCEPTION_LINE)
_TRACEBACK_RE = regex.compile(TRACEBACK)


def _search(pattern: regex.Pattern, message: str, deadline: float) -> bool:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError
    return pattern.search(message, timeout=remaining) is not None


def _first_rule(rules: list[Rule], message: str, deadline: float) -> str | None:
    for rule in rules:
        if _search(rule.compiled, message, deadline):
            return rule.id
    return None


def _may_match(rule: Rule, text: str) -> bool:
    """False only when `text` holds none of the literals every match of the rule contains."""
    found = required_literals(rule.pattern)
    if found is None or found[1]:
        return True  # no literal, or case-insensitive ones: cannot rule the text out this way
    return any(literal in text for literal in found[0])


def _classify_small(frame: pl.DataFrame, compiled: CompiledRules) -> pl.DataFrame:
    messages = frame.get_column("message").fill_null("").to_list()
    # Only the rules whose literals occur in these rows are compiled and tried (engine/literals.py):
    # a small paste needs a handful of the ~100 patterns, and compiling is most of their cost.
    text = "\n".join(messages)
    markers = [r for r in compiled.markers if _may_match(r, text)]
    classifiers = [r for r in compiled.classifiers if _may_match(r, text)]
    for rule in markers + classifiers:
        rule.compiled  # noqa: B018 - compiled once, before the clock starts: compiling is not matching
    deadline = time.monotonic() + PYTHON_BUDGET_S

    def first(rules: list[Rule], message: str) -> str | None:
        # Most rows (context around a trigger) hold no rule's literal: no search at all for them.
        return _first_rule([r for r in rules if _may_match(r, message)], message, deadline)

    return frame.with_columns(
        marker=pl.Series([first(markers, m) for m in messages], dtype=pl.String),
        cls=pl.Series([first(classifiers, m) for m in messages], dtype=pl.String),
        exc=pl.Series([_search(_EXCEPTION_RE, m, deadline) for m in messages], dtype=pl.Boolean),
        tb=pl.Series([_search(_TRACEBACK_RE, m, deadline) for m in messages], dtype=pl.Boolean),
    )
