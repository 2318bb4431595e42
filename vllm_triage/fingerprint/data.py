"""The data behind the fingerprint's checks: TOML tables under rules/compat/ and rules/recipes/.

These tables sit beside the log rules but are not `[[rule]]` tables, so the rule engine ignores
them; this module reads them, and only from those two folders (of the built-in rules and of each
--rules directory), so data for other concerns never gets in the way. Like the engine it is strict:
an unknown field or a missing one is a RuleError naming the file, so a typo in the data never
silently disables a check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from vllm_triage.core.tables import array_tables, fail, read_toml, with_extra_dirs
from vllm_triage.fingerprint.values import version_tuple
from vllm_triage.resources import rules_dir

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class CudaDriver:
    cuda: str  # "13.0"
    min_driver: str  # "580.65.06"
    branch: int


@dataclass(frozen=True)
class DebugVariable:
    name: str  # exact name, or a prefix ending in "*"
    severity: str
    effect: str
    value: re.Pattern[str] | None = None
    set_by_vllm: tuple[str, str] | None = None

    def matches(self, name: str, value: Any) -> bool:
        if self.name.endswith("*"):
            if not name.startswith(self.name[:-1]):
                return False
        elif name != self.name:
            return False
        return self.value is None or bool(self.value.fullmatch(str(value).strip()))


@dataclass(frozen=True)
class MutableTag:
    pattern: re.Pattern[str]
    severity: str
    why: str


@dataclass(frozen=True)
class Recipe:
    id: str
    name: str
    model: re.Pattern[str]
    ref: str = ""
    gpu_model: re.Pattern[str] | None = None
    min_gpus: int | None = None
    min_gpu_memory_gib: float | None = None
    min_parallel_gpus: int | None = None
    image_tags: tuple[str, ...] = ()
    cuda_build: str | None = None
    min_driver_branch: int | None = None
    min_vllm: str | None = None
    args: dict[str, str] = field(default_factory=dict)
    file: str = ""


@dataclass
class CheckData:
    cuda_driver: list[CudaDriver] = field(default_factory=list)
    cuda_family: dict[int, str] = field(default_factory=dict)  # CUDA major → oldest driver
    vllm_image_cuda: list[tuple[str, str]] = field(default_factory=list)  # (since version, cuda)
    image_tag_cuda: dict[str, str] = field(default_factory=dict)
    official_images: set[str] = field(default_factory=set)
    debug_variables: list[DebugVariable] = field(default_factory=list)
    inherited_prefixes: list[tuple[str, frozenset[str]]] = field(default_factory=list)
    mutable_tags: list[MutableTag] = field(default_factory=list)
    local_model_prefixes: list[str] = field(default_factory=list)
    occupied_min_used_mib: int = 1024
    vllm_process: re.Pattern[str] | None = None
    recipes: list[Recipe] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def driver_for(self, cuda: str) -> CudaDriver | None:
        return next((row for row in self.cuda_driver if row.cuda == cuda), None)


# table name → (required keys, optional keys)
_TABLES: dict[str, tuple[set[str], set[str]]] = {
    "cuda_driver": ({"cuda", "min_driver", "branch"}, set()),
    "cuda_family": ({"major", "min_driver"}, set()),
    "vllm_image_cuda": ({"since", "cuda"}, set()),
    "image_tag_cuda": ({"tag", "cuda"}, set()),
    "official_image": ({"repository"}, set()),
    "debug_variable": ({"name", "severity", "effect"}, {"value", "set_by_vllm"}),
    "inherited_env": ({"prefix"}, {"ignore"}),
    "mutable_tag": ({"pattern", "severity", "why"}, set()),
    "local_model_prefix": ({"prefix"}, set()),
    "gpu_occupied": ({"min_used_mib"}, {"vllm_process"}),
    "recipe": (
        {"id", "name", "model"},
        {
            "ref",
            "gpu_model",
            "min_gpus",
            "min_gpu_memory_gib",
            "min_parallel_gpus",
            "image_tags",
            "cuda_build",
            "min_driver_branch",
            "min_vllm",
            "args",
        },
    ),
}


_fail = fail


def _regex(text: Any, file: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(str(text), re.IGNORECASE)
    except re.error as exc:
        raise _fail(file, f"{where}: pattern does not compile ({exc})") from exc


def _add(data: CheckData, name: str, t: dict[str, Any], file: str) -> None:
    if name == "cuda_driver":
        data.cuda_driver.append(CudaDriver(str(t["cuda"]), str(t["min_driver"]), int(t["branch"])))
    elif name == "cuda_family":
        data.cuda_family[int(t["major"])] = str(t["min_driver"])
    elif name == "vllm_image_cuda":
        data.vllm_image_cuda.append((str(t["since"]), str(t["cuda"])))
    elif name == "image_tag_cuda":
        data.image_tag_cuda[str(t["tag"]).lower()] = str(t["cuda"])
    elif name == "official_image":
        data.official_images.add(str(t["repository"]).lower())
    elif name == "debug_variable":
        span = t.get("set_by_vllm")
        data.debug_variables.append(
            DebugVariable(
                name=str(t["name"]),
                severity=t["severity"],
                effect=str(t["effect"]),
                value=_regex(t["value"], file, t["name"]) if "value" in t else None,
                set_by_vllm=(str(span[0]), str(span[1])) if span else None,
            )
        )
    elif name == "inherited_env":
        data.inherited_prefixes.append((str(t["prefix"]), frozenset(str(n) for n in t.get("ignore", []))))
    elif name == "mutable_tag":
        data.mutable_tags.append(
            MutableTag(_regex(t["pattern"], file, "mutable_tag"), t["severity"], str(t["why"]))
        )
    elif name == "local_model_prefix":
        data.local_model_prefixes.append(str(t["prefix"]).lower())
    elif name == "gpu_occupied":
        data.occupied_min_used_mib = int(t["min_used_mib"])
        if "vllm_process" in t:
            data.vllm_process = _regex(t["vllm_process"], file, "gpu_occupied")
    elif name == "recipe":
        data.recipes.append(_recipe(t, file))


def _recipe(t: dict[str, Any], file: str) -> Recipe:
    args = t.get("args", {})
    if not isinstance(args, dict):
        raise _fail(file, f"recipe {t['id']}: args must be a table")
    return Recipe(
        id=str(t["id"]),
        name=str(t["name"]),
        model=_regex(t["model"], file, f"recipe {t['id']}"),
        ref=str(t.get("ref", "")),
        gpu_model=_regex(t["gpu_model"], file, f"recipe {t['id']}") if "gpu_model" in t else None,
        min_gpus=t.get("min_gpus"),
        min_gpu_memory_gib=t.get("min_gpu_memory_gib"),
        min_parallel_gpus=t.get("min_parallel_gpus"),
        image_tags=tuple(str(tag).lower() for tag in t.get("image_tags", [])),
        cuda_build=t.get("cuda_build"),
        min_driver_branch=t.get("min_driver_branch"),
        min_vllm=t.get("min_vllm"),
        args={str(k): str(v).lower() for k, v in args.items()},
        file=file,
    )


def load_file(path: Path, data: CheckData) -> None:
    name = str(path)
    document = read_toml(path)
    found = False
    for table_name, entry in array_tables(document, _TABLES, name):
        severity = entry.get("severity")
        if severity is not None and severity not in SEVERITIES:
            raise _fail(name, f"[[{table_name}]] severity '{severity}' is not one of {', '.join(SEVERITIES)}")
        _add(data, table_name, entry, name)
        found = True
    if found:
        data.files.append(name)


def load(extra_dirs: list[str] | None = None) -> CheckData:
    """Built-in check data plus any --rules directories (their files add entries)."""
    return _load(with_extra_dirs(rules_dir(), extra_dirs))


FOLDERS = ("compat", "recipes")


@lru_cache(maxsize=8)
def _load(dirs: tuple[str, ...]) -> CheckData:
    data = CheckData()
    for directory in dirs:
        for folder in FOLDERS:
            for path in sorted((Path(directory) / folder).rglob("*.toml")):
                load_file(path, data)
    # Newest first, so the first `since` not above a version is the one that applies.
    data.vllm_image_cuda.sort(key=lambda row: version_tuple(row[0]) or (), reverse=True)
    return data
