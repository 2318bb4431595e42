"""The literals a pattern's every match must contain, for a cheap first pass over every line.

`required_literals(pattern)` returns a set of strings such that any text the pattern matches
contains at least one of them, or None when no such set is safe to give (a pattern that can
match without any fixed text, or one whose syntax is not understood here). The scan runs one
alternation of all these literals over every line (the Rust regex crate turns it into a SIMD
multi-literal search) and the full patterns only on the lines it selects, so a line is matched
against the whole rule set only if it holds a rule's anchor text.

Conservative by construction: the extractor reads Python's own parse tree of the pattern
(`re._parser`, which both engines' common syntax parses to) and only ever keeps characters that
are certain to appear in order; anything it does not know (lookarounds, backreferences, classes,
optional parts, case-insensitive letters with non-ASCII case partners) ends a literal run or
makes the pattern "no literal". The patterns are checked to compile in both engines, and
`rules check` lists the ones with no literal so rule authors see what costs a full pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

# Python 3.11+ (the project's floor): the parser lives in re._parser (sre_parse is its deprecated alias)
from re import _constants as C  # type: ignore[attr-defined]  # not in typeshed
from re import _parser as P  # type: ignore[attr-defined]
from typing import Any

MIN_LITERAL = 3  # a shorter anchor selects too many lines to be worth a first pass
MAX_SET = 16  # a cross product of small classes beyond this many strings is not worth it
# Case-insensitive letters whose Unicode case partners are not ASCII (K: the Kelvin sign,
# s: the long s): an ASCII literal would miss them, so they end a run under (?i).
_UNSAFE_FOLD = frozenset("ksKS")
# Syntax the two engines read differently, where Python would see a literal that is not one:
# Rust's word-boundary escapes \< and \> (Python: the characters < and >), and nested classes or
# POSIX classes inside brackets, `[[:alpha:]]`, `[a[bc]]` (Python: a class, then a literal `]`).
_RUST_ONLY = re.compile(r"\\[<>]|\\b\{|(?<!\\)\[(?:[^\]\\]|\\.)*(?<!\\)\[")
# Characters that are syntax in either engine; only these are escaped, the same way both read.
_META = frozenset(".+*?()|[]{}^$\\#&-~")


_PRIMED: dict[str, tuple[frozenset[str], bool] | None] = {}


def prime(patterns: list[str]) -> None:
    """Extract the literals of a whole rule set at once, through the on-disk cache: parsing ~120
    patterns with Python's regex parser costs more than the triage of a small paste."""
    from vllm_triage.core.cache import cached, key_of

    todo = sorted(set(patterns) - set(_PRIMED))
    if not todo:
        return
    key = key_of("literals", "\0".join(todo).encode("utf-8", "surrogatepass"))
    _PRIMED.update(cached(key, lambda: {p: _extract(p) for p in todo}))


def required_literals(pattern: str) -> tuple[frozenset[str], bool] | None:
    """(literals, case_insensitive) any match contains one of, or None if none is safe."""
    if pattern in _PRIMED:
        return _PRIMED[pattern]
    return _extract(pattern)


@lru_cache(maxsize=4096)
def _extract(pattern: str) -> tuple[frozenset[str], bool] | None:
    if _RUST_ONLY.search(pattern):
        return None
    try:
        tree = P.parse(pattern)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None
    ignore_case = bool(tree.state.flags & re.IGNORECASE)
    found = _seq(list(tree), ignore_case)
    if found is None or min(len(s) for s in found) < MIN_LITERAL:
        return None
    if ignore_case:
        found = frozenset(s.lower() for s in found)
    return found, ignore_case


def _best(candidates: list[frozenset[str]]) -> frozenset[str] | None:
    """The candidate least likely to be on an ordinary line: long enough, not made of text every
    serving log repeats (an access line's ` HTTP/`), then the one whose shortest string is
    longest, then the fewest strings. Any candidate is correct; this only decides how many lines pass."""
    usable = [c for c in candidates if c]
    if not usable:
        return None
    return max(
        usable,
        key=lambda c: (
            min(len(s) for s in c) >= MIN_LITERAL,
            not _common(c),
            min(len(s) for s in c),
            -len(c),
        ),
    )


# Text on most lines of a busy server's log (access lines, request and stats lines): a literal
# made of it would pass nearly every line to the full patterns.
_COMMON = (
    " HTTP/",
    "GET ",
    "POST ",
    "PUT ",
    "DELETE ",
    "OPTIONS ",
    "INFO",
    "DEBUG",
    "WARNING",
    "/v1/",
    " OK",
    "request",
)


def _common(candidate: frozenset[str]) -> bool:
    return any(token in s for s in candidate for token in _COMMON)


def _seq(items: list, ignore_case: bool) -> frozenset[str] | None:
    """Literals for a sequence: the best of its mandatory runs and of its mandatory parts."""
    candidates: list[frozenset[str]] = []
    run: frozenset[str] = frozenset({""})

    def close() -> None:
        nonlocal run
        if run and min(len(s) for s in run) > 0:
            candidates.append(run)
        run = frozenset({""})

    for op, arg in items:
        chars = _chars(op, arg, ignore_case)
        if chars is None:
            # A group of fixed alternatives, `(?:SIGTERM|SIGINT)`, extends the run like a class.
            chars = _exact_node(op, arg, ignore_case)
        if chars is not None:
            grown = frozenset(s + c for s in run for c in chars)
            if len(grown) > MAX_SET:
                close()
                grown = frozenset(chars)
            run = grown
            continue
        if op is C.AT:
            continue  # ^, $, \b: zero-width, the text either side stays contiguous
        heads = _leading_node(op, arg, ignore_case)
        if heads is not None and run != {""}:
            # `Received (?:SIGTERM|signal \d+)`: the run goes on into each branch's fixed start.
            grown = frozenset(s + h for s in run for h in heads)
            if len(grown) <= MAX_SET:
                run = grown
        close()
        inner = _node(op, arg, ignore_case)
        if inner is not None:
            candidates.append(inner)
    close()
    return _best(candidates)


def _chars(op: Any, arg: Any, ignore_case: bool) -> frozenset[str] | None:
    """The characters a single-character node matches, when few and safe; else None."""
    if op is C.LITERAL:
        ch = chr(arg)
        if ignore_case and (ch in _UNSAFE_FOLD or not ch.isascii()):
            return None
        return frozenset({ch.lower() if ignore_case else ch})
    if op is C.IN and not ignore_case:
        chars = []
        for sub_op, sub_arg in arg:
            if sub_op is not C.LITERAL:
                return None  # a range, a category (\d, \s), a negation: too many characters
            chars.append(chr(sub_arg))
        return frozenset(chars) if 0 < len(chars) <= 4 else None
    return None


Seq = Callable[[list[Any], bool], "frozenset[str] | None"]


def _group_or_branch(op: Any, arg: Any, ignore_case: bool, seq: Seq) -> frozenset[str] | None:
    """`seq` applied to a group's body, or the union of it over an alternation's branches (few,
    every branch known), or None for any other node or a group that changes flags."""
    if op is C.SUBPATTERN:
        _group, add_flags, del_flags, body = arg
        return None if add_flags or del_flags else seq(list(body), ignore_case)
    if op is C.BRANCH:
        union: set[str] = set()
        for branch in arg[1]:
            found = seq(list(branch), ignore_case)
            if found is None:
                return None
            union |= found
        return frozenset(union) if len(union) <= MAX_SET else None
    return None


def _exact_node(op: Any, arg: Any, ignore_case: bool) -> frozenset[str] | None:
    """The finite set of strings a group or alternation matches exactly (few, non-empty), or None."""
    return _group_or_branch(op, arg, ignore_case, _exact_seq)


def _leading_node(op: Any, arg: Any, ignore_case: bool) -> frozenset[str] | None:
    """The fixed text each branch of a group starts with (all non-empty), or None."""
    return _group_or_branch(op, arg, ignore_case, _leading_seq)


def _fixed_start(items: list, ignore_case: bool) -> tuple[frozenset[str], bool]:
    """The fixed strings a sequence starts with, and whether they are the whole sequence (False
    when an anchor, a repeat or too many alternatives stopped the walk first)."""
    out: frozenset[str] = frozenset({""})
    for op, arg in items:
        chars = _chars(op, arg, ignore_case)
        if chars is None:
            chars = _exact_node(op, arg, ignore_case)
        if chars is None:
            return out, False
        grown = frozenset(s + c for s in out for c in chars)
        if len(grown) > MAX_SET:
            return out, False
        out = grown
    return out, True


def _leading_seq(items: list, ignore_case: bool) -> frozenset[str] | None:
    out, _whole = _fixed_start(items, ignore_case)
    return out if all(out) else None


def _exact_seq(items: list, ignore_case: bool) -> frozenset[str] | None:
    out, whole = _fixed_start(items, ignore_case)
    return out if whole and all(out) else None


def _node(op: Any, arg: Any, ignore_case: bool) -> frozenset[str] | None:
    """Literals required by a compound node (a group, a repeat, an alternation)."""
    if op is C.SUBPATTERN:
        _group, add_flags, del_flags, body = arg
        case = (ignore_case or bool(add_flags & re.IGNORECASE)) and not bool(del_flags & re.IGNORECASE)
        if case != ignore_case:
            return None  # a scoped case change: not worth the bookkeeping
        return _seq(list(body), ignore_case)
    if op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
        low, _high, body = arg
        return _seq(list(body), ignore_case) if low >= 1 else None
    if op is getattr(C, "ATOMIC_GROUP", None):
        return _seq(list(arg), ignore_case)
    if op is C.BRANCH:
        _unused, branches = arg
        union: set[str] = set()
        for branch in branches:
            found = _seq(list(branch), ignore_case)
            if found is None:
                return None  # one branch can match without fixed text: so can the whole
            union |= found
        return frozenset(union)
    return None  # lookarounds, backreferences, conditionals, classes, ANY: nothing certain


def literal_alternation(literals: frozenset[str] | set[str], ignore_case: bool = False) -> str:
    """One Rust-regex alternation of escaped literals (longest first: no effect on a yes/no
    search, but it keeps the string stable for caching)."""
    body = "|".join(_escape(s) for s in sorted(literals, key=lambda s: (-len(s), s)))
    return f"(?i:{body})" if ignore_case else body


def _escape(text: str) -> str:
    return "".join("\\" + ch if ch in _META else ch for ch in text)
