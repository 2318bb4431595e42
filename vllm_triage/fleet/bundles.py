"""Find the bundles under the paths a scan is given, and identify each one by its content.

What one run is (DESIGN §4): a folder with a `bundle.toml`, an archive, or a folder holding a vLLM
log. Walking stops at a bundle (its sub-folders belong to it). One exception keeps a common layout
useful: a folder that holds *only* log files, two or more, is a dump of separate runs, so each
log is its own bundle.

Identity is the content: a run id is a hash of the bytes (and, for a folder, of the relative file
names), so the same bundle copied to another node or renamed is the same run, and a bundle whose
content changed is a new run. A cheaper stat key (names, sizes, mtimes) lets a re-scan skip
unchanged bundles without reading them.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from vllm_triage.core.errors import InputError
from vllm_triage.ingest.decode import SNIFF_BYTES, check_text, decode_all
from vllm_triage.ingest.manifest import MANIFEST_NAME
from vllm_triage.ingest.readers import open_regular
from vllm_triage.parsers.roles import name_hint, sniff_text

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".txz", ".zip")
# The same files ingest skips when it reads a folder (vllm_triage/ingest/sources.py): they are never
# artefacts, and including them would make a run id change when an editor touches a folder.
SKIP_DIRS = {".git", "__pycache__", ".venv", "node_modules"}
SKIP_NAMES = {".DS_Store", "Thumbs.db"}
# Content sniffing of files whose name says nothing: bounded so a folder of thousands of
# unrelated files costs little.
MAX_SNIFFED_PER_FOLDER = 20
_HASH_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class BundleRef:
    path: str  # absolute
    kind: str  # folder | archive | file


def is_archive(path: Path) -> bool:
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


def discover(paths: list[str]) -> list[BundleRef]:
    """Every bundle under `paths`, each once, in a stable order."""
    found: dict[str, BundleRef] = {}
    for given in paths:
        path = Path(given)
        if not path.exists():
            raise InputError("missing-path", f"{given} does not exist")
        path = path.resolve()
        refs = (
            _walk(path)
            if path.is_dir()
            else [BundleRef(str(path), "archive" if is_archive(path) else "file")]
        )
        for ref in refs:
            found.setdefault(ref.path, ref)
    return list(found.values())


def _walk(folder: Path) -> list[BundleRef]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        raise InputError("unreadable-path", f"cannot read folder {folder}: {exc.strerror or exc}") from exc
    files = [Path(e.path) for e in entries if e.is_file(follow_symlinks=False) and e.name not in SKIP_NAMES]
    dirs = [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False) and e.name not in SKIP_DIRS]
    if any(f.name == MANIFEST_NAME for f in files):
        return [BundleRef(str(folder), "folder")]
    plain = [f for f in files if not is_archive(f)]
    logs = _logs_among(plain)
    if logs:
        if len(logs) >= 2 and len(logs) == len(plain):
            return [BundleRef(str(f), "file") for f in logs]
        return [BundleRef(str(folder), "folder")]
    refs = [BundleRef(str(f), "archive") for f in files if is_archive(f)]
    for sub in dirs:
        refs.extend(_walk(sub))
    return refs


def _logs_among(files: list[Path]) -> list[Path]:
    logs, sniffed = [], 0
    for file in files:
        name = file.name[:-3] if file.name.lower().endswith(".gz") else file.name
        hint = name_hint(name)
        if hint == "vllm_log":
            logs.append(file)
        elif hint is None and sniffed < MAX_SNIFFED_PER_FOLDER and not file.name.lower().endswith(".gz"):
            sniffed += 1
            if _sniffs_as_log(file):
                logs.append(file)
    return logs


def _sniffs_as_log(file: Path) -> bool:
    try:
        with open_regular(str(file)) as handle:  # a FIFO swapped in must not block the walk
            head = handle.read(SNIFF_BYTES)
        encoding = check_text(head, str(file))
    except (OSError, InputError):
        return False
    return sniff_text(decode_all(head, encoding), file.name) == "vllm_log"


def bundle_files(ref: BundleRef) -> list[tuple[str, Path]]:
    """(name inside the bundle, path) of every file that belongs to it, sorted by name."""
    root = Path(ref.path)
    if ref.kind != "folder":
        return [(root.name, root)]
    out = []
    for path in root.rglob("*"):
        relative = path.relative_to(root)
        if any(part in SKIP_DIRS for part in relative.parts[:-1]) or path.name in SKIP_NAMES:
            continue
        if path.is_file() and not path.is_symlink():
            out.append((relative.as_posix(), path))
    return sorted(out)


def stat_key(ref: BundleRef) -> str:
    """Changes whenever a file is added, removed, renamed, resized or touched. No content read."""
    digest = hashlib.blake2b(digest_size=16)
    for name, path in bundle_files(ref):
        st = path.stat()
        digest.update(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def content_hash(ref: BundleRef) -> tuple[str, int]:
    """(run id, total bytes): blake2b-128 over each file's relative name and bytes."""
    digest = hashlib.blake2b(digest_size=16)
    total = 0
    for name, path in bundle_files(ref):
        if ref.kind == "folder":
            digest.update(name.encode("utf-8", "surrogateescape") + b"\0")
        try:
            handle = open_regular(str(path))  # a FIFO or device named as a bundle is refused
        except InputError:
            if ref.kind != "folder":
                raise
            # A file of a bundle folder that cannot be read: the analysis skips and names it.
            digest.update(b"<unreadable>\0")
            continue
        with handle:
            while chunk := handle.read(_HASH_CHUNK):
                digest.update(chunk)
                total += len(chunk)
        digest.update(b"\0")
    return digest.hexdigest(), total


def mtime(ref: BundleRef) -> float | None:
    """The newest modification time in the bundle: when it was last written (collected)."""
    times = [path.stat().st_mtime for _, path in bundle_files(ref)]
    return max(times) if times else None
