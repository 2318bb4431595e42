"""The last look before a redacted bundle is shared: does anything secret-looking remain?

Independent of the redaction that ran before it: every `[[secret]]` rule is used (even ones the
redaction was told to skip with --disable), plus the literal secret values the redaction saw, so
a secret copied along inside a binary file, a stale file left in --out, or a rule switched off is
still caught. A leak names the file, line, rule and kind — never the value.
"""

from __future__ import annotations

import functools
import io
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, cast

from vllm_triage.bundle.layout import is_archive
from vllm_triage.bundle.redact import detect, prefilter
from vllm_triage.bundle.redact import entropy as leakscan_entropy
from vllm_triage.bundle.redact import rules as redact_rules
from vllm_triage.bundle.redact.disguise import Wraps
from vllm_triage.bundle.redact.rules import RedactRules
from vllm_triage.bundle.redact.textio import LineCuts, capped_blocks, open_maybe_gzip, utf8_chunks, windowed
from vllm_triage.ingest.decode import SNIFF_BYTES, detect_encoding, is_binary
from vllm_triage.ingest.limits import LIMITS, MiB

NAMES_FILE = "(file names)"
_ARCHIVE_NAME_HIDDEN = "(member)"  # a member's name may be the secret: never shown
MAX_ARCHIVE_MEMBERS = 100_000
MAX_TAR_MEMBER_BYTES = 256 * 1024 * 1024
SCAN_LINE = 64 * MiB
READ_CHUNK = 1 * MiB  # larger: not scanned, so the output fails (fail closed)


def _archive_members(path: Path) -> Iterator[tuple[str, Callable[[], BinaryIO]]]:
    """(name, opener) of every regular member of a zip or tar (plain or compressed), streamed."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            for count, info in enumerate(archive.infolist()):
                if count >= MAX_ARCHIVE_MEMBERS:
                    raise ValueError("too many members")
                if not info.is_dir():
                    yield info.filename, cast(Callable[[], BinaryIO], functools.partial(archive.open, info))
        return
    with tarfile.open(path, mode="r:*") as tar:
        for count, member in enumerate(tar):
            if count >= MAX_ARCHIVE_MEMBERS:
                raise ValueError("too many members")
            if member.isfile():
                if member.size > MAX_TAR_MEMBER_BYTES:
                    raise ValueError("member too large to scan")
                data = tar.extractfile(member)
                if data is not None:
                    # A tar streams once: the member is read into memory (bounded by its size).
                    content = data.read()
                    yield member.name, functools.partial(io.BytesIO, content)


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
        self._known_list = list(self._known)
        self.triggers = prefilter.triggers_of(self._chosen, keywords=leakscan_entropy.HINTS)
        self.prefilter = prefilter.Prefilter(self.triggers)

    def know(self, values: Iterable[str]) -> None:
        """Add secret values seen meanwhile (searched anywhere, like those given at the start)."""
        for value in values:
            if value and value not in self._known:
                self._known[value] = "known-secret"
        self._known_list = list(self._known)

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
        if is_archive(head):
            return self._scan_archive(path, name)
        with open_maybe_gzip(path) as stream:
            return self._scan_stream(stream, head, name)

    def scan_tree(self, root: Path, skip: Iterable[str] = ()) -> list[Leak]:
        """Every file under root, and every name (skip: names relative to root not read)."""
        skipped = set(skip)
        leaks: list[Leak] = []
        paths = sorted(p for p in root.rglob("*") if not p.is_symlink())
        # A secret in a file or folder name is shared with the tree: names are scanned as text.
        names = "\n".join(p.relative_to(root).as_posix() for p in paths)
        leaks.extend(self.scan_text(names, NAMES_FILE))
        for path in paths:
            name = path.relative_to(root).as_posix()
            if path.is_file() and name not in skipped:
                leaks.extend(self.scan_file(path, name))
        return leaks

    def _scan_stream(self, stream: BinaryIO, head: bytes, name: str) -> list[Leak]:
        encoding = detect_encoding(head)
        if is_binary(head, encoding):
            # Secrets inside binary data are still bytes of text: read them as Latin-1, which
            # decodes every byte, so offsets never fail.
            encoding = "latin-1"
        leaks: list[Leak] = []
        # Lines as long as any the redaction writes are read whole; a longer one (in a binary
        # file copied as it is) is read up to SCAN_LINE and fails the scan: unread is unsafe.
        cuts = LineCuts(max(LIMITS.max_line, SCAN_LINE))
        blocks = capped_blocks(utf8_chunks(stream, encoding, READ_CHUNK), cuts)
        for block, windows, first_line, _found in windowed(blocks, self.prefilter, lambda: self._known_list):
            leaks.extend(self._scan_windows(block, windows, name, first_line))
        leaks.extend(Leak(name, line, "line-too-long", "unscanned-line") for line in cuts.first)
        return leaks

    def scan_written(
        self,
        block: bytes,
        shared: prefilter.Prefilter,
        found: list[int],
        around: list[prefilter.Window],
        name: str,
        first_line: int,
        known: list[str],
    ) -> list[Leak]:
        """The scan of one block as the redaction writes it, without reading the file again: the
        bytes it copied are the input's, whose triggers (`found`, mapped to this block) the
        redaction searched with `shared` — a prefilter that holds this scanner's triggers too;
        `around` are the spans it rewrote, read with the lines about them. `known`: the secret
        values known when it wrote (redact_copy scans for later ones at the end)."""
        return self._scan_windows(block, shared.windows_of(block, found, around, known), name, first_line)

    def _scan_windows(
        self, block: bytes, windows: list[prefilter.Window], name: str, first_line: int
    ) -> list[Leak]:
        leaks: list[Leak] = []
        line, position = first_line, 0
        for start, end in windows:
            line += block.count(b"\n", position, start)
            leaks.extend(self.scan_text(block[start:end].decode("utf-8", "replace"), name, line))
            position = start
        return leaks

    def scan_literals(self, path: Path, name: str, values: list[str]) -> list[Leak]:
        """Only the given values, anywhere in a file (those learned after it was written)."""
        leaks: list[Leak] = []
        with open_maybe_gzip(path) as stream:
            for block, line in capped_blocks(
                utf8_chunks(stream, "utf-8"), LineCuts(max(LIMITS.max_line, SCAN_LINE))
            ):
                for value in values:
                    at = block.find(value.encode("utf-8"))
                    if at >= 0:
                        leaks.append(
                            Leak(name, line + block.count(b"\n", 0, at), "known-secret", "known-secret")
                        )
        return leaks

    def _scan_archive(self, path: Path, name: str) -> list[Leak]:
        """A zip or tar in the output (redact leaves them out; one may be stale in --out): every
        member's name and content, inflated; one that cannot be read is a leak (fail closed)."""
        leaks: list[Leak] = []
        try:
            for member, opener in _archive_members(path):
                where = f"{name}!{_ARCHIVE_NAME_HIDDEN}"
                member_leaks = self.scan_text(member, where)
                with opener() as stream:
                    head = stream.read(SNIFF_BYTES)
                with opener() as stream:
                    member_leaks += self._scan_stream(stream, head, where) if head else []
                leaks.extend(member_leaks)
        except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError, zlib.error, ValueError):
            leaks.append(Leak(name, 0, "unreadable-archive", "unscannable-archive"))
        return leaks

    def _finds(self, text: str, timeout: float) -> list[detect.Find]:
        scope = detect.Scope(text)
        finds = detect.secret_finds(scope, self.rules, self._chosen, self._classifier, timeout)
        finds += detect.disguised_finds(
            scope, self.rules, self._chosen, self._classifier, self._wraps, timeout
        )
        # The second opinion, which decides differently (leakscan_entropy).
        finds += [
            detect.Find(start, end, "entropy", "high-entropy-value", 0, "secret")
            for start, end in leakscan_entropy.suspects(text, scope.hint_positions(leakscan_entropy.HINTS))
        ]
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
