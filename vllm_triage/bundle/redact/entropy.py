"""The leak scan's second opinion: random-looking values of keys that sound secret.

The [[secret]] rules decide by names.toml, word by word (`HF_TOKEN` holds a token, `TOKENIZERS`
does not). A second opinion must fail differently: this one looks for the keywords inside any
key, without word splitting (`MYAPPTOKEN`, `dbpass`, `x_pwd`), in the manner of detect-secrets'
KeywordDetector, and accepts a value only when it reads like a secret — long enough and with the
character entropy of random text. It only ever fails an output (exit 1); it never redacts.

detect-secrets itself was evaluated for this (1.5.0 installs here) and not taken: its plugins
scan about 0.8 MB/s (a 100 MB log would take two minutes more) and it brings requests, urllib3,
certifi, idna and charset-normalizer into an offline tool.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator

from vllm_triage.bundle.redact.rules import looks_like_path

# Keywords of secret-holding keys, matched inside a key (lower-cased), not as whole words.
KEYWORDS = (
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "apikey",
    "api_key",
    "api-key",
    "accesskey",
    "access_key",
    "privatekey",
    "private_key",
    "credential",
    "auth",
)
# keyword … [:=] value, JSON/YAML/env/ini alike; the keyword may not be followed by a lower-case
# letter (`tokenizer`, `tokens`, `authors` are other words); the value is one run of token characters.
# Anchored on the keyword, every part bounded (stdlib `re` has no timeout): a line of a million
# keywords costs a million short attempts, never a quadratic scan.
_PAIR = re.compile(
    r"(?i:"
    + "|".join(re.escape(k) for k in KEYWORDS)
    + r""")(?![a-z])[A-Za-z0-9_.-]{0,64}["']?[ \t]{0,16}[:=][ \t]{0,16}["']?"""
    + r"""(?P<value>[A-Za-z0-9+/=_.~-]{16,512})"""
)
MIN_BITS_PER_CHAR = 3.5  # hex of 32 is ~3.9, base62 of 20 ~4.1, `oidc-provider-2` 3.4
_HAS_DIGIT = re.compile(r"[0-9]")
_HAS_LETTER = re.compile(r"[A-Za-z]")


def entropy(value: str) -> float:
    """Shannon entropy of the value's characters, in bits per character."""
    counts = Counter(value)
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def random_looking(value: str) -> bool:
    return (
        not looks_like_path(value)
        and bool(_HAS_DIGIT.search(value))
        and bool(_HAS_LETTER.search(value))
        and entropy(value) >= MIN_BITS_PER_CHAR
        and not value.replace(".", "").isdigit()
    )


HINTS = tuple(sorted({k.lower() for k in KEYWORDS}))
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")


def suspects(text: str, positions: Iterable[int]) -> Iterator[tuple[int, int]]:
    """(start, end) of random-looking values of secret-sounding keys; `positions`: where a keyword
    (HINTS, any case) starts in text. The pattern is tried only there, anchored."""
    seen: set[int] = set()
    for at in positions:
        match = _PAIR.match(text, at)
        if match is None or match.start("value") in seen:
            continue
        seen.add(match.start("value"))
        if random_looking(match.group("value")):
            yield match.span("value")
