"""Zip and tar bundles read in place, member by member, within the limits.

Nothing is extracted to disk. Every entry (files, folders, links, devices) counts against the
member limit, so a tar of a million folder entries stops after the first ten thousand; every
member's inflated bytes (a `.gz` inside the archive too) count against --max-input while they are
inflated. A tar is listed in one pass that also keeps its small members (the artefacts) in memory
up to a fixed total; larger members (the logs) are streamed again from the archive when read.
Members that cannot be read (encrypted, an unknown compression method) or that collide with a
folder of the same name are skipped and named, not fatal.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
import zlib
from pathlib import PurePosixPath
from typing import BinaryIO

from vllm_triage.core.errors import InputError
from vllm_triage.ingest.limits import LIMITS, RATIO_SLACK, human
from vllm_triage.ingest.readers import Bounded, Budget, Opener, maybe_gunzip
from vllm_triage.ingest.skips import Skipped

# Artefacts are small: a member up to this size is kept from the listing pass, up to the total.
CACHE_MEMBER_BYTES = 8 * 1024 * 1024
CACHE_TOTAL_BYTES = 64 * 1024 * 1024
_SKIP_NAMES = {".DS_Store", "Thumbs.db"}
_CORRUPT = (tarfile.TarError, OSError, EOFError, zlib.error, gzip.BadGzipFile, zipfile.BadZipFile)

# (member name, opener, inflated size as declared)
Member = tuple[str, Opener, int]


def _too_many(name: str) -> InputError:
    return InputError(
        "archive-too-large",
        f"{name} has more than {LIMITS.max_members} entries",
        "raise --max-members if this is really one bundle",
    )


def _declared_too_large(name: str) -> InputError:
    return InputError(
        "archive-too-large",
        f"{name} unpacks to more than {human(LIMITS.max_input)}",
        "raise --max-input if this is really one run's data",
    )


def _colliding(names: list[str]) -> set[str]:
    """File names that are also the folder of another member (`a` and `a/b.txt`): no tree can
    hold both, so the file is left out and named rather than failing when the bundle is copied."""
    folders = {str(parent) for n in names for parent in PurePosixPath(n).parents if str(parent) != "."}
    return {n for n in names if n.rstrip("/") in folders}


# ---------------------------------------------------------------------------------------------
# tar


def tar_members(name: str, opener: Opener, skipped: list[Skipped]) -> list[Member]:
    budget = Budget(name, LIMITS.max_input, "archive-too-large")
    cache: dict[int, bytes] = {}
    try:
        with tarfile.open(fileobj=opener(), mode="r:*") as tar:
            infos = _list_tar(name, tar, budget, cache)
    except InputError:
        raise
    except _CORRUPT as exc:
        raise InputError("corrupt-archive", f"{name} is not a readable archive ({exc})") from exc
    for bad in sorted(_colliding([i.name for i in infos])):
        skipped.append(Skipped(f"{name}!{bad}", "a file with the same name as a folder in the archive"))
    infos = [i for i in infos if i.name not in _colliding([i.name for i in infos])]
    if not infos:
        raise InputError("empty-bundle", f"{name} holds no files")

    def member_opener(info: tarfile.TarInfo) -> Opener:
        def open_member() -> BinaryIO:
            key = f"{info.name}\0{info.offset}"  # unique even when a name repeats
            if info.offset in cache:
                return maybe_gunzip(io.BytesIO(cache[info.offset]), budget, key)
            tar = tarfile.open(fileobj=opener(), mode="r:*")  # noqa: SIM115
            extracted = tar.extractfile(info)
            if extracted is None:  # pragma: no cover - only regular files are listed
                tar.close()
                raise InputError("corrupt-archive", f"{name}: cannot read {info.name}")
            return maybe_gunzip(Bounded(extracted, budget, key, close_too=(tar,)), budget, key)  # type: ignore[arg-type]

        return open_member

    return [(i.name, member_opener(i), i.size) for i in infos]


def _list_tar(
    name: str, tar: tarfile.TarFile, budget: Budget, cache: dict[int, bytes]
) -> list[tarfile.TarInfo]:
    infos: list[tarfile.TarInfo] = []
    seen: dict[str, int] = {}
    entries = 0
    cached = 0
    for member in tar:
        entries += 1
        if entries > LIMITS.max_members:
            raise _too_many(name)
        if not member.isfile():
            continue  # folders, links and devices carry no artefact (but count as entries)
        budget.reached(f"{member.name}\0{member.offset}", member.size)
        if PurePosixPath(member.name).name in _SKIP_NAMES:
            continue
        if member.name in seen:  # a tar appended to: the last copy is the one tar would extract
            infos[seen[member.name]] = member
        else:
            seen[member.name] = len(infos)
            infos.append(member)
        if member.size <= CACHE_MEMBER_BYTES and cached + member.size <= CACHE_TOTAL_BYTES:
            extracted = tar.extractfile(member)
            data = extracted.read() if extracted else b""
            if len(data) < member.size:
                raise InputError("corrupt-archive", f"{name}: tar data is truncated ({member.name})")
            cache[member.offset] = data
            cached += len(data)
    if infos and infos[-1].offset not in cache:
        # Read the last member through so a truncated archive fails here, not mid-analysis.
        extracted = tar.extractfile(infos[-1])
        while extracted is not None and extracted.read(16 * 1024 * 1024):
            pass
    return infos


def looks_like_tar(opener: Opener) -> bool:
    try:
        with tarfile.open(fileobj=opener(), mode="r:*") as tar:
            return tar.next() is not None
    except (*_CORRUPT, InputError):
        return False


# ---------------------------------------------------------------------------------------------
# zip


def zip_members(name: str, opener: Opener, skipped: list[Skipped]) -> list[Member]:
    try:
        archive = zipfile.ZipFile(opener())  # noqa: SIM115 - members are read from it later
        infos = archive.infolist()
    except _CORRUPT as exc:
        raise InputError("corrupt-archive", f"{name} is not a readable zip archive ({exc})") from exc
    if len(infos) > LIMITS.max_members:
        raise _too_many(name)
    files = [i for i in infos if not i.is_dir() and PurePosixPath(i.filename).name not in _SKIP_NAMES]
    # zipfile never returns more than a member's declared size, so the declared total bounds
    # everything but a compressed file inside the zip (counted as it is inflated, below).
    if sum(i.file_size for i in files) > LIMITS.max_input:
        raise _declared_too_large(name)
    for info in files:
        if info.file_size > RATIO_SLACK and info.file_size > LIMITS.max_ratio * max(info.compress_size, 1):
            raise InputError(
                "archive-too-large",
                f"{name}: {info.filename} inflates more than {LIMITS.max_ratio} times its compressed size "
                "(a compression bomb?)",
                "raise --max-ratio if this is really a log",
            )
    budget = Budget(name, LIMITS.max_input, "archive-too-large")
    readable = []
    for info in files:
        reason = _unreadable_zip_member(name, archive, info)
        if reason:
            skipped.append(Skipped(f"{name}!{info.filename}", reason))
        else:
            readable.append(info)
    for bad in sorted(_colliding([i.filename for i in readable])):
        skipped.append(Skipped(f"{name}!{bad}", "a file with the same name as a folder in the archive"))
    clash = _colliding([i.filename for i in readable])
    readable = [i for i in readable if i.filename not in clash]
    if not readable:
        raise InputError("empty-bundle", f"{name} holds no readable files")

    def member_opener(info: zipfile.ZipInfo) -> Opener:
        key = f"{info.filename}\0{info.header_offset}"
        return lambda: maybe_gunzip(archive.open(info), budget, key)  # type: ignore[arg-type]

    return [(i.filename, member_opener(i), i.file_size) for i in readable]


def _unreadable_zip_member(name: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> str | None:
    """Why a member cannot be read (it is then skipped), or None. The member is read through once
    so a corrupt one (bad CRC, truncated) fails here, as `zip -T` would, not mid-analysis."""
    if info.flag_bits & 0x1:
        return "encrypted: it cannot be read without its key, which is never asked for"
    try:
        with archive.open(info) as member:
            while member.read(16 * 1024 * 1024):
                pass
    except NotImplementedError as exc:
        return f"compressed with a method Python cannot read ({exc})"
    except RuntimeError as exc:  # zipfile's "File is encrypted" and the like
        return str(exc)
    except _CORRUPT as exc:
        raise InputError("corrupt-archive", f"{name}: member {info.filename} is corrupt ({exc})") from exc
    return None
