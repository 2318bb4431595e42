"""`rules check`: every rule file parses, every pattern compiles for both engines, is safe on
hostile input, and every example behaves — as a bare message and inside a real log prefix."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import regex

from vllm_triage.core.errors import RuleError
from vllm_triage.core.finding import Finding
from vllm_triage.core.phases import PHASES
from vllm_triage.core.provenance import Provenance
from vllm_triage.engine.literals import required_literals
from vllm_triage.engine.matcher import compile_rules, unanchor
from vllm_triage.engine.rules import GENERIC_FUNCTIONS, FrameHint, Rule, RuleSet, is_engine_file, load_file
from vllm_triage.logframe import parse_lines
from vllm_triage.resources import rules_dir

HOSTILE_INPUTS = ("a" * 20000 + "!", " " * 20000 + "x", "(" * 5000 + "\t" * 5000, "0." * 10000 + "Error")
REGEX_TIMEOUT_S = 0.5
# A counted repetition is compiled as that many copies of its item: `.{1,2000}` in one rule made
# the Rust automaton of the whole prefilter union too big for polars' regex cache, so every chunk
# of a big log recompiled it (≈ 1 s a time: 13 s for 64 MB instead of 0.5 s).
MAX_REPEAT = 255
_COUNTED = regex.compile(r"(?<!\\)\{(\d+)(?:,(\d*))?\}")
# Prefixes every example must survive: the pipeline strips them before matching.
PREFIXES = (
    "",
    "(Worker_TP1 pid=12) ERROR 01-02 03:04:05 [multiproc_executor.py:600] ",
    "2025-01-02T03:04:05.123456789Z (APIServer pid=1) INFO 01-02 03:04:05 [api_server.py:1] ",
    "vllm-1  | ",
)


def problem(file: str, rule: str | None, message: str, warning: bool = False) -> Finding:
    """A rule-file complaint as the one Finding: its id is the rule it is about ("" for the file
    as a whole: no rule has an empty id), a warning is reported while the rules still load."""
    return Finding(rule or "", "warning" if warning else "error", message, [Provenance(file)])


def is_warning(found: Finding) -> bool:
    return found.severity == "warning"


def problem_line(found: Finding) -> str:
    """`file: rule: message` (with `warning: ` in front of a warning), as `rules check` prints it."""
    file = found.evidence[0].file if found.evidence else ""
    text = f"{file}: {found.id}: {found.message}" if found.id else f"{file}: {found.message}"
    return f"warning: {text}" if is_warning(found) else text


def problem_json(found: Finding) -> dict[str, object]:
    """The `rules check --format json` row (its contract predates the Finding: kept as it was)."""
    return {
        "file": found.evidence[0].file if found.evidence else "",
        "rule": found.id or None,
        "message": found.message,
        "warning": is_warning(found),
    }


def _polars_error(pattern: str) -> str | None:
    try:
        pl.Series(["probe"]).str.contains(pattern)
    except Exception as exc:  # polars raises ComputeError for invalid Rust regex
        lines = str(exc).splitlines()
        # The Rust parser's verdict is on its own `error: …` line (the first line only says
        # "regex parse error:"), e.g. "look-around, including look-ahead and look-behind, is
        # not supported".
        reason = next((ln.removeprefix("error: ") for ln in lines if ln.startswith("error: ")), None)
        return reason or lines[0]
    return None


def _check_pattern(rule: Rule) -> list[str]:
    problems = []
    try:
        compiled = regex.compile(rule.pattern)
    except regex.error as exc:
        problems.append(f"pattern does not compile for Python regex: {exc}")
        compiled = None
    rust = _polars_error(rule.pattern)
    if rust:
        problems.append(
            f"pattern does not compile for polars (Rust regex, no look-around/back-references): {rust}"
        )
    for counted in _COUNTED.finditer(rule.pattern):
        if max(int(counted[1]), int(counted[2] or 0)) > MAX_REPEAT:
            problems.append(
                f"counted repetition {counted[0]} above {MAX_REPEAT}: the scan's automaton holds that"
                " many copies; use * or + (the line-length cap bounds it)"
            )
            break
    if compiled is not None:
        for text in HOSTILE_INPUTS:
            try:
                compiled.search(text, timeout=REGEX_TIMEOUT_S)
            except TimeoutError:
                problems.append("pattern backtracks for more than 0.5 s on hostile input")
                break
    return problems


def _stripped_messages(rules: list[Rule]) -> dict[str, str]:
    """The message the LogFrame leaves of every example behind every prefix, parsed in one
    vectorised call (one parse per example took seconds for the built-in rules alone)."""
    lines = sorted({prefix + example for rule in rules for example in rule.must_match for prefix in PREFIXES})
    if not lines:
        return {}
    frame = parse_lines(pl.Series("raw", lines, dtype=pl.String), "check", 1)
    return dict(zip(lines, frame["message"].to_list(), strict=True))


def _check_examples(
    rule: Rule, ruleset: RuleSet, prefilter: str, messages: dict[str, str], gate: str = ""
) -> list[str]:
    problems = []
    for example in rule.must_match:
        if not pl.Series([example]).str.contains(rule.pattern)[0]:
            problems.append(f"must_match example does not match: {example!r}")
            continue
        for prefix in PREFIXES:
            line = prefix + example
            # Markers are not in the prefilter: the scan finds their first lines with their own
            # unanchored patterns on the raw line (scan._first_marker_lines), so that is what
            # must select them. Noise never selects a line by itself.
            selector = unanchor(rule.pattern) if rule.kind == "marker" else prefilter
            if rule.kind != "noise" and not pl.Series([line]).str.contains(selector)[0]:
                what = "the marker search" if rule.kind == "marker" else "the prefilter"
                problems.append(f"{what} drops the example behind prefix {prefix!r}: {example!r}")
                break
            if gate and rule.kind != "noise" and not pl.Series([line]).str.contains(gate)[0]:
                # The literal pass runs first on every line (engine/literals.py): a line it drops
                # never reaches the patterns. A failure here is a bug in the literal extractor.
                problems.append(f"the literal pass drops the example behind prefix {prefix!r}: {example!r}")
                break
            message = messages[line]
            if not pl.Series([message]).str.contains(rule.pattern)[0]:
                problems.append(
                    f"example no longer matches once the prefix {prefix!r} is stripped: {example!r}"
                )
                break
    for example in rule.must_not_match:
        if pl.Series([example]).str.contains(rule.pattern)[0]:
            problems.append(f"must_not_match example matches: {example!r}")
    return problems


def check_frames(hints: list[FrameHint]) -> list[Finding]:
    """The frame table (rules/frames.toml): every entry names the vLLM file its function lives in
    (`vllm/….py`), a phase or teardown, and no (function, file) twice; shutdown frames of other
    packages (`teardown_frame`) name their package and a file of it. Pure: works on loaded hints."""
    problems: list[Finding] = []
    seen: dict[tuple[str, str, str], str] = {}
    for hint in hints:
        label = f"frame {hint.function}" + (f" ({hint.file})" if hint.file else "")
        if not hint.file:
            problems.append(problem(hint.source, label, "needs 'file': the vLLM file the function lives in"))
            if hint.function in GENERIC_FUNCTIONS:
                problems.append(
                    problem(
                        hint.source,
                        label,
                        f"generic function name {hint.function!r} without a file matches that name in "
                        "every package",
                        warning=True,
                    )
                )
        elif not hint.file.endswith(".py"):
            problems.append(problem(hint.source, label, "'file' must be a .py path"))
        elif hint.package == "vllm" and not hint.file.startswith("vllm/"):
            problems.append(
                problem(
                    hint.source,
                    label,
                    "'file' must start with 'vllm/' (relative to the vLLM repository root)",
                )
            )
        elif hint.package != "vllm" and hint.file.startswith("vllm/"):
            problems.append(
                problem(hint.source, label, "a vLLM file belongs in 'frame', not 'teardown_frame'")
            )
        if hint.package != "vllm" and not hint.package.isidentifier():
            problems.append(
                problem(hint.source, label, "a teardown_frame entry needs 'package' (torch, python…)")
            )
        if not hint.teardown and hint.phase not in PHASES:
            problems.append(
                problem(hint.source, label, f"phase {hint.phase!r} is not one of {', '.join(PHASES)}")
            )
        key = (hint.package, hint.function, hint.file)
        if hint.file and key in seen:
            if seen[key] == hint.source:
                problems.append(problem(hint.source, label, "duplicate (function, file) in the same file"))
            else:  # a --rules directory may override a built-in entry on purpose
                problems.append(
                    problem(hint.source, label, f"overrides the entry in {seen[key]}", warning=True)
                )
        seen.setdefault(key, hint.source)
    return problems


def check(extra_dirs: list[str] | None = None) -> tuple[list[Finding], int, int]:
    """(problems, files checked, rules checked)."""
    problems: list[Finding] = []
    rules: dict[str, Rule] = {}
    files: list[Path] = [f for f in sorted(rules_dir().rglob("*.toml")) if is_engine_file(f)]
    for extra in extra_dirs or []:
        path = Path(extra)
        if not path.is_dir():
            problems.append(problem(extra, None, "not a directory"))
            continue
        files.extend(f for f in sorted(path.rglob("*.toml")) if is_engine_file(f))
    frames: list[FrameHint] = []
    order: list[str] = []
    for path in files:
        try:
            file_rules, file_frames, file_order = load_file(path)
        except RuleError as exc:
            # The message already starts with the file (and rule) it is about.
            message = exc.message.removeprefix(f"{path}: ")
            problems.append(problem(str(path), None, message))
            continue
        frames.extend(file_frames)
        order = file_order or order
        ids_here: set[str] = set()
        for rule in file_rules:
            if rule.id in ids_here:
                problems.append(problem(str(path), rule.id, "duplicate id in the same file"))
            ids_here.add(rule.id)
            rules[rule.id] = rule
    valid = {}
    for rule in rules.values():
        pattern_problems = _check_pattern(rule)
        problems.extend(problem(rule.file, rule.id, p) for p in pattern_problems)
        if not pattern_problems:
            valid[rule.id] = rule
    ruleset = RuleSet(list(valid.values()), frames, order, [str(f) for f in files])
    compiled = compile_rules(ruleset)
    gate = compiled.gate(frozenset())
    messages = _stripped_messages(list(valid.values()))
    for rule in valid.values():
        problems.extend(
            problem(rule.file, rule.id, p)
            for p in _check_examples(rule, ruleset, compiled.prefilter, messages, gate)
        )
        if rule.kind != "noise" and required_literals(rule.pattern) is None:
            problems.append(
                problem(
                    rule.file,
                    rule.id,
                    "no literal: no fixed text every match must contain, so the whole pattern runs "
                    "on every line of a log (slower scans); give each alternative a fixed anchor",
                    warning=True,
                )
            )
    problems.extend(check_frames(frames))
    for name in order:
        if not any(r.milestone == name for r in rules.values()):
            problems.append(problem("milestone_order", None, f"milestone {name!r} has no marker rule"))
    return problems, len(files), len(rules)
