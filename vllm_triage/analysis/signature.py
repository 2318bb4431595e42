"""Normalised error signatures: the same failure on another node, rank, day or request compares
equal. Numbers, sizes, addresses, pids, ranks, paths, ids and timestamps are masked; rapidfuzz
scores what remains."""

from __future__ import annotations

import hashlib
import re

from rapidfuzz import fuzz

from vllm_triage.ingest.prefixes import strip_ansi, strip_prefixes

_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<uuid>"),
    (re.compile(r"\b(?:chatcmpl|cmpl|embd|req|resp)-[0-9A-Za-z-]{6,}"), "<request-id>"),
    (re.compile(r"\bsha256:[0-9a-f]{12,64}\b"), "<digest>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"\b[0-9a-f]{16,}\b"), "<hex>"),
    (re.compile(r"\d{4}-\d\d-\d\d[T ][\d:.,]+(?:Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r"\b\d\d-\d\d \d\d:\d\d:\d\d\b"), "<time>"),
    (re.compile(r"(?:[A-Za-z]:)?(?:[\\/][\w.@+~-]+){2,}[\\/]?"), "<path>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:[KMGT]i?B|bytes)\b"), "<size>"),
    (re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b"), "<ip>"),
    (re.compile(r"\b\d+(?:\.\d+)*\b"), "<n>"),
    (re.compile(r"\s+"), " "),
)


def normalise(message: str) -> str:
    """The message with every run-specific value masked."""
    # The one prefix grammar (the LogFrame's): a pasted raw line and a parsed message compare equal.
    text = strip_prefixes(strip_ansi(message.strip()))
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return text.strip()[:400]


def signature(category: str | None, message: str | None) -> str:
    """`category | normalised message`: the failure's identity across runs."""
    return f"{category or 'none'} | {normalise(message or '')}"


def signature_hash(sig: str) -> str:
    return hashlib.sha256(sig.encode("utf-8")).hexdigest()[:16]


def similarity(a: str, b: str) -> float:
    """0..1; token order does not matter (ranks print the same words in another order)."""
    if not a and not b:
        return 1.0
    return fuzz.token_sort_ratio(a, b) / 100.0
