"""Inputs left out while collecting (a FIFO in a bundle folder, an unreadable file, an encrypted
zip member): named, so the result can say what it did not read instead of failing or hiding it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Skipped:
    name: str  # the path, or "archive.tgz!member/path"
    reason: str  # why, in words: "a FIFO (named pipe), not a regular file"

    def describe(self) -> str:
        # Not "name: reason": a file named secret.txt would read as `secret: …` to a leak scan.
        return f"{self.name} was skipped ({self.reason})"


class Sources(list):
    """The collected sources, plus what was skipped on the way (a list, so callers that only
    iterate need not know)."""

    def __init__(self, items=(), skipped: list[Skipped] | None = None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(items)
        self.skipped: list[Skipped] = list(skipped or [])


def skipped_of(sources: list) -> list[Skipped]:
    return list(getattr(sources, "skipped", []))
