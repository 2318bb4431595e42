"""One run as the comparison sees it: the fingerprint JSON, the triage JSON, run metadata from the
bundle's manifest, and the runtime signals read from its log.

Everything here is plain JSON-shaped data, so a comparison can be tested with hand-made
fingerprints and triage results, and so it works on whatever the fingerprint module emits
(`vllm-triage.fingerprint/1`) without reaching into its classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vllm_triage.compare.signals import Signals

# Run metadata (bundle.toml `[run]`), under the names the fingerprint gives them: the node is a
# knob of the host (DESIGN §4), the label and start time are facts.
NODE = "host.node"
STARTED = "run.start"
LABEL = "run.label"


@dataclass(frozen=True)
class Entry:
    """A knob or fact of one run: its value and where it was read."""

    name: str
    value: Any
    source: dict[str, Any]  # {"file": …, "line": …}
    kind: str  # "knob" | "fact"

    def where(self) -> str:
        file = self.source.get("file") or "?"
        line = self.source.get("line")
        return f"{file}:{line}" if line else str(file)

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "source": self.source}


@dataclass
class Run:
    label: str
    path: str = ""
    fingerprint: dict[str, Any] = field(default_factory=lambda: {"knobs": {}, "facts": {}, "findings": []})
    triage: dict[str, Any] | None = None  # the triage JSON; None when the input holds no log
    node: Entry | None = None
    started: Entry | None = None
    signals: Signals = field(default_factory=Signals)
    inputs: list[dict[str, Any]] = field(default_factory=list)  # [{"path", "role"}]
    notes: list[str] = field(default_factory=list)

    def entries(self) -> dict[str, Entry]:
        out: dict[str, Entry] = {}
        for kind in ("facts", "knobs"):  # a knob wins over a fact of the same name
            for name, item in (self.fingerprint.get(kind) or {}).items():
                if isinstance(item, dict) and "value" in item:
                    source = item.get("source") or {}
                    out[name] = Entry(name, item["value"], source, kind[:-1])
        for meta in (self.node, self.started):
            if meta is not None and meta.name not in out:  # the fingerprint's own reading wins
                out[meta.name] = meta
        return out

    def findings(self, finding_id: str) -> list[dict[str, Any]]:
        return [f for f in self.fingerprint.get("findings") or [] if f.get("id") == finding_id]

    def vllm_version(self) -> str | None:
        """The vLLM release that ran, as the log, collect_env, pip or the image tag says."""
        for name in ("vllm.version", "pip.vllm", "image.vllm_version"):
            item = (self.fingerprint.get("facts") or {}).get(name) or (
                self.fingerprint.get("knobs") or {}
            ).get(name)
            if isinstance(item, dict) and item.get("value"):
                return str(item["value"])
        return None

    def summary(self) -> dict[str, Any]:
        """Who this run is, for the JSON contracts."""
        return {
            "label": self.label,
            "path": self.path,
            "node": self.node.value if self.node is not None else None,
            "started": self.started.value if self.started is not None else None,
            "inputs": self.inputs,
            "notes": self.notes,
        }
