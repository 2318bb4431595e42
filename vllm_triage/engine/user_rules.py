"""Rule files given with --rules are vetted before triage runs them: what `rules check` rejects
(a file that is not TOML, a pattern that does not compile for both engines, one that backtracks
on hostile input such as `(a+)+$`, an example that does not behave) is refused with one line and
exit 4, instead of being ignored, crashing the regex engine, or hanging on a long line.

The built-in rules are checked by `rules check` in CI; only the user's files are vetted here, so
triage without --rules pays nothing.
"""

from __future__ import annotations

from pathlib import Path

import tomllib

from vllm_triage.core.errors import RuleError, clip
from vllm_triage.engine import check as rule_check
from vllm_triage.engine.matcher import compile_rules
from vllm_triage.engine.rules import Rule, RuleSet


def vet(extra_dirs: list[str], ruleset: RuleSet) -> None:
    """Raise RuleError for the first problem `rules check` would report in the user's files."""
    files = _user_files(extra_dirs)
    if not files:
        return
    key = tuple((f, *_version(f)) for f in files)
    if key in _VETTED:  # a fleet scan loads the rules once per bundle: vet each version once
        return
    _vet(files, ruleset)
    _VETTED.add(key)


_VETTED: set[tuple] = set()


def _user_files(extra_dirs: list[str]) -> list[str]:
    found: list[str] = []
    for extra in extra_dirs:
        path = Path(extra)
        if path.is_dir():
            found.extend(str(f) for f in sorted(path.rglob("*.toml")))
    return found


def _version(name: str) -> tuple[int, int]:
    try:
        info = Path(name).stat()
    except OSError:
        return (0, 0)
    return (info.st_mtime_ns, info.st_size)


def _vet(files: list[str], ruleset: RuleSet) -> None:
    for name in files:
        # Any family (rules, compare data, redaction patterns): a file that is not TOML is rejected
        # by `rules check`, so triage must not skip it silently.
        try:
            tomllib.loads(Path(name).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise RuleError(f"{name}: cannot read ({exc})") from exc
        except tomllib.TOMLDecodeError as exc:
            raise RuleError(f"{name}: is not valid TOML ({exc})") from exc
    mine = [r for r in ruleset.rules if r.file in set(files)]
    problems: list[tuple[Rule, str]] = []
    for rule in mine:
        problems.extend((rule, p) for p in rule_check._check_pattern(rule))
    if not problems:
        prefilter = compile_rules(ruleset).prefilter
        messages = rule_check._stripped_messages(mine)
        for rule in mine:
            problems.extend((rule, p) for p in rule_check._check_examples(rule, ruleset, prefilter, messages))
    if problems:
        rule, message = problems[0]
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        raise RuleError(
            f"{rule.file}: rule {rule.id}: {clip(message)}{more}: not used; "
            f"see `vllm-triage rules check --rules DIR`"
        )
