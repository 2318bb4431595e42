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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from vllm_triage.bundle import redact_rules
from vllm_triage.bundle.layout import BundleFile, describe, prepare_out_dir
from vllm_triage.bundle.leakscan import Leak, LeakScanner
from vllm_triage.bundle.outdir import SafeTree
from vllm_triage.bundle.redact import MaskOptions, Redactor
from vllm_triage.bundle.textio import iter_blocks
from vllm_triage.ingest.sources import collect

REPORT_NAME = "redaction-report.json"
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

    def to_json(self) -> dict:
        data = {"path": self.path, "status": self.status, "secrets": self.secrets, "masks": self.masks}
        if self.note:
            data["note"] = self.note
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
    files = sorted((describe(s) for s in collect([given], stdin)), key=lambda f: f.name)
    out_root = prepare_out_dir(out, [given], force)
    tree = SafeTree(out_root, out)
    for item in files:
        # A name can hold a secret too (`requests/hf_….txt`): it is learned and redacted like text.
        redactor.learn(item.name)
        if item.kind == "text" and item.rel is not None:
            with item.source.open() as stream:
                for block, _line in iter_blocks(stream, item.encoding or "utf-8"):
                    redactor.learn(block)
    redactor.learn(given)
    outcomes = [_write(item, tree, redactor, drop_binary) for item in files]
    shown_input = redactor.redact(given, file="(input)")
    result = RedactionResult(shown_input, out_root, masks, redactor.disabled, drop_binary, outcomes, redactor)
    scanner = LeakScanner(rules, redactor.known_secrets())
    result.leaks = scanner.scan_tree(out_root, skip={REPORT_NAME})
    report = json.dumps(result.to_json(), indent=2, ensure_ascii=False)
    # The report is part of what gets shared: it passes the same scan.
    report_leaks = scanner.scan_text(report, REPORT_NAME)
    if report_leaks:
        result.leaks.extend(report_leaks)
        report = json.dumps(result.to_json(), indent=2, ensure_ascii=False)
    tree.write_bytes(REPORT_NAME, (report + "\n").encode("utf-8"))
    return result


def _redacted_rel(rel: PurePosixPath, redactor: Redactor) -> PurePosixPath:
    """The member's path with every secret in its names replaced (`<redacted:hf-token:1>.txt`)."""
    parts = [redactor.redact(part, file="(file names)").replace("/", "_") for part in rel.parts]
    return PurePosixPath(*parts)


def _write(item: BundleFile, tree: SafeTree, redactor: Redactor, drop_binary: bool) -> FileOutcome:
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
    with item.source.open() as stream, _open_output(tree, rel, item.gzipped) as sink:
        for block, first_line in iter_blocks(stream, item.encoding or "utf-8"):
            sink.write(redactor.redact(block, name, first_line).encode("utf-8"))
    after = Counter({(cat, kind): n for (f, cat, kind), n in redactor.counts.items() if f == name})
    added = after - before
    secrets = sum(n for (cat, _), n in added.items() if cat == "secret")
    masked = sum(n for (cat, _), n in added.items() if cat == "mask")
    note = (
        "" if (item.encoding or "utf-8").startswith("utf-8") else f"re-encoded from {item.encoding} to UTF-8"
    )
    status = "redacted" if secrets or masked or rel != item.rel else "unchanged"
    return FileOutcome(name, status, secrets, masked, note)


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
    data = item.source.read_bytes()
    with _open_output(tree, rel, item.gzipped) as sink:
        sink.write(data)
