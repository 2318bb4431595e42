"""Reading fingerprint values the same way whichever parser wrote them.

Parsers keep values as they were written: a launch command gives strings (`"2"`, `"true"`,
`'{"level": 3}'`), a log's `non-default args` gives Python values (`2`, `True`, `{'level': 3}`),
docker gives `device=0,1` where inspect gives `0,1`. Comparisons and checks go through here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from vllm_triage.core import pysource

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    return None


def version_tuple(text: Any) -> tuple[int, ...] | None:
    """`v0.11.1.dev12+g5ded9e9` → (0, 11, 1); `0.6.6.post1` → (0, 6, 6); None when no version."""
    match = re.match(r"\s*v?(\d+(?:\.\d+){1,2})", str(text))
    if not match:
        return None
    return tuple(int(part) for part in match.group(1).split("."))


def driver_tuple(text: Any) -> tuple[int, ...] | None:
    """`580.159.04` → (580, 159, 4); `r575` → (575,)."""
    match = re.match(r"\s*r?(\d{3,4})(?:\.(\d+))?(?:\.(\d+))?", str(text))
    if not match:
        return None
    return tuple(int(part) for part in match.groups() if part is not None)


def cuda_major_minor(text: Any) -> str | None:
    """`12.8.1` → `12.8`; `cu130` and `2.8.0+cu128` → `13.0`, `12.8`; `cuda>=12.4 brand=…` → `12.4`."""
    raw = str(text)
    match = re.search(r"cu(\d{2})(\d)(?!\d)", raw, re.IGNORECASE)
    if match:
        return f"{int(match.group(1))}.{match.group(2)}"
    match = re.search(r"(\d{1,2})\.(\d+)", raw)
    return f"{int(match.group(1))}.{int(match.group(2))}" if match else None


def _structured(value: Any) -> Any:
    """A value as data: JSON text and Python reprs decoded, so `'{"a": 1}'` equals `{'a': 1}`."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in "[{":
            for loader in (json.loads, pysource.literal_eval):
                try:
                    return loader(text)
                except (ValueError, SyntaxError, MemoryError, RecursionError):
                    continue
    return value


def canonical(value: Any) -> Any:
    """A comparable form: booleans, numbers, one-element lists and JSON all compare by meaning."""
    value = _structured(value)
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, default=str)
    if value is None:
        return None
    text = str(value).strip()
    flag = as_bool(text) if text.lower() in _TRUE | _FALSE and not text.isdigit() else None
    if flag is not None:
        return flag
    try:
        return float(text)
    except ValueError:
        return text


def same(a: Any, b: Any) -> bool:
    return bool(canonical(a) == canonical(b))


# Python object reprs in a log's `non-default args`: `<function … at 0x…>`, `<CompilationMode.X: 3>`.
# Narrower than "anything in angle brackets": NVIDIA_REQUIRE_CUDA holds `driver<536 brand=…,driver>=550`.
_OPAQUE = re.compile(
    r"<(?:function|bound method|built-in|class|module|lambda)\b|<[\w.]+ object at "
    r"0x|<[A-Za-z_]\w*\.\w+: [^<>]*>"
)


def opaque(value: Any) -> bool:
    """A repr that cannot be compared (`<function …>`, `<CompilationMode.X: 3>`)."""
    return isinstance(value, str) and bool(_OPAQUE.search(value))


def image_name(ref: Any) -> str:
    """An image reference in one spelling: `docker.io/library/x:1` and `x:1` are one image."""
    text = str(ref).strip().lower()
    for prefix in ("docker.io/", "index.docker.io/", "library/"):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    return text


@dataclass(frozen=True)
class GpuSelection:
    """Which GPUs a container was given: all of them, a count, or device ids/UUIDs."""

    all: bool = False
    count: int | None = None
    devices: tuple[str, ...] = ()

    @property
    def size(self) -> int | None:
        if self.all:
            return None
        return len(self.devices) if self.devices else self.count

    def __str__(self) -> str:
        if self.all:
            return "all"
        if self.devices:
            return "device=" + ",".join(self.devices)
        return f"count={self.count}"


def gpu_selection(value: Any, ids_not_count: bool = False) -> GpuSelection | None:
    """Normalise the spellings of a GPU selection.

    `--gpus all`, `'"device=0,1"'`, `device=GPU-1a2b`, `count=2`, `2` (docker: a count),
    `nvidia.com/gpu=0`, NVIDIA_VISIBLE_DEVICES `0,1` / `none`. A bare single number is a count
    for `--gpus` and k8s limits but a device id for NVIDIA_VISIBLE_DEVICES, CDI names and
    DeviceIDs: the caller says which with `ids_not_count`.
    """
    text = str(value).strip().strip("'\"").strip().lower()
    text = text.replace("nvidia.com/gpu=", "")
    if not text:
        return None
    if text in ("all", "-1", "count=all", "count=-1"):
        return GpuSelection(all=True)
    if text in ("none", "void", "count=0"):
        return GpuSelection(count=0)
    fields = dict(re.findall(r"(\w+)=((?:[^,=]+,?)+?)(?=,\w+=|$)", text))
    if "device" in fields or "devices" in fields:
        ids = fields.get("device") or fields.get("devices") or ""
        devices = tuple(d.strip() for d in ids.split(",") if d.strip())
        return GpuSelection(all="all" in devices, devices=() if "all" in devices else devices)
    if "count" in fields:
        count = as_int(fields["count"])
        return GpuSelection(count=count) if count is not None else None
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if len(parts) == 1 and parts[0].isdigit() and not ids_not_count:
        return GpuSelection(count=int(parts[0]))
    if parts and all(re.fullmatch(r"\d+|gpu-[0-9a-f-]+|mig-[0-9a-f-]+", p) for p in parts):
        return GpuSelection(devices=tuple(parts))
    return None


def visible_devices_count(value: Any) -> int | None:
    """Entries in CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES; None for `all` or unreadable."""
    selection = gpu_selection(value, ids_not_count=True)
    return selection.size if selection is not None else None
