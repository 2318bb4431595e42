"""The last look before a redacted bundle is shared: does anything secret-looking remain?

Independent of the redaction that ran before it: every `[[secret]]` rule is used (even ones the
redaction was told to skip with --disable), plus the literal secret values the redaction saw, so
a secret copied along inside a binary file, a stale file left in --out, or a rule switched off is
still caught. A leak names the file, line, rule and kind — never the value.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from vllm_triage.bundle import detect, redact_rules
from vllm_triage.bundle.redact_disguise import Wraps
from vllm_triage.bundle.redact_rules import RedactRules
from vllm_triage.bundle.textio import iter_blocks, open_maybe_gzip
from vllm_triage.ingest.decode import SNIFF_BYTES, detect_encoding, is_binary


@dataclass(frozen=True)
class Leak:
    file: str
    line: int
    rule: str
    kind: str

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "rule": self.rule, "kind": self.kind}

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.kind} (rule {self.rule})"


class LeakScanner:
    def __init__(self, rules: RedactRules | None = None, known: Iterable[str] = ()) -> None:
        self.rules = rules or redact_rules.builtin()
        self._chosen = [r for r in self.rules.secrets if r.leak]
        self._classifier = detect.Classifier(self.rules)
        self._wraps = Wraps(self._chosen, self._classifier.kind_of)
        # Searched anywhere, even inside a longer word: stricter than the redaction's sweep on purpose.
        self._known = dict.fromkeys((v for v in known if v), "known-secret")

    def scan_text(self, text: str, file: str = "", first_line: int = 1) -> list[Leak]:
        scan = detect.neutralise(text)
        try:
            finds = self._finds(scan, detect.BLOCK_TIMEOUT_S)
        except TimeoutError:
            finds = self._finds_by_line(scan)
        finds.sort(key=lambda f: f.start)
        leaks: list[Leak] = []
        seen: set[tuple[int, str]] = set()
        for find, line in zip(finds, detect.line_numbers(scan, finds, first_line), strict=True):
            if (line, find.rule) not in seen:
                seen.add((line, find.rule))
                leaks.append(Leak(file, line, find.rule, find.kind))
        return leaks

    def scan_file(self, path: Path, name: str) -> list[Leak]:
        with open_maybe_gzip(path) as stream:
            head = stream.read(SNIFF_BYTES)
        if not head:
            return []
        encoding = detect_encoding(head)
        if is_binary(head, encoding):
            # Secrets inside binary data are still bytes of text: read them as Latin-1, which
            # decodes every byte, so offsets never fail.
            encoding = "latin-1"
        leaks: list[Leak] = []
        with open_maybe_gzip(path) as stream:
            for block, first_line in iter_blocks(stream, encoding):
                leaks.extend(self.scan_text(block, name, first_line))
        return leaks

    def scan_tree(self, root: Path, skip: Iterable[str] = ()) -> list[Leak]:
        """Every file under root (skip: names relative to root that are not scanned)."""
        skipped = set(skip)
        leaks: list[Leak] = []
        for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
            name = path.relative_to(root).as_posix()
            if name not in skipped:
                leaks.extend(self.scan_file(path, name))
        return leaks

    def _finds(self, text: str, timeout: float) -> list[detect.Find]:
        scope = detect.Scope(text)
        finds = detect.secret_finds(scope, self.rules, self._chosen, self._classifier, timeout)
        finds += detect.disguised_finds(
            scope, self.rules, self._chosen, self._classifier, self._wraps, timeout
        )
        finds += detect.literal_finds(text, self._known, frozenset(), frozenset(), "known-secret", "secret")
        return finds

    def _finds_by_line(self, text: str) -> list[detect.Find]:
        finds: list[detect.Find] = []
        offset = 0
        for line in text.splitlines(keepends=True):
            try:
                for find in self._finds(line, detect.LINE_TIMEOUT_S):
                    find.start += offset
                    find.end += offset
                    finds.append(find)
            except TimeoutError:
                finds.append(
                    detect.Find(
                        offset, offset + len(line), "unscannable-line", "unscannable-line", 0, "secret"
                    )
                )
            offset += len(line)
        return finds


def scan_text(
    text: str, rules: RedactRules | None = None, known: Iterable[str] = (), file: str = ""
) -> list[Leak]:
    """Convenience for one string (report rendering checks its own output with this)."""
    return LeakScanner(rules, known).scan_text(text, file)
