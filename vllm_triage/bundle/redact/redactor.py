"""Redaction: secrets become stable pseudonyms, optionally host names, IPs and user names too.

The library API (used by `vllm-triage redact` and by report rendering):

    redactor = Redactor(masks=MaskOptions(hosts=True))
    for text in texts:            # pass 1: learn every secret, so numbering is stable and a
        redactor.learn(text)      # secret seen in one file is also replaced where it stands bare
    clean = redactor.redact(text, file="env/vllm.env")   # pass 2: replace; records Redactions

or, for one string, `redact_text(text)`. The same secret gets the same placeholder everywhere
(`<redacted:hf-token:1>`), so "the token in the env file is the one in the curl" survives.
The redactions recorded say what kind, where and which placeholder — never the secret itself.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from vllm_triage.bundle.redact import detect, prefilter
from vllm_triage.bundle.redact import rules as redact_rules
from vllm_triage.bundle.redact.detect import Classifier, Find
from vllm_triage.bundle.redact.disguise import Wraps
from vllm_triage.bundle.redact.rules import MASK_FLAGS, RedactRules
from vllm_triage.core.errors import RuleError

MAX_RECORDED = 10_000  # detailed entries kept; counts are always complete
MAX_KEPT_FINDS = 1_000_000  # finds of the learning pass kept for the writing pass (memory bound)
# Short texts remembered as learned / found clean (a payload's strings; a log's text is not kept).
MAX_MEMO_TEXTS = 100_000
MAX_MEMO_CHARS = 4096
# A known value is replaced elsewhere only where it stands as a whole word (or a whole host name:
# `gpu-node-1` is not swept out of `gpu-node-17`).
_WORD = frozenset(string.ascii_letters + string.digits)
_HOST_BEFORE = _WORD | frozenset("_.-")
_HOST_AFTER = _WORD | frozenset("_-")
_LINE_BREAKS = re.compile(r"\r?\n")


@dataclass(frozen=True)
class MaskOptions:
    hosts: bool = False
    ips: bool = False
    users: bool = False

    def enabled(self, kind: str) -> bool:
        return bool(getattr(self, MASK_FLAGS[kind]))

    def to_json(self) -> dict:
        return {"mask_hosts": self.hosts, "mask_ips": self.ips, "mask_users": self.users}


@dataclass(frozen=True)
class Redaction:
    category: str  # secret | mask
    kind: str
    rule: str
    file: str
    line: int
    placeholder: str

    def to_json(self) -> dict:
        return {
            "category": self.category,
            "kind": self.kind,
            "rule": self.rule,
            "file": self.file,
            "line": self.line,
            "placeholder": self.placeholder,
        }


def _sweepable_secret(value: str) -> bool:
    # Replaced wherever it appears only when it cannot be an ordinary word of a log.
    return len(value) >= 8 and "\n" not in value and (not value.isalpha() or len(value) >= 16)


def _sweepable_host(value: str) -> bool:
    return len(value) >= 4 and any(c.isdigit() or c in "-." for c in value)


class Redactor:
    """Finds and replaces secrets (and enabled masks) with placeholders stable across calls."""

    def __init__(
        self,
        rules: RedactRules | None = None,
        *,
        masks: MaskOptions = MaskOptions(),
        disabled: Iterable[str] = (),
        max_recorded: int = MAX_RECORDED,
    ) -> None:
        self.rules = rules or redact_rules.builtin()
        self.masks = masks
        self.disabled = sorted(set(disabled))
        known_ids = {r.id for r in self.rules.secrets} | {r.id for r in self.rules.masks}
        unknown = set(self.disabled) - known_ids
        if unknown:
            raise RuleError(f"--disable: no redaction rule named {', '.join(sorted(unknown))}")
        self._secret_rules = [r for r in self.rules.secrets if r.id not in self.disabled]
        self._mask_rules = [
            r for r in self.rules.masks if masks.enabled(r.kind) and r.id not in self.disabled
        ]
        self._sweeping_masks = {r.id for r in self._mask_rules if r.sweep}
        self._classifier = Classifier(self.rules)
        self._kept_finds: dict[bytes, tuple[tuple[Find, ...], tuple[Find, ...]]] = {}
        self._kept_count = 0
        self._wraps = Wraps(self._secret_rules, self._classifier.kind_of)
        self._placeholder_of: dict[str, str] = {}
        self._kind_of: dict[str, str] = {}
        self._numbers: Counter[tuple[str, str]] = Counter()
        self._sweep_secrets: dict[str, str] = {}
        self._sweep_hosts: dict[str, str] = {}
        self._literals: list[str] = []
        self._whole: dict[str, str] = {}  # declared values → placeholder, replaced when a text is one
        # Texts the writing pass found nothing in, while no placeholder was added since: a payload
        # repeats its phase names, rule ids and paths hundreds of times (a fleet scan's rows).
        self._clean: set[str] = set()
        self._clean_at = 0
        # Texts the learning pass has read: learning one twice adds nothing.
        self._learned: set[str] = set()
        # Where in a block the rules can match at all (prefilter.py): built once per rule set.
        self.prefilter = prefilter.Prefilter(prefilter.triggers_of(self._secret_rules, self._mask_rules))
        self.max_recorded = max_recorded
        self.redactions: list[Redaction] = []
        self.unrecorded = 0
        self.counts: Counter[tuple[str, str, str]] = Counter()  # (file, category, kind)
        self.occurrences: Counter[str] = Counter()  # placeholder → times written
        self.files_of: dict[str, set[str]] = {}

    # ------------------------------------------------------------------ the two passes

    def learn(self, text: str) -> None:
        """Pass 1: give every secret (and mask) in the text its placeholder, without replacing."""
        if text in self._learned:
            return
        if len(text) <= MAX_MEMO_CHARS and len(self._learned) < MAX_MEMO_TEXTS:
            self._learned.add(text)
        for find in self._finds(text, sweep=False):
            self._placeholder(text[find.start : find.end], find)

    def declare(self, value: str, kind: str) -> str:
        """A value known to be secret from where it stands (a payload's secret-named field, whose
        string holds the value alone): its placeholder. It is replaced where a text is nothing
        else, and, when long enough to be no ordinary word, wherever it stands (like any secret)."""
        placeholder = self._placeholder(value, Find(0, len(value), "secret-field", kind, 0, "secret"))
        self._whole[value] = placeholder
        return placeholder

    def kind_of_value(self, value: str) -> str | None:
        """The kind a value's shape gives it (hf_… → hf-token), if any."""
        return self._classifier.kind_of(value)

    def redact(self, text: str, file: str = "", first_line: int = 1) -> str:
        """Pass 2: the text with every find replaced; each replacement is recorded."""
        whole = self._whole.get(text) if self._whole else None
        if whole is not None:
            self._record(Redaction("secret", self._kind_of[whole], "secret-field", file, first_line, whole))
            return whole
        if len(self._placeholder_of) != self._clean_at:
            # A new placeholder (a secret found while writing) may be swept from any text.
            self._clean.clear()
            self._clean_at = len(self._placeholder_of)
        if text in self._clean:
            return text
        finds = self._finds(text, sweep=True)
        if not finds:
            if (
                len(text) <= MAX_MEMO_CHARS
                and len(self._clean) < MAX_MEMO_TEXTS
                and len(self._placeholder_of) == self._clean_at
            ):
                self._clean.add(text)
            return text
        pieces: list[str] = []
        position = 0
        for find, line in zip(finds, detect.line_numbers(text, finds, first_line), strict=True):
            placeholder = self._placeholder(text[find.start : find.end], find)
            pieces.append(text[position : find.start])
            pieces.append(placeholder)
            if find.rule == "wrapped-token":
                # The line breaks inside a wrapped token stay, so every later line keeps its number.
                pieces.extend(_LINE_BREAKS.findall(text, find.start, find.end))
            position = find.end
            # A value already named by the other category keeps its first placeholder, and its category.
            category = "secret" if placeholder.startswith("<redacted:") else "mask"
            self._record(Redaction(category, self._kind_of[placeholder], find.rule, file, line, placeholder))
        pieces.append(text[position:])
        return "".join(pieces)

    def learn_text(self, text: str) -> None:
        """Pass 1 over a text of any size: only the windows the prefilter finds are read by the
        rules (the same finds as `learn`, at the prefilter's speed instead of the rules')."""
        for window in self._windows(text):
            self.learn(window)

    def _windows(self, text: str) -> list[str]:
        if len(text) < 64 * 1024:
            return [text]
        data = text.encode("utf-8", "replace")
        windows, _cut, _found = self.prefilter.windows(data, self.sweep_literals(), final=True)
        return [data[start:end].decode("utf-8") for start, end in windows]

    # ------------------------------------------------------------------ what the report needs

    def sweep_literals(self) -> list[str]:
        """The values replaced wherever they stand (known secrets, and hosts when masked): the
        prefilter must treat each as a trigger, since a line holding one needs the rules."""
        if len(self._literals) != len(self._sweep_secrets) + len(self._sweep_hosts):
            self._literals = [*self._sweep_secrets, *self._sweep_hosts]
        return self._literals

    def known_secrets(self) -> set[str]:
        """Secret values seen (in memory only, for the leak scan of binary files and of the output)."""
        return set(self._sweep_secrets)

    def pseudonyms(self) -> list[dict]:
        """Every placeholder written: its kind, how often and in which files (never the value)."""
        return [
            {
                "placeholder": placeholder,
                "category": "secret" if placeholder.startswith("<redacted:") else "mask",
                "kind": self._kind_of[placeholder],
                "occurrences": count,
                "files": sorted(self.files_of.get(placeholder, ())),
            }
            for placeholder, count in sorted(self.occurrences.items(), key=lambda item: _order(item[0]))
        ]

    # ------------------------------------------------------------------ internals

    def _placeholder(self, value: str, find: Find) -> str:
        placeholder = self._placeholder_of.get(value)
        if placeholder is not None:
            return placeholder
        prefix = "redacted" if find.category == "secret" else "masked"
        self._numbers[(prefix, find.kind)] += 1
        placeholder = f"<{prefix}:{find.kind}:{self._numbers[(prefix, find.kind)]}>"
        self._placeholder_of[value] = placeholder
        self._kind_of[placeholder] = find.kind
        if find.category == "secret" and _sweepable_secret(value):
            self._sweep_secrets[value] = find.kind
        elif find.rule in self._sweeping_masks and _sweepable_host(value):
            self._sweep_hosts[value] = find.kind
        return placeholder

    def _record(self, entry: Redaction) -> None:
        self.counts[(entry.file, entry.category, entry.kind)] += 1
        self.occurrences[entry.placeholder] += 1
        self.files_of.setdefault(entry.placeholder, set()).add(entry.file)
        if len(self.redactions) < self.max_recorded:
            self.redactions.append(entry)
        else:
            self.unrecorded += 1

    def _finds(self, text: str, sweep: bool) -> list[Find]:
        scan = detect.neutralise(text)
        try:
            return self._finds_in(scan, sweep, detect.BLOCK_TIMEOUT_S, remember=True)
        except TimeoutError:
            return self._finds_by_line(scan, sweep)

    def _rule_finds(
        self, scope: detect.Scope, timeout: float, remember: bool
    ) -> tuple[list[Find], list[Find]]:
        """The finds of the rules in one block. The writing pass reads the very blocks the
        learning pass read: what the rules found then is kept (by the block's digest) instead of
        running every pattern a second time."""
        key = (
            hashlib.blake2b(scope.text.encode("utf-8", "surrogatepass"), digest_size=20).digest()
            if remember
            else b""
        )
        kept = self._kept_finds.get(key) if remember else None
        if kept is not None:
            return list(kept[0]), list(kept[1])
        secrets = detect.secret_finds(scope, self.rules, self._secret_rules, self._classifier, timeout)
        masks = detect.mask_finds(scope, self._mask_rules, timeout)
        if remember and self._kept_count + len(secrets) + len(masks) <= MAX_KEPT_FINDS:
            self._kept_finds[key] = (tuple(secrets), tuple(masks))
            self._kept_count += len(secrets) + len(masks)
        return secrets, masks

    def _finds_in(self, text: str, sweep: bool, timeout: float, remember: bool = False) -> list[Find]:
        scope = detect.Scope(text)
        secrets, masks = self._rule_finds(scope, timeout, remember)
        if sweep:
            # Disguised secrets are looked for when writing only: nothing else refers to them, and
            # the learning pass stays cheap.
            secrets += detect.disguised_finds(
                scope, self.rules, self._secret_rules, self._classifier, self._wraps, timeout
            )
            secrets += detect.literal_finds(text, self._sweep_secrets, _WORD, _WORD, "known-secret", "secret")
            masks += detect.literal_finds(
                text, self._sweep_hosts, _HOST_BEFORE, _HOST_AFTER, "known-host", "mask"
            )
        return detect.resolve(text, secrets, masks, self._classifier)

    def _finds_by_line(self, text: str, sweep: bool) -> list[Find]:
        """Fallback when a block took too long: line by line; a line that still times out is
        replaced whole (fail closed: an unscanned line may hold anything)."""
        finds: list[Find] = []
        offset = 0
        for line in text.splitlines(keepends=True):
            body = line.rstrip("\r\n")
            try:
                for find in self._finds_in(body, sweep, detect.LINE_TIMEOUT_S):
                    finds.append(
                        Find(
                            find.start + offset,
                            find.end + offset,
                            find.rule,
                            find.kind,
                            find.priority,
                            find.category,
                        )
                    )
            except TimeoutError:
                if body:
                    finds.append(
                        Find(offset, offset + len(body), "unscanned-line", "unscanned-line", 0, "secret")
                    )
            offset += len(line)
        return finds


def _order(placeholder: str) -> tuple[str, str, int]:
    prefix, kind, number = placeholder.strip("<>").rsplit(":", 2)
    return prefix, kind, int(number)


def redact_text(
    text: str, *, masks: MaskOptions = MaskOptions(), rules: RedactRules | None = None, file: str = ""
) -> tuple[str, list[Redaction]]:
    """One string, redacted on its own: (clean text, what was replaced)."""
    redactor = Redactor(rules, masks=masks)
    redactor.learn(text)
    return redactor.redact(text, file=file), redactor.redactions
