"""Writing inside an output folder without ever leaving it.

`redact --force` and `collect --force` write into a folder that already holds things. A symlink
there (`out/env -> /etc`, `out/report.json -> ~/.bashrc`) would send a write anywhere the user can
write. So a folder whose tree holds a symlink is refused before anything is written, and every
write goes through directory file descriptors: folders are created one level at a time and opened
with O_NOFOLLOW, files are created with O_CREAT|O_EXCL|O_NOFOLLOW (an existing regular file is
unlinked first, so a link swapped in meanwhile makes the open fail instead of being followed).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from vllm_triage.bundle.layout import UnsafeOutputError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _unsafe(given: str, rel: str, why: str) -> UnsafeOutputError:
    return UnsafeOutputError("out-unsafe-path", f"--out {given}: {rel}: {why}; nothing more was written")


class SafeTree:
    """Creates folders and files under one root, never through a symlink."""

    def __init__(self, root: Path, given: str | None = None) -> None:
        self.root = root
        self.given = given or str(root)

    def _parts(self, rel: str | PurePosixPath) -> tuple[str, ...]:
        parts = PurePosixPath(rel).parts
        if not parts or PurePosixPath(rel).is_absolute() or any(p in ("", ".", "..") for p in parts):
            raise _unsafe(self.given, str(rel), "not a plain relative path")
        return parts

    def _open_dir(self, parts: tuple[str, ...], rel: str) -> int:
        """A descriptor of root/parts…, each level created if missing and opened without following."""
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            for part in parts:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                try:
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    raise _unsafe(self.given, rel, f"{part} is not a plain folder ({exc.strerror})") from exc
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def makedirs(self, rel: str | PurePosixPath) -> None:
        os.close(self._open_dir(self._parts(rel), str(rel)))

    def open_write(self, rel: str | PurePosixPath) -> BinaryIO:
        """A new file at root/rel for writing (an existing regular file there is replaced)."""
        parts = self._parts(rel)
        fd = self._open_dir(parts[:-1], str(rel))
        try:
            name = parts[-1]
            try:
                found = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                found = None
            if found is not None:
                if not stat.S_ISREG(found.st_mode):
                    raise _unsafe(self.given, str(rel), "exists and is not a regular file")
                os.unlink(name, dir_fd=fd)
            try:
                handle = os.open(name, _FILE_FLAGS, 0o666, dir_fd=fd)
            except OSError as exc:
                raise _unsafe(self.given, str(rel), f"cannot be created safely ({exc.strerror})") from exc
        finally:
            os.close(fd)
        self._check_inside(rel)
        return os.fdopen(handle, "wb")

    def write_bytes(self, rel: str | PurePosixPath, data: bytes) -> None:
        with self.open_write(rel) as sink:
            sink.write(data)

    def _check_inside(self, rel: str | PurePosixPath) -> None:
        # Belt and braces: the descriptors above cannot leave root; the resolved path says so too.
        resolved = Path(os.path.realpath(self.root / rel))
        if resolved != self.root and self.root not in resolved.parents:
            raise _unsafe(self.given, str(rel), "resolves outside the folder")
