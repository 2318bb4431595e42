"""The data behind `diff` and `series`: TOML tables under rules/compare/ (noise, knob groups,
layers, defaults, drift explanations, the reintroduction order, thresholds).

These tables sit beside the log rules but are not `[[rule]]` tables, so the rule engine ignores
them. Like the engine this loader is strict: an unknown or missing field is a RuleError naming the
file, so a typo in the data never silently turns a change into noise.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from vllm_triage.core.errors import RuleError
from vllm_triage.core.tables import array_tables, fail, read_toml, with_extra_dirs
from vllm_triage.resources import rules_dir

# Stage ids the code knows how to detect (vllm_triage/compare/stages.py).
KNOWN_STAGES = (
    "base",
    "prefix_caching",
    "shared_prefix",
    "cache_hits",
    "long_context",
    "concurrency",
    "multi_node",
)
# Drift ids decided in code rather than by names.
SPECIAL_DRIFT = ("nccl-inherited", "node-undocumented")
NOISE_WHEN = ("same-node",)


def name_matches(name: str, patterns: tuple[str, ...] | list[str]) -> bool:
    """fnmatch with `*` only: names are dotted and case matters (env variables)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


@dataclass(frozen=True)
class NoiseRule:
    id: str
    why: str
    names: tuple[str, ...]
    mask: re.Pattern[str] | None = None
    when: str | None = None


@dataclass(frozen=True)
class Layer:
    id: str
    order: int
    label: str


@dataclass(frozen=True)
class KnobGroup:
    id: str
    label: str
    layer: str
    knobs: tuple[str, ...]
    per_name: bool = False
    stand_ins: tuple[str, ...] = ()
    follows: tuple[str, ...] = ()
    # A knob recorded in one run only counts as a change when the other run recorded others of its
    # family from the same kind of artefact (it would have shown it): absent means "not set".
    # False where absent means "not captured" (an inspect without RepoDigests has a digest too).
    absent_is_unset: bool = False

    def claims_knob(self, name: str) -> bool:
        return name_matches(name, self.knobs)

    def names_exactly(self, name: str) -> bool:
        return name in self.knobs or name in self.stand_ins


@dataclass(frozen=True)
class Default:
    name: str
    value: Any
    since: str | None = None
    until: str | None = None


@dataclass(frozen=True)
class DriftKind:
    id: str
    names: tuple[str, ...]
    message: str
    advice: str


@dataclass(frozen=True)
class Stage:
    id: str
    order: int
    label: str


@dataclass
class Settings:
    same_failure_similarity: float = 0.85
    busy_gpu_mib: int = 1024
    long_context_tokens: int = 32768
    long_prompt_chars: int = 32768


@dataclass
class CompareData:
    noise: list[NoiseRule] = field(default_factory=list)
    layers: dict[str, Layer] = field(default_factory=dict)
    groups: list[KnobGroup] = field(default_factory=list)
    defaults: dict[str, list[Default]] = field(default_factory=dict)
    drift: list[DriftKind] = field(default_factory=list)
    stages: list[Stage] = field(default_factory=list)
    settings: Settings = field(default_factory=Settings)
    files: list[str] = field(default_factory=list)

    def layer_order(self, layer_id: str) -> int:
        layer = self.layers.get(layer_id)
        return layer.order if layer is not None else 99

    def layer_label(self, layer_id: str) -> str:
        layer = self.layers.get(layer_id)
        return layer.label if layer is not None else layer_id

    def drift_kind(self, drift_id: str) -> DriftKind | None:
        return next((d for d in self.drift if d.id == drift_id), None)


# table name → (required keys, optional keys)
_TABLES: dict[str, tuple[set[str], set[str]]] = {
    "noise": ({"id", "why", "names"}, {"mask", "when"}),
    "layer": ({"id", "order", "label"}, set()),
    "knob_group": (
        {"id", "label", "layer", "knobs"},
        {"per_name", "stand_ins", "follows", "absent_is_unset"},
    ),
    "default": ({"name", "value"}, {"since", "until"}),
    "drift": ({"id", "names", "message", "advice"}, set()),
    "stage": ({"id", "order", "label"}, set()),
}
_SETTINGS_TABLE = "compare_settings"


_fail = fail


def _names(value: Any, file: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(file, f"{where}: expected a list of names")
    return tuple(value)


def _add(data: CompareData, name: str, t: dict[str, Any], file: str) -> None:
    where = f"[[{name}]] {t.get('id') or t.get('name')}"
    if name == "noise":
        mask = None
        if "mask" in t:
            try:
                mask = re.compile(str(t["mask"]))
            except re.error as exc:
                raise _fail(file, f"{where}: mask does not compile ({exc})") from exc
        when = t.get("when")
        if when is not None and when not in NOISE_WHEN:
            raise _fail(file, f"{where}: when = {when!r} is not one of {', '.join(NOISE_WHEN)}")
        data.noise.append(NoiseRule(str(t["id"]), str(t["why"]), _names(t["names"], file, where), mask, when))
    elif name == "layer":
        data.layers[str(t["id"])] = Layer(str(t["id"]), int(t["order"]), str(t["label"]))
    elif name == "knob_group":
        group = KnobGroup(
            id=str(t["id"]),
            label=str(t["label"]),
            layer=str(t["layer"]),
            knobs=_names(t["knobs"], file, where),
            per_name=bool(t.get("per_name", False)),
            stand_ins=_names(t.get("stand_ins", []), file, where),
            follows=_names(t.get("follows", []), file, where),
            absent_is_unset=bool(t.get("absent_is_unset", t.get("per_name", False))),
        )
        # A --rules file overrides a group by id, in place: the order of groups is their precedence.
        ids = [g.id for g in data.groups]
        if group.id in ids:
            data.groups[ids.index(group.id)] = group
        else:
            data.groups.append(group)
    elif name == "default":
        data.defaults.setdefault(str(t["name"]), []).append(
            Default(str(t["name"]), t["value"], _opt_str(t.get("since")), _opt_str(t.get("until")))
        )
    elif name == "drift":
        data.drift = [d for d in data.drift if d.id != str(t["id"])]
        data.drift.append(
            DriftKind(str(t["id"]), _names(t["names"], file, where), str(t["message"]), str(t["advice"]))
        )
    elif name == "stage":
        if t["id"] not in KNOWN_STAGES:
            raise _fail(file, f"{where}: unknown stage (known: {', '.join(KNOWN_STAGES)})")
        data.stages = [s for s in data.stages if s.id != str(t["id"])]
        data.stages.append(Stage(str(t["id"]), int(t["order"]), str(t["label"])))


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _settings(table: Any, data: CompareData, file: str) -> None:
    if not isinstance(table, dict):
        raise _fail(file, f"[{_SETTINGS_TABLE}] must be a table")
    known = set(Settings.__dataclass_fields__)
    unknown = set(table) - known
    if unknown:
        raise _fail(file, f"[{_SETTINGS_TABLE}]: unknown field(s) {', '.join(sorted(unknown))}")
    for key, value in table.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise _fail(file, f"[{_SETTINGS_TABLE}] {key}: expected a number")
        current = getattr(data.settings, key)
        setattr(data.settings, key, type(current)(value))


def load_file(path: Path, data: CompareData) -> None:
    name = str(path)
    document = read_toml(path)
    found = False
    for table_name, entry in array_tables(document, _TABLES, name):
        _add(data, table_name, entry, name)
        found = True
    if _SETTINGS_TABLE in document:
        _settings(document[_SETTINGS_TABLE], data, name)
        found = True
    if found:
        data.files.append(name)


def _validate(data: CompareData) -> None:
    for group in data.groups:
        if group.layer not in data.layers:
            raise RuleError(
                f"knob_group {group.id}: unknown layer {group.layer!r} (known: {', '.join(data.layers)})"
            )
    data.stages.sort(key=lambda s: s.order)


def load(extra_dirs: list[str] | None = None) -> CompareData:
    """Built-in compare data (rules/compare/) plus any --rules directories (their entries add to or
    override it). Only rules/compare/ is read of the built-in rules: the other rule files are not
    this module's business, and one of them being broken must not stop a diff."""
    return _load(with_extra_dirs(rules_dir() / "compare", extra_dirs))


@lru_cache(maxsize=8)
def _load(dirs: tuple[str, ...]) -> CompareData:
    data = CompareData()
    for directory in dirs:
        for path in sorted(Path(directory).rglob("*.toml")):
            load_file(path, data)
    _validate(data)
    return data
