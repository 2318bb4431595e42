"""The one reader of `bundle.toml`, a bundle's manifest: its `[[file]]` roles, its `[run]` table
and the line a key is on (for evidence). Writing it is bundle/collect/manifest.py's."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import tomllib

from vllm_triage.core.errors import InputError
from vllm_triage.ingest.sources import Source

MANIFEST_NAME = "bundle.toml"


def is_manifest(name: str) -> bool:
    """A source named `…/bundle.toml` (an archive member `a.tgz!x/bundle.toml` too)."""
    return PurePosixPath(name.replace("!", "/")).name == MANIFEST_NAME


@dataclass(frozen=True)
class Manifest:
    name: str
    text: str
    document: dict[str, Any]

    def run(self) -> dict[str, Any]:
        """The `[run]` table (label, node, started), or {} when there is none."""
        table = self.document.get("run")
        return table if isinstance(table, dict) else {}

    def file_roles(self) -> dict[str, str]:
        """`[[file]] path → role` as written (`role.scope`, e.g. `nvidia_smi.host`), paths
        relative to the manifest's folder."""
        out: dict[str, str] = {}
        for entry in self.document.get("file", []):
            if isinstance(entry, dict) and "path" in entry and "role" in entry:
                out[str(entry["path"])] = str(entry["role"])
        return out

    def line_of(self, key: str) -> int | None:
        """The 1-based line of the first `key = …`."""
        match = re.search(rf"(?m)^\s*{re.escape(key)}\s*=", self.text)
        return self.text.count("\n", 0, match.start()) + 1 if match else None


def read_manifest(source: Source) -> Manifest:
    """The manifest of `source`; one that does not parse is bad input (exit 4), never skipped:
    the roles it declares would be guessed instead."""
    text = source.read_bytes().decode("utf-8", errors="replace")
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError("bad-manifest", f"{source.name}: bundle.toml does not parse ({exc})") from exc
    return Manifest(source.name, text, document)
