"""Rules are data: TOML files in rules/ (shipped in the wheel), extended with --rules DIR.

Every rule has an id, a kind, a phase, a category, a pattern that must compile for both polars'
Rust regex (linear time, used for the vectorised pass) and Python's `regex` (used with a timeout
for field extraction on the few candidate lines), human text, and examples that must and must not
match. Rules with a higher priority win when several match one line (specific beats generic).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import regex
import tomllib

from vllm_triage.core import tables
from vllm_triage.core.errors import RuleError
from vllm_triage.core.phases import PHASES
from vllm_triage.core.tables import with_extra_dirs
from vllm_triage.resources import rules_dir

KINDS = ("marker", "error", "consequence", "noise", "check")
# How a line's class is decided when several kinds match it: a noise line is never an error, and a
# consequence ("See root cause above") is never taken for the root even if it quotes the root.
KIND_PRECEDENCE = {"noise": 0, "consequence": 1, "error": 2}
PHASE_SOURCES = ("context", "rule")
IMPLIES = ("", "startup", "request")


# Names every package defines (dunders, torch's module protocol, decorators' wrappers, entry
# points): without a file they say nothing about which step ran, so a bare frame of one of these
# never decides a phase, and `rules check` warns when a table entry of this name has no file.
GENERIC_FUNCTIONS = frozenset(
    {
        "__init__",
        "__call__",
        "__post_init__",
        "__getattr__",
        "__getitem__",
        "__enter__",
        "__exit__",
        "__aenter__",
        "__aexit__",
        "<module>",
        "<lambda>",
        "<listcomp>",
        "<genexpr>",
        "<dictcomp>",
        "forward",
        "run",
        "main",
        "wrapper",
        "inner",
        "_wrapper",
        "sync_wrapper",
        "decorate_context",
        "_call_impl",
        "_wrapped_call_impl",
        "run_method",
        "execute_method",
        "collective_rpc",
        "load",
        "compile",
        "parse",
        "validate",
        "generate",
        "sample",
        "schedule",
        "create",
        "get_output",
        "cleanup",
        "shutdown",
    }
)


@dataclass(frozen=True)
class FrameHint:
    """A function of vLLM's call path (rules/frames.toml) that places a failure in a phase."""

    function: str
    phase: str  # "" for a teardown entry
    strong: bool
    source: str  # the rule file the entry was read from
    teardown: bool = False  # raised while shutting down: the error is a consequence, not a root
    file: str = ""  # where the function lives, relative to its package's parent: vllm/v1/worker/gpu_worker.py
    package: str = "vllm"  # the package of `file`; teardown_frame entries name torch or python
    versions: str = ""
    why: str = ""


@dataclass
class Rule:
    id: str
    kind: str
    phase: str
    category: str
    pattern: str
    file: str
    priority: int = 50
    explain: str = ""
    advice: str = ""
    refs: list[str] = field(default_factory=list)
    must_match: list[str] = field(default_factory=list)
    must_not_match: list[str] = field(default_factory=list)
    # error rules: "context" lets milestones and traceback frames refine the phase; "rule" keeps
    # the rule's phase because the cause itself is of that phase (a dtype the GPU cannot run is a
    # configuration problem wherever it is detected).
    phase_source: str = "context"
    # consequence rules: what the consequence tells about when the root happened.
    implies: str = ""
    # marker rules: the milestone's name in the canonical startup order, and flags.
    milestone: str = ""
    ready: bool = False
    startup_done: bool = False
    shutdown: bool = False
    # marker rules: the milestone that the same process printing this marker a second time marks
    # (V0 logs the attention backend when the model runner is built, then again from the layers
    # that load_model builds).
    again: str = ""
    extra: dict = field(default_factory=dict)

    _compiled: regex.Pattern | None = field(default=None, repr=False, compare=False)

    @property
    def compiled(self) -> regex.Pattern:
        if self._compiled is None:
            self._compiled = regex.compile(self.pattern)
        return self._compiled


@dataclass
class RuleSet:
    rules: list[Rule]
    frames: list[FrameHint]
    milestone_order: list[str]
    files: list[str]

    def by_id(self) -> dict[str, Rule]:
        return {r.id: r for r in self.rules}

    @property
    def teardown_functions(self) -> frozenset[str]:
        """Names of shutdown frames, for callers that see function names only. Generic names
        (`shutdown`, `cleanup`) are left out: without their file they would mark any package's
        frame; analysis.callpath matches them with their file."""
        return frozenset(
            h.function for h in self.frames if h.teardown and h.function not in GENERIC_FUNCTIONS
        )

    def of_kind(self, *kinds: str) -> list[Rule]:
        return [r for r in self.rules if r.kind in kinds]

    def milestone_phases(self) -> list[tuple[str, str]]:
        """(milestone, the phase its marker opens) in the canonical startup order, for the milestones
        a marker of a known phase reaches: the slots of the report's timeline. From the rules as
        loaded, so a `--rules` directory's markers and `milestone_order` count like the built-in ones."""
        return milestone_phases(self.rules, self.milestone_order)


def milestone_phases(rules: Iterable[Rule], order: list[str]) -> list[tuple[str, str]]:
    """(milestone, the phase its marker opens) for `order`'s milestones a marker reaches."""
    phase_of: dict[str, str] = {}
    for rule in rules:
        if rule.kind == "marker" and rule.milestone and rule.phase in PHASES:
            phase_of.setdefault(rule.milestone, rule.phase)
    return [(m, phase_of[m]) for m in dict.fromkeys(order) if m in phase_of]


_RULE_KEYS = {
    "id",
    "kind",
    "phase",
    "category",
    "pattern",
    "priority",
    "explain",
    "advice",
    "refs",
    "must_match",
    "must_not_match",
    "phase_source",
    "implies",
    "milestone",
    "ready",
    "startup_done",
    "shutdown",
    "again",
    "extra",
}


def _fail(file: str, rule_id: str | None, message: str) -> RuleError:
    return tables.rule_fail(file, "rule", rule_id, message)


def _rule_from_table(table: dict, file: str) -> Rule:
    rule_id = tables.rule_id(table, file, "rule", _RULE_KEYS, "a rule")
    for key in ("kind", "phase", "pattern"):
        if not isinstance(table.get(key), str) or not table.get(key):
            raise _fail(file, rule_id, f"missing or empty '{key}'")
    kind, phase = table["kind"], table["phase"]
    if kind not in KINDS:
        raise _fail(file, rule_id, f"kind '{kind}' is not one of {', '.join(KINDS)}")
    if phase not in PHASES and phase != "any":
        raise _fail(file, rule_id, f"phase '{phase}' is not one of {', '.join(PHASES)} or 'any'")
    phase_source = table.get("phase_source", "context")
    if phase_source not in PHASE_SOURCES:
        raise _fail(file, rule_id, f"phase_source must be one of {PHASE_SOURCES}")
    implies = table.get("implies", "")
    if implies not in IMPLIES:
        raise _fail(file, rule_id, f"implies must be one of {IMPLIES}")
    if kind == "error" and not table.get("explain"):
        raise _fail(file, rule_id, "an error rule needs 'explain'")
    must_match = tables.string_list(table, "must_match", file, "rule", rule_id)
    if kind in ("error", "consequence", "noise", "marker") and not must_match:
        raise _fail(file, rule_id, "needs at least one example in 'must_match'")
    return Rule(
        id=rule_id,
        kind=kind,
        phase=phase,
        category=table.get("category", kind),
        pattern=table["pattern"],
        file=file,
        priority=int(table.get("priority", 50)),
        explain=table.get("explain", ""),
        advice=table.get("advice", ""),
        refs=tables.string_list(table, "refs", file, "rule", rule_id),
        must_match=list(must_match),
        must_not_match=tables.string_list(table, "must_not_match", file, "rule", rule_id),
        phase_source=phase_source,
        implies=implies,
        milestone=table.get("milestone", ""),
        ready=bool(table.get("ready", False)),
        startup_done=bool(table.get("startup_done", False)),
        shutdown=bool(table.get("shutdown", False)),
        again=str(table.get("again", "")),
        extra=dict(table.get("extra", {})),
    )


_FRAME_KEYS = {"function", "file", "package", "phase", "strong", "teardown", "versions", "why"}
_TEARDOWN_FRAME_KEYS = {"function", "file", "package", "why"}


def _frames_from_table(tables: list, file: str, foreign: bool = False) -> list[FrameHint]:
    """`frame` entries (vLLM functions), or with `foreign` the `teardown_frame` entries (torch's
    and the standard library's shutdown functions). A missing `file` is accepted here so older
    user tables keep loading (the name then matches in any package); `rules check` reports it."""
    hints = []
    kind = "teardown_frame" if foreign else "frame"
    for table in tables:
        if not isinstance(table, dict):
            raise _fail(file, None, f"{kind} entry {table!r} is not a table")
        function = table.get("function")
        if not isinstance(function, str) or not function:
            raise _fail(file, None, f"{kind} entry {table!r} needs 'function'")
        unknown = set(table) - (_TEARDOWN_FRAME_KEYS if foreign else _FRAME_KEYS)
        if unknown:
            raise _fail(file, None, f"{kind} entry {function}: unknown field(s) {', '.join(sorted(unknown))}")
        where: dict[str, Any] = {
            "file": str(table.get("file", "")),
            "versions": str(table.get("versions", "")),
            "why": str(table.get("why", "")),
        }
        if foreign:
            package = str(table.get("package", ""))
            hints.append(FrameHint(function, "", False, file, teardown=True, package=package, **where))
            continue
        if table.get("teardown"):
            hints.append(FrameHint(function, "", False, file, teardown=True, **where))
            continue
        phase = table.get("phase")
        if phase not in PHASES:
            raise _fail(file, None, f"frame entry {function}: needs a valid 'phase' or teardown = true")
        # A platform plugin (vllm-ascend …) runs the same start-up steps in its own package.
        package = str(table.get("package", "vllm"))
        hints.append(
            FrameHint(function, phase, bool(table.get("strong", True)), file, package=package, **where)
        )
    return hints


@lru_cache(maxsize=256)
def _parse_toml(name: str, mtime_ns: int, size: int) -> dict:
    """Parsed once per file version: every command loads the rules, and rules/ also holds the
    other commands' TOML (compat, redact, recipes…), which pure-Python tomllib parses slowly; the
    parsed document is also kept on disk for the next run (core/cache.py)."""
    from vllm_triage.core.cache import load_toml

    return load_toml(Path(name))


def load_file(path: Path) -> tuple[list[Rule], list[FrameHint], list[str]]:
    name = str(path)
    try:
        stat = path.stat()
        data = _parse_toml(name, stat.st_mtime_ns, stat.st_size)  # read-only below
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(name, None, f"cannot read ({exc})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise _fail(name, None, f"is not valid TOML ({exc})") from exc
    rules = [_rule_from_table(t, name) for t in data.get("rule", [])]
    frames = _frames_from_table(data.get("frame", []), name)
    frames += _frames_from_table(data.get("teardown_frame", []), name, foreign=True)
    order = list(data.get("milestone_order", []))
    return rules, frames, order


_ENGINE_KEYS = ("[[rule]]", "frame", "milestone_order")


def is_engine_file(path: Path) -> bool:
    """Whether a TOML file under rules/ holds triage rules. Other data families live beside them
    (compat tables, recipes, compare data, redaction patterns, the known-issue catalogue) and have
    their own loaders: a half-written redaction file must not stop every triage."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True  # let load_file report it
    return any(key in text for key in _ENGINE_KEYS)


def load(extra_dirs: list[str] | None = None, include_builtin: bool = True) -> RuleSet:
    """Load the built-in rules plus any --rules directories (later ids override earlier ones)."""
    builtin, *extra = (Path(d) for d in with_extra_dirs(rules_dir(), extra_dirs))
    dirs = [builtin, *extra] if include_builtin else extra
    rules: dict[str, Rule] = {}
    frames: list[FrameHint] = []
    order: list[str] = []
    files: list[str] = []
    for directory in dirs:
        for path in sorted(directory.rglob("*.toml")):
            if not is_engine_file(path):
                continue
            file_rules, file_frames, file_order = load_file(path)
            files.append(str(path))
            seen_here: set[str] = set()
            for rule in file_rules:
                if rule.id in seen_here:
                    raise _fail(str(path), rule.id, "duplicate id in the same file")
                seen_here.add(rule.id)
                rules[rule.id] = rule
            frames.extend(file_frames)
            order = file_order or order
    if include_builtin and not rules:
        raise RuleError(f"no rules found under {dirs[0]}")
    return RuleSet(rules=list(rules.values()), frames=frames, milestone_order=order, files=files)
