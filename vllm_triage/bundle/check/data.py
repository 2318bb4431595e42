"""The checklist as data: `[checklist]`, `[[item]]`, `[[diagnosis]]` and `[[placeholder]]` tables in
rules/checklist.toml (beside the engine's `[[rule]]` tables, which this loader ignores, as the
engine ignores these).

Strict like the other loaders: an unknown or missing field, an item the code cannot judge, a
diagnosis requiring an unknown item, or a placeholder whose examples misbehave is a RuleError that
names the file — a typo must never silently drop an item from the checklist.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import regex

from vllm_triage.core.tables import check_keys, fail, read_toml
from vllm_triage.resources import rules_dir

CHECKLIST_FILE = "checklist.toml"
COLLECT_PLACES = ("host", "container", "pod", "log", "manifest", "method")
_REGEX_TIMEOUT_S = 0.5
_BLOCK_TIMEOUT_S = 5.0

# table → (required keys, optional keys)
_TABLES: dict[str, tuple[set[str], set[str]]] = {
    "item": ({"id", "title", "why"}, {"collect"}),
    "diagnosis": ({"id", "label", "requires"}, {"categories", "rules", "phases"}),
    "placeholder": ({"id", "explain", "pattern"}, {"roles", "must_match", "must_not_match"}),
}
_SETTINGS = {"start_milestones", "default_gpu_memory_utilization", "collect_all"}


@dataclass(frozen=True)
class Item:
    id: str
    title: str
    why: str
    collect: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Diagnosis:
    id: str
    label: str
    requires: tuple[str, ...]
    categories: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    phases: tuple[str, ...] = ()

    def matches(self, first_error: dict[str, Any] | None, phase: str) -> bool:
        """Does the run's first error (triage JSON) call for this diagnosis's requirements?"""
        if first_error is None:
            return False
        category = str(first_error.get("category") or "")
        rule = str(first_error.get("rule") or "")
        return (
            any(fnmatch.fnmatchcase(category, p) for p in self.categories)
            or any(fnmatch.fnmatchcase(rule, p) for p in self.rules)
            or phase in self.phases
        )


@dataclass(frozen=True)
class Placeholder:
    id: str
    explain: str
    pattern: str
    roles: tuple[str, ...] = ()
    must_match: tuple[str, ...] = ()
    must_not_match: tuple[str, ...] = ()

    @property
    def compiled(self) -> regex.Pattern:
        return _compile(self.pattern)

    def applies_to(self, role: str) -> bool:
        return not self.roles or role in self.roles

    def search(self, line: str) -> bool:
        try:
            return self.compiled.search(line, timeout=_REGEX_TIMEOUT_S) is not None
        except TimeoutError:
            return False  # a line too hostile to scan is no paste placeholder

    def anywhere(self, text: str) -> bool:
        """A cheap first pass over a whole text (a log has millions of lines and no placeholder):
        a text without any literal the pattern requires (engine/literals.py) cannot match it; else
        one linear-time pass of the Rust engine over the text, where the pattern compiles there
        (not with lookarounds): Python's backtracking engine took ~1 s over 8 MiB of log."""
        from vllm_triage.engine.literals import required_literals

        found = required_literals(self.pattern)
        if found is not None and not found[1] and not any(lit in text for lit in found[0]):
            return False
        rust = _rust_search(self.pattern, text)
        if rust is not None:
            return rust
        try:
            return _compile(self.pattern, regex.MULTILINE).search(text, timeout=_BLOCK_TIMEOUT_S) is not None
        except TimeoutError:
            return True  # cannot tell: look line by line


def _rust_search(pattern: str, text: str) -> bool | None:
    """Whether the pattern (lines as ^…$) occurs in the text, by polars' Rust regex; None when
    the pattern is not one that engine reads (then Python decides). Only a first pass: the lines
    it lets through are matched by Python's engine one by one, as before. Branch by branch where
    the pattern splits (bundle/check/branches.py): one branch without a literal made the whole
    alternation slow."""
    import polars as pl

    from vllm_triage.bundle.check.branches import top_level_branches

    haystack = pl.Series([text], dtype=pl.String)
    try:
        return any(
            bool(haystack.str.contains(f"(?m){branch}")[0])
            for branch in top_level_branches(pattern) or [pattern]
        )
    except Exception:  # a ComputeError for syntax the Rust engine lacks
        return None


@dataclass
class ChecklistData:
    items: list[Item]
    diagnoses: list[Diagnosis]
    placeholders: list[Placeholder]
    start_milestones: tuple[str, ...]
    default_gpu_memory_utilization: float
    collect_all: str
    file: str

    def item(self, item_id: str) -> Item:
        return next(i for i in self.items if i.id == item_id)

    def conditional_ids(self) -> set[str]:
        """Items that join the checklist only when a diagnosis requires them."""
        return {item_id for d in self.diagnoses for item_id in d.requires}


@lru_cache(maxsize=64)
def _compile(pattern: str, flags: int = 0) -> regex.Pattern:
    return regex.compile(pattern, flags)


def _strings(value: Any, file: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise fail(file, f"{where}: expected a list of strings")
    return tuple(value)


def _table(entry: Any, name: str, file: str) -> dict[str, Any]:
    return check_keys(entry, name, file, _TABLES)


def _item(entry: dict[str, Any], file: str) -> Item:
    collect = entry.get("collect", {})
    if not isinstance(collect, dict) or not all(isinstance(v, str) for v in collect.values()):
        raise fail(file, f"[[item]] {entry['id']}: collect must be a table of strings")
    unknown = set(collect) - set(COLLECT_PLACES)
    if unknown:
        raise fail(
            file,
            f"[[item]] {entry['id']}: collect has unknown place(s) {', '.join(sorted(unknown))} "
            f"(known: {', '.join(COLLECT_PLACES)})",
        )
    return Item(str(entry["id"]), str(entry["title"]), str(entry["why"]), dict(collect))


def _placeholder(entry: dict[str, Any], file: str) -> Placeholder:
    where = f"[[placeholder]] {entry['id']}"
    try:
        _compile(str(entry["pattern"]))
    except regex.error as exc:
        raise fail(file, f"{where}: pattern does not compile ({exc})") from exc
    placeholder = Placeholder(
        str(entry["id"]),
        str(entry["explain"]),
        str(entry["pattern"]),
        _strings(entry.get("roles", []), file, where),
        _strings(entry.get("must_match", []), file, where),
        _strings(entry.get("must_not_match", []), file, where),
    )
    for example in placeholder.must_match:
        if not placeholder.search(example):
            raise fail(file, f"{where}: must_match example not found: {example!r}")
    for example in placeholder.must_not_match:
        if placeholder.search(example):
            raise fail(file, f"{where}: must_not_match example found: {example!r}")
    return placeholder


def parse(document: dict[str, Any], file: str, known_items: set[str]) -> ChecklistData:
    settings = document.get("checklist", {})
    if not isinstance(settings, dict):
        raise fail(file, "[checklist] must be a table")
    unknown = set(settings) - _SETTINGS
    if unknown:
        raise fail(file, f"[checklist]: unknown field(s) {', '.join(sorted(unknown))}")
    items = [_item(_table(e, "item", file), file) for e in document.get("item", [])]
    ids = [i.id for i in items]
    duplicates = {i for i in ids if ids.count(i) > 1}
    if duplicates:
        raise fail(file, f"[[item]] duplicate id(s) {', '.join(sorted(duplicates))}")
    not_judged = set(ids) - known_items
    if not_judged:
        raise fail(file, f"[[item]] {', '.join(sorted(not_judged))}: no check in the code for this id")
    not_listed = known_items - set(ids)
    if not_listed:
        raise fail(file, f"the checklist misses item(s) {', '.join(sorted(not_listed))}")
    diagnoses = []
    for entry in document.get("diagnosis", []):
        entry = _table(entry, "diagnosis", file)
        where = f"[[diagnosis]] {entry['id']}"
        requires = _strings(entry["requires"], file, where)
        unknown_items = set(requires) - set(ids)
        if unknown_items:
            raise fail(file, f"{where}: requires unknown item(s) {', '.join(sorted(unknown_items))}")
        diagnoses.append(
            Diagnosis(
                str(entry["id"]),
                str(entry["label"]),
                requires,
                _strings(entry.get("categories", []), file, where),
                _strings(entry.get("rules", []), file, where),
                _strings(entry.get("phases", []), file, where),
            )
        )
    placeholders = [
        _placeholder(_table(e, "placeholder", file), file) for e in document.get("placeholder", [])
    ]
    return ChecklistData(
        items=items,
        diagnoses=diagnoses,
        placeholders=placeholders,
        start_milestones=_strings(
            settings.get("start_milestones", ["version"]), file, "[checklist] start_milestones"
        ),
        default_gpu_memory_utilization=float(settings.get("default_gpu_memory_utilization", 0.9)),
        collect_all=str(settings.get("collect_all", "")),
        file=file,
    )


def load(known_items: set[str], path: Path | None = None) -> ChecklistData:
    """The checklist data (rules/checklist.toml unless `path` is given)."""
    target = path or rules_dir() / CHECKLIST_FILE
    return _load(str(target), frozenset(known_items))


@lru_cache(maxsize=8)
def _load(file: str, known_items: frozenset[str]) -> ChecklistData:
    return parse(read_toml(Path(file)), file, set(known_items))
