"""A small on-disk cache for what every run derives from the rule files the same way.

Parsing the TOML under rules/ (pure-Python tomllib) and extracting each pattern's literals
(engine/literals.py) cost more than the whole triage of a small paste. Both depend only on the
files' bytes and the tool's version, so the result is pickled under the user's cache directory,
keyed by a hash of exactly those, and reused by the next run.

Safe by construction:
  * the key is a hash of the content (and the tool and Python versions): an edited rule file, a
    --rules directory, an upgrade each get their own entry, a stale one is never read;
  * the directory is the user's cache directory ($VLLM_TRIAGE_CACHE_DIR, else $XDG_CACHE_HOME or
    ~/.cache, then vllm-triage/), never a folder next to the inputs;
  * a directory that is missing and cannot be made, not the user's own, or writable by others is
    not used (a pickle is code: only the user may have written it); an unreadable, corrupt or
    unwritable entry is recomputed, and the run goes on without the cache;
  * VLLM_TRIAGE_NO_CACHE=1 turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from vllm_triage import __version__

T = TypeVar("T")
_CHECKED: dict[str, Path | None] = {}


def cache_dir() -> Path | None:
    """The cache directory, made if missing (mode 0700), or None when it is not safe to use."""
    if os.environ.get("VLLM_TRIAGE_NO_CACHE"):
        return None
    given = os.environ.get("VLLM_TRIAGE_CACHE_DIR")
    if given:
        path = Path(given)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = Path(base) / "vllm-triage"
    key = str(path)
    if key not in _CHECKED:
        _CHECKED[key] = path if _usable(path) else None
    return _CHECKED[key]


def _usable(path: Path) -> bool:
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.stat()
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode):
        return False
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return False
    return not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def key_of(namespace: str, *parts: bytes) -> str:
    digest = hashlib.sha256()
    for piece in (namespace.encode(), __version__.encode(), sys.version.encode(), *parts):
        digest.update(len(piece).to_bytes(8, "little"))
        digest.update(piece)
    return f"{namespace}-{digest.hexdigest()[:40]}"


def cached(key: str, compute: Callable[[], T]) -> T:
    """The value stored under `key`, else `compute()` (stored for next time when possible)."""
    directory = cache_dir()
    if directory is None:
        return compute()
    entry = directory / f"{key}.pickle"
    try:
        with open(entry, "rb") as handle:
            value: T = pickle.load(handle)  # written by this function for this key
            return value
    except FileNotFoundError:
        pass
    except Exception:  # corrupt, truncated, from another pickle protocol: recompute it
        pass
    value = compute()
    _store(directory, entry, value)
    return value


def _store(directory: Path, entry: Path, value: Any) -> None:
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".pickle")
    except OSError:
        return  # read-only or full: the run goes on without the cache
    try:
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, entry)  # atomic: a concurrent run reads the old entry or the new, whole
    except Exception:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def load_toml(path: Path) -> dict[str, Any]:
    """tomllib.loads of the file, through the cache; raises what reading and parsing raise."""
    data = path.read_bytes()

    def parse() -> dict[str, Any]:
        import tomllib

        text = data.decode("utf-8")
        if "\r" in text:  # as Path.read_text reads it (universal newlines)
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        return tomllib.loads(text)

    return cached(key_of("toml", data), parse)
