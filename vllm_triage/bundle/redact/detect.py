"""Finding secrets and site identifiers in a block of text: shared by redaction and the leak scan.

A find is a span of the block plus what it is. Overlapping secret finds are merged into their
union (redact more rather than leave half a key behind); a mask never overlaps a secret.
Placeholders already in the text (`<redacted:…>`, `<masked:…>`) are blanked before matching so no
rule ever reads into one — re-redacting an output, or leak-scanning it, finds nothing there.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import regex

from vllm_triage.bundle.redact import disguise as redact_disguise
from vllm_triage.bundle.redact.rules import MaskRule, RedactRules, SecretRule

PLACEHOLDER = regex.compile(r"<(?:redacted|masked):[a-z0-9-]+(?::[0-9]+)?>")
# Generous: the patterns are linear, a block is at most a few tens of MB. A timeout means a
# pathological line; the caller then falls back to line-by-line scanning.
BLOCK_TIMEOUT_S = 30.0
LINE_TIMEOUT_S = 1.0


@dataclass
class Find:
    start: int
    end: int
    rule: str
    kind: str
    priority: int
    category: str  # "secret" | "mask"


def neutralise(text: str) -> str:
    """The text with every placeholder's inside blanked, offsets unchanged."""
    if "<redacted:" not in text and "<masked:" not in text:
        return text
    return PLACEHOLDER.sub(lambda m: "<" + "_" * (len(m.group()) - 2) + ">", text)


class Classifier:
    """Names the kind of a secret value by its shape (hf_… → hf-token), with a cache."""

    def __init__(self, rules: RedactRules) -> None:
        self._shape_rules = [r for r in rules.secrets if r.shape]
        self._cache: dict[str, str | None] = {}

    def kind_of(self, value: str) -> str | None:
        if value in self._cache:
            return self._cache[value]
        found = None
        for rule in self._shape_rules:
            try:
                match = rule.compiled.search(value, timeout=LINE_TIMEOUT_S)
            except TimeoutError:
                continue
            if match and match.span("value") == (0, len(value)):
                found = rule.kind
                break
        if len(self._cache) < 100_000:
            self._cache[value] = found
        return found


_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_ALNUM = _LOWER | frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_LOWER_OR_DIGIT = _LOWER | frozenset("0123456789")


def _name_word_at(text: str, start: int, end: int) -> bool:
    """Could text[start:end] be a whole word of a name as NamePolicy splits names (at `_-./`,
    spaces and camelCase humps)? Looser than the split, never stricter: a false yes only costs
    a pattern run, a false no would hide a secret."""
    if start > 0 and text[start - 1] in _ALNUM and text[start] in _LOWER:
        return False  # `apikey`'s `key`, `mytoken`: inside a word (compounds are hints of their own)
    return end >= len(text) or text[end] not in _LOWER_OR_DIGIT or text[end - 1] not in _ALNUM


class Scope:
    """One block of text and, per set of hints, the line ranges worth searching."""

    def __init__(self, text: str) -> None:
        self.text = text
        lowered = text.lower()
        # lower() may change the length of a few non-ASCII characters; offsets would then lie.
        self._lowered = lowered if len(lowered) == len(text) else None
        self._positions: dict[tuple[tuple[str, ...], bool], list[int]] = {}
        self._segments: dict[tuple[tuple[str, ...], bool, bool], list[tuple[int, int]]] = {}

    def ranges(
        self, hints: tuple[str, ...], multiline: bool, whole_words: bool = False
    ) -> list[tuple[int, int]]:
        if not hints or self._lowered is None:
            return [(0, len(self.text))]
        key = (hints, multiline, whole_words)
        if key not in self._segments:
            self._segments[key] = self._hinted(self._hint_positions(hints, whole_words), multiline)
        return self._segments[key]

    def hint_positions(self, hints: tuple[str, ...]) -> list[int]:
        """Where any of the (lower-case) hints starts, in any case."""
        if self._lowered is None:
            # lower() moved offsets (a few non-ASCII characters): a case-blind search instead.
            pattern = regex.compile("|".join(regex.escape(h) for h in hints), regex.IGNORECASE | regex.V0)
            return sorted({m.start() for m in pattern.finditer(self.text, overlapped=True)})
        return self._hint_positions(hints, False)

    def _hint_positions(self, hints: tuple[str, ...], whole_words: bool) -> list[int]:
        key = (hints, whole_words)
        if key not in self._positions:
            lowered = self._lowered
            assert lowered is not None
            text = self.text
            positions: list[int] = []
            for hint in hints:
                at = lowered.find(hint)
                while at >= 0:
                    if not whole_words or _name_word_at(text, at, at + len(hint)):
                        positions.append(at)
                    at = lowered.find(hint, at + 1)
            self._positions[key] = sorted(positions)
        return self._positions[key]

    def _hinted(self, positions: list[int], multiline: bool) -> list[tuple[int, int]]:
        text = self.text
        segments: list[tuple[int, int]] = []
        # A hint inside the current segment adds nothing, except (multi-line rules) one on the
        # segment's last line: its match may run into the line after (`login` then `password`).
        covered = 0
        for at in positions:
            if at < covered:
                continue
            start = text.rfind("\n", 0, at) + 1
            # A multi-line rule's hint may sit on its first line; the match runs into the next.
            end = at
            for _ in range(2 if multiline else 1):
                newline = text.find("\n", end)
                end = len(text) if newline < 0 else newline + 1
            if segments and start <= segments[-1][1]:
                segments[-1] = (segments[-1][0], max(end, segments[-1][1]))
            else:
                segments.append((start, end))
            # (No line after the text's end: then nothing is left to extend.)
            covered = text.rfind("\n", 0, end - 1) + 1 if multiline and end < len(text) else end
        return segments

    def word_positions(self, hints: tuple[str, ...], whole_words: bool) -> list[int] | None:
        """Where a hint starts (None when lower() moved offsets and positions cannot be trusted)."""
        if not hints or self._lowered is None:
            return None
        return self._hint_positions(hints, whole_words)

    def matches(self, rule: SecretRule | MaskRule, timeout: float) -> Iterator[regex.Match]:
        whole_words = isinstance(rule, SecretRule) and rule.whole_words
        for start, end in self.ranges(rule.hints, rule.multiline, whole_words):
            yield from rule.compiled.finditer(self.text, start, end, timeout=timeout)


def secret_finds(
    scope: Scope, rules: RedactRules, chosen: Iterable[SecretRule], classifier: Classifier, timeout: float
) -> list[Find]:
    """Every accepted match of the chosen secret rules (text already neutralised)."""
    text = scope.text
    finds: list[Find] = []
    for rule in chosen:
        gated = rule.gate == "name"
        matches = _gated_matches(scope, rules, rule, timeout) if gated else _plain(scope, rule, timeout)
        for match, name_kind in matches:
            start, end = match.span("value")
            if start < 0 or start == end:
                continue
            value = text[start:end]
            if not rule.multiline and "\n" in value:
                continue  # a pattern that slipped across a line end: never trust it
            if rules.is_trivial(value):
                continue
            kind = rule.kind
            if kind == "auto":
                kind = classifier.kind_of(value) or name_kind or "secret"
            finds.append(Find(start, end, rule.id, kind, rule.priority, "secret"))
    return finds


def _plain(scope: Scope, rule: SecretRule, timeout: float) -> Iterator[tuple[regex.Match, str | None]]:
    for match in scope.matches(rule, timeout):
        yield match, None
        for more in _continued(scope.text, rule, match, timeout):
            yield more, None


def _continued(text: str, rule: SecretRule, match: regex.Match, timeout: float) -> Iterator[regex.Match]:
    """The next values of an accepted match (a rule's `continuation`: the next element of a list,
    the next key of `--api-key K1 K2`), each matched where the last ended, past the lines the
    hints chose if need be. (A `\\G` branch in the pattern itself would do it, but it makes the
    `regex` module try the pattern at every position: 2 s a MB instead of a millisecond.)"""
    if rule.continuation_compiled is None:
        return
    last = match.end()
    while (more := rule.continuation_compiled.match(text, last, timeout=timeout)) is not None:
        if more.end() <= last:
            return
        yield more
        last = more.end()


# A name-gated match whose name holds no secret is searched again from inside its value, this many
# times the searched text at most (then the block counts as timed out: the caller goes line by line
# and, failing that, replaces the line whole).
RESCAN_BUDGET = 4


def _gated_matches(
    scope: Scope, rules: RedactRules, rule: SecretRule, timeout: float
) -> Iterator[tuple[regex.Match, str]]:
    """Matches of a name-gated rule whose name holds a secret, with the name's kind.

    A match whose name holds none (`"message": "…"`, `Environment=…`, `args=…`) is not consumed
    whole: its value may hold a pair whose name does (`"message": "args: {'api_key': '…'}"`,
    `Environment='OPENAI_API_KEY=…'`), so the search goes on from where the value starts when a
    secret name's word stands in it."""
    text = scope.text
    names = rules.names
    positions = scope.word_positions(rule.hints, rule.whole_words)
    for start, end in scope.ranges(rule.hints, rule.multiline, rule.whole_words):
        budget = RESCAN_BUDGET * (end - start) + 4096
        position = start
        while position <= end:
            match = rule.compiled.search(text, position, end, timeout=timeout)
            if match is None:
                break
            kind = names.secret_kind(match.group("name") or "")
            if kind is not None:
                yield match, kind
                position = max(match.end(), position + 1)
                for more in _continued(text, rule, match, timeout):
                    yield more, kind
                    position = max(position, more.end())
                continue
            inner = match.start("value") if match.start("value") >= 0 else match.end()
            if inner > match.start() and _hint_within(positions, inner, match.end()):
                budget -= match.end() - inner
                if budget < 0:
                    raise TimeoutError("rescans of a name-gated rule over budget")
                position = max(inner, position + 1)
            else:
                position = max(match.end(), position + 1)


def _hint_within(positions: list[int] | None, start: int, end: int) -> bool:
    if positions is None:
        return True  # offsets unknown (lower() changed the length): look, the budget bounds it
    index = bisect.bisect_left(positions, start)
    return index < len(positions) and positions[index] < end


def disguised_finds(
    scope: Scope,
    rules: RedactRules,
    chosen: list[SecretRule],
    classifier: Classifier,
    wraps: redact_disguise.Wraps,
    timeout: float,
) -> list[Find]:
    """Secrets base64-encoded or broken across a line wrap (redact_disguise), as finds."""

    def kinds_in(payloads: str) -> list[tuple[int, str]]:
        return [(f.start, f.kind) for f in secret_finds(Scope(payloads), rules, chosen, classifier, timeout)]

    text = scope.text
    finds = [
        Find(start, end, "base64", kind, 30, "secret")
        for start, end, kind in redact_disguise.base64_spans(text, kinds_in)
    ]
    finds += [
        Find(start, end, "wrapped-token", kind, 30, "secret")
        for start, end, kind in wraps.spans(text, lambda rule: scope.ranges(rule.hints, False))
    ]
    return finds


def mask_finds(scope: Scope, chosen: Iterable[MaskRule], timeout: float) -> list[Find]:
    text = scope.text
    finds: list[Find] = []
    for rule in chosen:
        for match in scope.matches(rule, timeout):
            start, end = match.span("value")
            if start < 0 or start == end or "\n" in text[start:end] or rule.keeps(text[start:end]):
                continue
            finds.append(Find(start, end, rule.id, rule.kind, rule.priority, "mask"))
    return finds


def literal_finds(
    text: str, values: dict[str, str], before: frozenset[str], after: frozenset[str], rule: str, category: str
) -> list[Find]:
    """Occurrences of values already known to be secret (or a site's name) anywhere in the text,
    not inside a longer word (`before`/`after`: characters that may not touch the value).
    Plain substring search: a handful of known values, searched fast, never backtracking. Many
    values (a log that printed thousands of keys) are looked up position by position instead: one
    `str.find` pass per value made that quadratic (12,000 lines of `--api-key K1 K2`, 2 MB,
    48,000 values: 170 s of CPU for `redact`)."""
    if not values:
        return []
    lengths = sorted({len(value) for value in values if value})
    if len(values) > FIND_PASSES_PER_LENGTH * len(lengths):
        return _indexed_finds(text, values, lengths, before, after, rule, category)
    finds: list[Find] = []
    for value, kind in values.items():
        if not value:
            continue
        at = text.find(value)
        while at >= 0:
            end = at + len(value)
            if (at == 0 or text[at - 1] not in before) and (end == len(text) or text[end] not in after):
                finds.append(Find(at, end, rule, kind, 0, category))
            at = text.find(value, at + 1)
    return finds


# One `str.find` pass costs ~0.3 ns a character per value, a set lookup at each position ~0.35 µs
# a character per distinct value length: past ~1,000 values a length, the lookups are cheaper.
FIND_PASSES_PER_LENGTH = 1000


def _indexed_finds(
    text: str,
    values: dict[str, str],
    lengths: list[int],
    before: frozenset[str],
    after: frozenset[str],
    rule: str,
    category: str,
) -> list[Find]:
    """literal_finds' answer, the same occurrences (overlapping ones too), in one pass over the
    text: at each position where some value may start, each value length is looked up."""
    firsts = {value[0] for value in values if value}
    size = len(text)
    finds: list[Find] = []
    for at, char in enumerate(text):
        if char not in firsts or (at > 0 and text[at - 1] in before):
            continue
        for length in lengths:
            end = at + length
            if end > size:
                break
            kind = values.get(text[at:end])
            if kind is not None and (end == size or text[end] not in after):
                finds.append(Find(at, end, rule, kind, 0, category))
    return finds


def resolve(text: str, secrets: list[Find], masks: list[Find], classifier: Classifier) -> list[Find]:
    """Non-overlapping finds in text order: secret finds merged into their unions, then the masks
    that touch no secret and no stronger mask."""
    merged: list[Find] = []
    for find in sorted(secrets, key=lambda f: (f.start, -f.end)):
        if merged and find.start < merged[-1].end:
            last = merged[-1]
            best = last if last.priority >= find.priority else find
            merged[-1] = Find(
                last.start, max(last.end, find.end), best.rule, best.kind, best.priority, "secret"
            )
        else:
            merged.append(find)
    for index, find in enumerate(merged):
        # A union (or a value found by a context rule) is named by its shape when it has one.
        shaped = classifier.kind_of(text[find.start : find.end])
        if shaped and shaped != find.kind:
            merged[index] = Find(find.start, find.end, find.rule, shaped, find.priority, "secret")
    # Taken spans never overlap, so a sorted list of them answers "does this overlap?" by bisection.
    starts = [f.start for f in merged]
    ends = [f.end for f in merged]
    accepted_masks: list[Find] = []
    for find in sorted(masks, key=lambda f: (-f.priority, f.start, -(f.end - f.start))):
        index = bisect.bisect_right(starts, find.start)
        if index > 0 and ends[index - 1] > find.start:
            continue
        if index < len(starts) and starts[index] < find.end:
            continue
        starts.insert(index, find.start)
        ends.insert(index, find.end)
        accepted_masks.append(find)
    return sorted(merged + accepted_masks, key=lambda f: f.start)


def line_numbers(text: str, finds: list[Find], first_line: int) -> list[int]:
    """The 1-based line of each find's start (finds in text order)."""
    lines = []
    line = first_line
    position = 0
    for find in finds:
        line += text.count("\n", position, find.start)
        position = find.start
        lines.append(line)
    return lines
