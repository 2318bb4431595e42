"""Values of two runs compared by meaning, and shown without leaking secrets.

`"true"` from a launch command and `True` from a log's `non-default args` are one value; so are
`docker.io/library/x:1` and `x:1`, and `--gpus '"device=0,1"'` and `NVIDIA_VISIBLE_DEVICES=0,1`.
GPU occupancy compares as busy/idle per GPU: 3 MiB and 7 MiB in use are the same idle GPU.
"""

from __future__ import annotations

import re
from typing import Any

from vllm_triage.compare.data import CompareData, name_matches
from vllm_triage.fingerprint.values import as_int, canonical, gpu_selection, image_name, opaque

_GPU_SELECTIONS = ("container.gpus", "env.CUDA_VISIBLE_DEVICES", "env.NVIDIA_VISIBLE_DEVICES")
_OCCUPANCY = ("*.gpu_memory_used_mib",)
_PROCESSES = ("*.gpu_processes",)
# Shown as <redacted>: a diff is pasted into tickets, and a token is no less secret for having changed.
_SECRET_VARIABLE = re.compile(
    r"(?:^|_)(?:TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?)(?:_|$)"
)
_SECRET_NAMES = ("arg.api_key", "request.auth*", "request.headers.authorization")
_DIGEST = re.compile(r"(sha256:)([0-9a-f]{20,64})")


class Incomparable:
    """A value that cannot be compared (an object repr such as `<function …>`)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Incomparable)

    def __hash__(self) -> int:
        return 0


def _busy(value: Any, busy_mib: int) -> tuple[bool, ...] | None:
    values = value if isinstance(value, (list, tuple)) else [value]
    used = [as_int(v) for v in values]
    if any(u is None for u in used):
        return None
    return tuple(u >= busy_mib for u in used if u is not None)


def comparable(name: str, value: Any, data: CompareData) -> Any:
    """The form two values of `name` are compared in."""
    if value is None or (isinstance(value, str) and value.strip() in ("None", "null")):
        return None
    if opaque(value):
        return Incomparable()
    if name == "image.ref":
        return image_name(value)
    if name in _GPU_SELECTIONS:
        selection = gpu_selection(value, ids_not_count=name.startswith("env."))
        if selection is not None:
            return str(selection)
    if name_matches(name, _OCCUPANCY):
        busy = _busy(value, data.settings.busy_gpu_mib)
        if busy is not None:
            return busy
    if name_matches(name, _PROCESSES):
        count = as_int(value)
        if count is not None:
            return count > 0
    return canonical(value)


def same(name: str, a: Any, b: Any, data: CompareData) -> bool:
    return bool(comparable(name, a, data) == comparable(name, b, data))


def secret(name: str) -> bool:
    if name.startswith("env."):
        return bool(_SECRET_VARIABLE.search(name[4:]))
    return name_matches(name.lower(), _SECRET_NAMES)


def shown(name: str, value: Any, limit: int = 80) -> str:
    """A value for a person to read: short, secrets redacted."""
    if value is None:
        return "(not set)"
    if secret(name):
        return "<redacted>"
    text = value if isinstance(value, str) else repr(value)
    text = text.replace("\n", " ")
    digest = _DIGEST.fullmatch(text)
    if digest:  # sha256:<64 hex>: twelve characters tell two images apart, as `docker images` shows
        return f"{digest.group(1)}{digest.group(2)[:12]}…"
    return text if len(text) <= limit else text[: limit - 1] + "…"
