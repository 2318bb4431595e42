"""`vllm-triage redact BUNDLE --out DIR`: a redacted copy of a bundle, its report, its leak scan.

Two passes over the bundle: the first learns every secret (so numbering is stable and a secret
found in an env file is also replaced where it stands bare in a log), the second writes. Text is
written as UTF-8 with its line endings kept; a `.gz` member is written back compressed; binary
files are copied as they are (or dropped with --drop-binary) and named in the report, because
nothing inside them can be redacted; an archive inside the bundle (zip, tar, …) is left out and
named. File and folder names are redacted like text. The input is only ever opened for reading;
the output is written through outdir.SafeTree, which never follows a symlink.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from vllm_triage.bundle.layout import BundleFile, describe, prepare_out_dir
from vllm_triage.bundle.outdir import SafeTree
from vllm_triage.bundle.redact import rules as redact_rules
from vllm_triage.bundle.redact.leakscan import NAMES_FILE, Leak, LeakScanner
from vllm_triage.bundle.redact.prefilter import HitCache, Prefilter, Window, combined
from vllm_triage.bundle.redact.redactor import MaskOptions, Redactor
from vllm_triage.bundle.redact.textio import LineCuts, capped_blocks, utf8_chunks, windowed
from vllm_triage.ingest.limits import LIMITS
from vllm_triage.ingest.sources import collect

REPORT_NAME = "redaction-report.json"
# Bytes read at a time (a block of lines is about this large): small enough to stay in the CPU's
# caches and out of the kernel's page-fault path (16 MiB blocks cost 3 times the system time).
READ_CHUNK = 1024 * 1024
SCHEMA = "vllm-triage.redaction/1"
NO_MASKS = MaskOptions()


@dataclass
class FileOutcome:
    path: str
    # redacted | unchanged | empty | binary-copied | binary-dropped | archive-left-out
    # | skipped-unsafe-path | superseded
    status: str
    secrets: int = 0
    masks: int = 0
    note: str = ""
    lines_cut: int = 0  # lines longer than --max-line, written cut to it

    def to_json(self) -> dict:
        data = {"path": self.path, "status": self.status, "secrets": self.secrets, "masks": self.masks}
        if self.note:
            data["note"] = self.note
        if self.lines_cut:
            data["lines_cut"] = self.lines_cut
        return data


@dataclass
class RedactionResult:
    input: str
    output: Path
    masks: MaskOptions
    disabled: list[str]
    drop_binary: bool
    files: list[FileOutcome]
    redactor: Redactor
    leaks: list[Leak] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.leaks

    @property
    def report_path(self) -> Path:
        return self.output / REPORT_NAME

    def to_json(self) -> dict:
        by_kind: Counter[tuple[str, str]] = Counter()
        for (_file, category, kind), count in self.redactor.counts.items():
            by_kind[(category, kind)] += count
        pseudonyms = self.redactor.pseudonyms()
        return {
            "schema": SCHEMA,
            "input": self.input,
            "output": str(self.output),
            "options": {**self.masks.to_json(), "disabled": self.disabled, "drop_binary": self.drop_binary},
            "summary": {
                "files": len(self.files),
                "redacted_files": sum(f.status == "redacted" for f in self.files),
                "binary_files": sum(f.status.startswith("binary") for f in self.files),
                "secrets": sum(c for (cat, _), c in by_kind.items() if cat == "secret"),
                "distinct_secrets": sum(p["category"] == "secret" for p in pseudonyms),
                "masks": sum(c for (cat, _), c in by_kind.items() if cat == "mask"),
                "by_kind": [
                    {"category": cat, "kind": kind, "count": count}
                    for (cat, kind), count in sorted(by_kind.items())
                ],
            },
            "files": [f.to_json() for f in self.files],
            "redactions": [r.to_json() for r in self.redactor.redactions],
            "redactions_not_listed": self.redactor.unrecorded,
            "pseudonyms": pseudonyms,
            "leak_scan": {
                "status": "pass" if self.clean else "fail",
                "leaks": [leak.to_json() for leak in self.leaks],
            },
        }


def redact_bundle(
    given: str,
    out: str,
    *,
    masks: MaskOptions = NO_MASKS,
    disabled: Iterable[str] = (),
    rule_dirs: Iterable[str] = (),
    force: bool = False,
    drop_binary: bool = False,
    stdin: BinaryIO | None = None,
) -> RedactionResult:
    """Write the redacted copy of `given` into `out`; raises InputError / OutputError / RuleError."""
    rules = redact_rules.load(rule_dirs) if rule_dirs else redact_rules.builtin()
    redactor = Redactor(rules, masks=masks, disabled=disabled)
    scan = _WrittenScan(LeakScanner(rules))
    # One search serves the redaction and, for what it writes, the leak scan (scan_written).
    redactor.prefilter = Prefilter(combined(redactor.prefilter.triggers, scan.scanner.triggers))
    files = sorted((describe(s) for s in collect([given], stdin)), key=lambda f: f.name)
    out_root = prepare_out_dir(out, [given], force)
    tree = SafeTree(out_root, out)
    caches: dict[str, HitCache] = {}
    for item in files:
        # A name can hold a secret too (`requests/hf_….txt`): it is learned and redacted like text.
        redactor.learn(item.name)
        if item.kind == "text" and item.rel is not None:
            cache = caches[item.name] = HitCache()
            with item.source.open() as stream:
                cuts = LineCuts(LIMITS.max_line)
                for block, windows, _line, _found in _windows(stream, item, cuts, redactor, list, cache):
                    for start, end in windows:
                        redactor.learn(block[start:end].decode("utf-8"))
    redactor.learn(given)
    outcomes = [_write(item, tree, redactor, drop_binary, caches.get(item.name), scan) for item in files]
    shown_input = redactor.redact(given, file="(input)")
    result = RedactionResult(shown_input, out_root, masks, redactor.disabled, drop_binary, outcomes, redactor)
    known = redactor.known_secrets()
    scanner = LeakScanner(rules, known)
    if redactor.disabled:
        # A --disable'd rule left secrets in clear on purpose; the scan as written leans on the
        # redaction's own search, which no longer looks for them (hypothesis found the gap): read
        # every written file back instead, with every rule.
        scan.leaks.clear()
    # Files written here were scanned as they were written; everything else in --out (binary
    # copies, files left there before --force) and every name is read now.
    leaks = scanner.scan_tree(out_root, skip={REPORT_NAME, *scan.leaks})
    for name, file_leaks in scan.leaks.items():
        leaks.extend(file_leaks)
        later = sorted(known - scan.known_then[name])  # learned after this file was written
        if later:
            leaks.extend(scanner.scan_literals(out_root / name, name, later))
    result.leaks = sorted(leaks, key=lambda leak: (leak.file != NAMES_FILE, leak.file, leak.line))
    report = json.dumps(result.to_json(), indent=2, ensure_ascii=False)
    # The report is part of what gets shared: it passes the same scan, on its text (paths, rule
    # ids, placeholders). Its numbers are the counts written here, not input: `"secrets": 48000`
    # read as a secret named `secrets` refused every bundle of 10,000 secrets or more. Zeroed,
    # they keep the layout, so a leak's line is the report's.
    report_leaks = scanner.scan_text(
        json.dumps(_counts_zeroed(result.to_json()), indent=2, ensure_ascii=False), REPORT_NAME
    )
    if report_leaks:
        result.leaks.extend(report_leaks)
        report = json.dumps(result.to_json(), indent=2, ensure_ascii=False)
    tree.write_bytes(REPORT_NAME, (report + "\n").encode("utf-8"))
    return result


def _counts_zeroed(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return 0
    if isinstance(value, list):
        return [_counts_zeroed(item) for item in value]
    if isinstance(value, dict):
        return {key: _counts_zeroed(item) for key, item in value.items()}
    return value


def _redacted_rel(rel: PurePosixPath, redactor: Redactor) -> PurePosixPath:
    """The member's path with every secret in its names replaced (`<redacted:hf-token:1>.txt`)."""
    parts = [redactor.redact(part, file="(file names)").replace("/", "_") for part in rel.parts]
    return PurePosixPath(*parts)


@dataclass
class _WrittenScan:
    """The leak scan of the files redact writes, done on the bytes as they are written."""

    scanner: LeakScanner
    leaks: dict[str, list[Leak]] = field(default_factory=dict)
    known_then: dict[str, set[str]] = field(default_factory=dict)


def _write(
    item: BundleFile,
    tree: SafeTree,
    redactor: Redactor,
    drop_binary: bool,
    cache: HitCache | None,
    scan: _WrittenScan,
) -> FileOutcome:
    if item.rel is None:
        return FileOutcome(
            redactor.redact(item.source.name, file="(file names)"),
            "skipped-unsafe-path",
            note="absolute or `..` member name: not written",
        )
    rel = _redacted_rel(item.rel, redactor)
    name = rel.as_posix()
    if name == REPORT_NAME:
        return FileOutcome(
            name, "superseded", note="the input's own redaction report is replaced by this run's"
        )
    if item.kind == "archive":
        # Members of a zip or tar cannot be redacted where they stand, and a copy would carry
        # them in clear (deflated, where no scan reads them): the archive stays out, named here.
        return FileOutcome(
            name,
            "archive-left-out",
            note="an archive inside the bundle: not copied; unpack it into the bundle and redact again",
        )
    if item.kind == "binary" and drop_binary:
        return FileOutcome(name, "binary-dropped", note="binary: not copied (--drop-binary)")
    if item.kind != "text":
        _copy_as_is(item, tree, rel)
        if item.kind == "binary":
            return FileOutcome(
                name, "binary-copied", note="binary: copied without redaction; review it before sharing"
            )
        return FileOutcome(name, "empty")
    before = Counter({(cat, kind): n for (f, cat, kind), n in redactor.counts.items() if f == name})
    cuts = LineCuts(LIMITS.max_line)
    known = redactor.known_secrets()
    scan.scanner.know(known)
    scan.known_then[name], leaks = known, scan.leaks.setdefault(name, [])
    lines_lost = 0  # lines a redaction joined (a key block becomes one placeholder)
    with item.source.open() as stream, _open_output(tree, rel, item.gzipped) as sink:
        for block, windows, first_line, found in _windows(
            stream, item, cuts, redactor, redactor.sweep_literals, cache.replay() if cache else None
        ):
            written, copied_hits, rewritten = _redacted_block(
                block, windows, found, redactor, name, first_line
            )
            sink.write(written)
            leaks.extend(
                scan.scanner.scan_written(
                    written,
                    redactor.prefilter,
                    copied_hits,
                    rewritten,
                    name,
                    first_line - lines_lost,
                    list(known),
                )
            )
            if windows:
                lines_lost += block.count(b"\n") - written.count(b"\n")
    after = Counter({(cat, kind): n for (f, cat, kind), n in redactor.counts.items() if f == name})
    added = after - before
    secrets = sum(n for (cat, _), n in added.items() if cat == "secret")
    masked = sum(n for (cat, _), n in added.items() if cat == "mask")
    notes = (
        []
        if (item.encoding or "utf-8").startswith("utf-8")
        else [f"re-encoded from {item.encoding} to UTF-8"]
    )
    if cuts.count:
        notes.append(cuts.note())
    status = "redacted" if secrets or masked or rel != item.rel or cuts.count else "unchanged"
    return FileOutcome(name, status, secrets, masked, "; ".join(notes), cuts.count)


def _redacted_block(
    block: bytes, windows: list[Window], found: list[int], redactor: Redactor, name: str, first_line: int
) -> tuple[bytes, list[int], list[Window]]:
    """(the block as written, its trigger offsets in the bytes copied as they are, the spans
    rewritten): bytes outside every window hold nothing any rule could match and are copied;
    the offsets and spans are in the written block, for the leak scan."""
    if not windows:
        return block, found, []
    view = memoryview(block)
    parts: list[bytes | memoryview] = []
    copied_hits: list[int] = []
    rewritten: list[Window] = []
    position = length = 0
    line = first_line
    hits = iter(found)
    hit = next(hits, None)
    for start, end in [*windows, (len(block), len(block))]:
        parts.append(view[position:start])
        while hit is not None and hit < end:
            if hit < start:
                copied_hits.append(length + hit - position)
            hit = next(hits, None)
        length += start - position
        if start == end:
            break
        line += block.count(b"\n", position, start)
        clean = redactor.redact(block[start:end].decode("utf-8"), name, line).encode("utf-8")
        rewritten.append((length, length + len(clean)))
        parts.append(clean)
        length += len(clean)
        line += block.count(b"\n", start, end)
        position = end
    return b"".join(parts), copied_hits, rewritten


def _windows(
    stream: BinaryIO,
    item: BundleFile,
    cuts: LineCuts,
    redactor: Redactor,
    literals: Callable[[], list[str]],
    cache: HitCache | None,
) -> Iterator[tuple[bytes, list[Window], int, list[int]]]:
    """The file as UTF-8 blocks of lines capped at --max-line, each with the windows the rules
    must read. The learning and the writing pass read the very same blocks and windows (the
    writing pass adds the lines holding a value learned elsewhere)."""
    blocks = capped_blocks(utf8_chunks(stream, item.encoding or "utf-8", READ_CHUNK), cuts)
    return windowed(blocks, redactor.prefilter, literals, cache)


@contextlib.contextmanager
def _open_output(tree: SafeTree, rel: PurePosixPath, gzipped: bool) -> Iterator[BinaryIO]:
    with tree.open_write(rel) as raw:
        if not gzipped:
            yield raw
            return
        # mtime=0: the same input gives the same bytes, so two redactions can be compared.
        with gzip.GzipFile(filename=rel.name, mode="wb", fileobj=raw, mtime=0) as sink:
            yield sink  # type: ignore[misc]


def _copy_as_is(item: BundleFile, tree: SafeTree, rel: PurePosixPath) -> None:
    if item.original is not None:
        with open(item.original, "rb") as source, tree.open_write(rel) as sink:
            shutil.copyfileobj(source, sink)  # the bytes on disk, compression included
        return
    # An archive member: streamed (through the bounded reader), never read whole.
    with item.source.open() as source, _open_output(tree, rel, item.gzipped) as sink:
        shutil.copyfileobj(source, sink, 1024 * 1024)
