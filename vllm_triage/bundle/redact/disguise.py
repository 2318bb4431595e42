"""Secrets in disguise: base64-encoded, or broken across a line wrap.

The [[secret]] patterns read a token as it is written. Two ordinary shapes hide it from them:

- base64: a Kubernetes Secret's `data:`, a Basic header built by hand, a `config.json` pasted
  encoded. Every run of base64 long enough to hold a token is decoded; when the decoded text is
  text (not the bytes of a hash or an id) it goes through the secret rules, and a run whose payload
  holds a secret is a secret itself (`<redacted:hf-token-base64:1>`).
- a wrap: a terminal or a chat window breaks a long `hf_…` across two lines, a JSON string holds
  it with a `\\n` escape in the middle. A word that starts with a token prefix (rules/redact
  tokens.toml `prefixes`) and ends a line is joined with the word that starts the next; so is the
  word before a line that opens with a long run of token characters (the wrap may cut the prefix
  itself: `gl` / `pat-…`). When the join has the token's shape, the whole span is the secret.

Both are plain-`re` scans with single character classes (linear, no backtracking) plus a little
Python per candidate, shared by the redaction and the leak scan.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import re
from collections.abc import Callable, Iterable

from vllm_triage.bundle.redact.rules import SecretRule

# Long enough for the shortest token (AKIA + 16 → 28 base64 characters), short enough for a
# password of 18 bytes. Both alphabets: standard and URL-safe.
_B64_RUN = re.compile(r"[A-Za-z0-9+/_-]{24,}={0,2}")
_MAX_RUN = 64 * 1024  # a longer run is data (an embedded image), not a credential
# Between decoded payloads searched together: a blank line, which no single-line rule crosses.
_PAYLOAD_SEPARATOR = "\n\n"
_PRINTABLE = bytes(range(0x20, 0x7F)) + b"\t\n\r"
_LINE_BREAK = re.compile(r"\r?\n|\\r\\n|\\n")
# Token characters: a JWT and a ya29. token hold dots (a sentence's last dot is dropped below).
_TOKEN_RUN = re.compile(r"[A-Za-z0-9_.-]+")
_TOKEN_RUN_OR_NOTHING = re.compile(r"[A-Za-z0-9_.-]*")
_WHOLE_LINE_MIN = 8  # a line that is nothing but token characters, this long, is a token's middle
# A line that opens with a long run of token characters may continue a token whose prefix was cut
# by the wrap itself (`gl` / `pat-…`): a literal first character keeps these scans fast.
_OPENINGS = (re.compile(r"\n[A-Za-z0-9_.-]{16}"), re.compile(r"\\n[A-Za-z0-9_.-]{16}"))
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_MAX_WRAPPED_LINES = 8
# No token is longer: runs and joins stop there, so every scan here is bounded (stdlib `re` has no
# timeout, and `sk-.sk-.sk-…` must not make each start read to the end of the line).
_MAX_TOKEN = 1024

# (start, end, kind) of a disguised secret in the text searched.
Span = tuple[int, int, str]


def _decoded(run: str) -> str | None:
    """The text a base64 run stands for, or None when it is not base64 of text."""
    body = run.rstrip("=")
    urlsafe = "-" in body or "_" in body
    if urlsafe and ("+" in body or "/" in body):
        return None  # two alphabets mixed: a path or an identifier, not base64
    for skip in range(4):  # the run may start with a character or three that are not part of it
        piece = body[skip:]
        piece = piece[: len(piece) - len(piece) % 4] if len(piece) % 4 == 1 else piece
        try:
            data = (
                base64.urlsafe_b64decode(piece + "=" * (-len(piece) % 4))
                if urlsafe
                else base64.b64decode(piece + "=" * (-len(piece) % 4), validate=True)
            )
        except (binascii.Error, ValueError):
            continue
        # Text, not the bytes of a hash or an id: ASCII, and almost nothing but printable characters.
        if len(data) >= 12 and data.isascii() and len(data.translate(None, _PRINTABLE)) * 20 <= len(data):
            return data.decode("ascii")
    return None


def base64_spans(text: str, secrets_in: Callable[[str], Iterable[tuple[int, str]]]) -> list[Span]:
    """Runs of base64 whose decoded text holds a secret. `secrets_in(text)` gives (offset, kind)
    of the secrets in a text: it is called once with every decoded payload of the block, each on
    lines of its own, so a dump of a hundred thousand short runs costs one pass of the rules."""
    runs: list[tuple[int, int]] = []
    starts: list[int] = []
    payloads: list[str] = []
    length = 0
    for match in _B64_RUN.finditer(text):
        run = match.group()
        if len(run) > _MAX_RUN or (run.isalpha() and run.islower()):
            continue
        payload = _decoded(run)
        if payload is None:
            continue
        runs.append(match.span())
        starts.append(length)
        payloads.append(payload)
        length += len(payload) + len(_PAYLOAD_SEPARATOR)
    if not payloads:
        return []
    kinds: dict[int, str] = {}
    for offset, kind in secrets_in(_PAYLOAD_SEPARATOR.join(payloads)):
        kinds.setdefault(bisect.bisect_right(starts, offset) - 1, kind)
    return [(runs[i][0], runs[i][1], f"{kind}-base64") for i, kind in sorted(kinds.items())]


class Wraps:
    """Tokens of a known prefix broken across lines (real line breaks or JSON `\\n` escapes)."""

    def __init__(self, rules: Iterable[SecretRule], kind_of: Callable[[str], str | None]) -> None:
        # The lines to look at are those the shape rules search anyway (their hints are their
        # prefixes), so the hint positions are found once for both.
        self.rules = [r for r in rules if r.prefixes and not r.multiline]
        prefixes = sorted({p for r in self.rules for p in r.prefixes}, key=len, reverse=True)
        # What a wrap can leave of a prefix at a line's end (`g`, `gl`, `glp`, `glpa` of `glpat-`).
        self._fragments = frozenset(p[:k] for p in prefixes for k in range(1, len(p)))
        self._longest_fragment = max((len(f) for f in self._fragments), default=0)
        self._prefixes = tuple(prefixes)
        self._kind_of = kind_of
        # Where a word with a prefix starts; the run of token characters it begins is then read
        # once (many starts in one run, `sk-.sk-.sk-…`, must not each read it to its end).
        self._start = (
            re.compile(r"(?<![A-Za-z0-9_-])(?:" + "|".join(re.escape(p) for p in prefixes) + ")")
            if prefixes
            else None
        )

    def spans(self, text: str, ranges_of: Callable[[SecretRule], Iterable[tuple[int, int]]]) -> list[Span]:
        """Wrapped tokens in text; `ranges_of(rule)`: the parts of text that rule searches."""
        if self._start is None:
            return []
        found: dict[int, Span] = {}
        for rule in self.rules:
            for start, end in ranges_of(rule):
                position = start
                while (match := self._start.search(text, position, end)) is not None:
                    run = _TOKEN_RUN_OR_NOTHING.match(text, match.end())
                    run_end = run.end() if run else match.end()  # it matches "" at least
                    position = max(run_end, match.end())
                    # A word that reaches a line break, not too long to be a token.
                    if (
                        run_end - match.start() <= _MAX_TOKEN
                        and _LINE_BREAK.match(text, run_end) is not None
                        and match.start() not in found
                    ):
                        span = self._joined(text, match.start(), run_end)
                        if span is not None:
                            found[match.start()] = span
        for opening in _OPENINGS:
            for match in opening.finditer(text):
                brk = match.start() - (1 if match.start() > 0 and text[match.start() - 1] == "\r" else 0)
                start = brk
                while start > 0 and brk - start <= self._longest_fragment and text[start - 1] in _TOKEN_CHARS:
                    start -= 1
                # Only a cut prefix is looked at here (a whole one was found above): a base64 dump
                # of a million lines costs one short look back a line.
                if text[start:brk] in self._fragments and start not in found:
                    span = self._joined(text, start, brk)
                    if span is not None:
                        found[start] = span
        return sorted(found.values())

    def _joined(self, text: str, start: int, end: int) -> Span | None:
        combined = text[start:end]
        best: Span | None = None
        position = end
        for _ in range(_MAX_WRAPPED_LINES):
            brk = _LINE_BREAK.match(text, position)
            if brk is None:
                break
            word = _TOKEN_RUN.match(text, brk.end(), brk.end() + _MAX_TOKEN + 1)
            if word is None or len(combined) + len(word.group()) > _MAX_TOKEN:
                break
            if not (combined + word.group()).startswith(self._prefixes):
                break  # `gl` + `A1b2…` is no `glpat-…`: no shape to ask about
            after = word.end()
            whole = after == len(text) or _LINE_BREAK.match(text, after) is not None or text[after] == '"'
            if whole and len(word.group()) >= _WHOLE_LINE_MIN:
                # A line of nothing but token characters: the token's middle (or its end).
                combined += word.group()
                position = after
                kind = self._kind_of(combined)
                if kind:
                    best = (start, after, kind)
                continue
            # A word followed by more text: part of the token only when that makes the shape.
            if self._kind_of(combined) is None:
                piece = word.group()
                for candidate in (piece, piece.rstrip(".")):
                    kind = self._kind_of(combined + candidate) if candidate else None
                    if kind:
                        best = (start, brk.end() + len(candidate), kind)
                        break
            break
        return best
