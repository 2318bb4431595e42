"""Where a bundle's files go when a copy is written, and where a copy may be written at all.

Inputs are read-only (DESIGN §4): an output folder may not be the input, inside it, or contain it,
and an existing non-empty folder is refused unless the user says --force. Archive member names
come from strangers: absolute names and `..` are never written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from vllm_triage.core.errors import ExitCode, TriageError
from vllm_triage.ingest.decode import SNIFF_BYTES, detect_encoding, is_binary
from vllm_triage.ingest.sources import Source

STDIN_NAME = "stdin.txt"


class OutputError(TriageError):
    """The output folder cannot be used (it would touch the input, or overwrite something)."""

    exit_code = ExitCode.USAGE

    def __init__(self, problem_id: str, message: str, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.problem_id = problem_id


class UnsafeOutputError(OutputError):
    """--out holds a symlink, or a path would resolve outside it: bad input, nothing written."""

    exit_code = ExitCode.INPUT


def refuse_symlinks(root: Path, given: str) -> None:
    """Raise when anything under root (root itself excluded: it was resolved) is a symlink."""
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            path = Path(folder) / name
            if path.is_symlink():
                raise UnsafeOutputError(
                    "out-holds-symlink",
                    f"--out {given} holds a symlink ({path.relative_to(root).as_posix()}); nothing "
                    f"was written",
                    "use an empty or new folder",
                )


@dataclass
class BundleFile:
    source: Source
    rel: PurePosixPath | None  # None: the member's name is unsafe to write
    kind: str  # text | binary | archive | empty
    encoding: str | None
    gzipped: bool  # written back compressed (the name says .gz)
    original: Path | None  # the file on disk when the input is a folder or a plain file

    @property
    def name(self) -> str:
        return str(self.rel) if self.rel is not None else self.source.name


def member_path(source: Source) -> str:
    """The file's path inside its bundle, as the bundle names it."""
    if source.bundle and source.name.startswith(source.bundle + "!"):
        return source.name[len(source.bundle) + 1 :]  # archive member
    if source.bundle:
        return Path(source.name).relative_to(source.bundle).as_posix()  # file of a folder
    if source.name == "<stdin>":
        return STDIN_NAME
    return Path(source.name).name  # a single file given on its own


def safe_relative(member: str) -> PurePosixPath | None:
    path = PurePosixPath(member.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or not path.parts:
        return None
    return PurePosixPath(*path.parts)


_ARCHIVE_MAGIC = (
    b"PK\x03\x04",
    b"PK\x05\x06",
    b"PK\x07\x08",
    b"BZh",
    b"\xfd7zXZ\x00",
    b"7z\xbc\xaf\x27\x1c",
    b"Rar!\x1a\x07",
)


def is_archive(head: bytes) -> bool:
    """Zip, tar (also inside gzip: `head` is decompressed), bzip2, xz, 7z or rar data."""
    return head.startswith(_ARCHIVE_MAGIC) or head[257:262] == b"ustar"


def describe(source: Source) -> BundleFile:
    rel = safe_relative(member_path(source))
    head = source.head(SNIFF_BYTES)
    encoding = None
    if not head:
        kind = "empty"
    elif is_archive(head):
        kind = "archive"  # its members cannot be redacted where they stand: left out, and named
    else:
        encoding = detect_encoding(head)
        kind = "binary" if is_binary(head, encoding) else "text"
    original = None
    if "!" not in source.name.removeprefix(source.bundle or "") and source.name != "<stdin>":
        candidate = Path(source.name)
        original = candidate if candidate.is_file() else None
    gzipped = rel is not None and rel.name.lower().endswith((".gz", ".tgz"))
    return BundleFile(source, rel, kind, encoding, gzipped, original)


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def prepare_out_dir(out: str, inputs: list[str], force: bool) -> Path:
    """Create (or accept) the output folder; refuse anything that could touch an input."""
    target = Path(out).expanduser().resolve()
    for given in inputs:
        if given == "-":
            continue
        source = Path(given).expanduser().resolve()
        if source.is_dir() and _inside(target, source):
            raise OutputError(
                "out-inside-input", f"--out {out} is inside the input {given}", "write the copy elsewhere"
            )
        if _inside(source, target):
            raise OutputError(
                "input-inside-out",
                f"the input {given} is inside --out {out}",
                "choose an output folder outside the input",
            )
    if target.exists() and not target.is_dir():
        raise OutputError("out-not-a-folder", f"--out {out} exists and is not a folder")
    if target.is_dir():
        # Before anything else is looked at or written: a link inside would redirect a write.
        refuse_symlinks(target, out)
    if target.is_dir() and any(target.iterdir()) and not force:
        raise OutputError(
            "out-not-empty", f"--out {out} is not empty", "choose an empty or new folder, or pass --force"
        )
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError("out-unwritable", f"cannot create --out {out}: {exc.strerror or exc}") from exc
    return target
