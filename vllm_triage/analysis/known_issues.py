"""The known-issue catalogue (rules/known_issues.toml): load it, match a failure against it.

A match is a *similarity*, never a diagnosis: it is reported with its score, and only when the
run's vLLM version does not already contain the fix (a 0.9.0 run cannot be failing on a bug fixed
in 0.9.0 — it is failing on something that looks like it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz

from vllm_triage.analysis import versions
from vllm_triage.analysis.signature import normalise, similarity
from vllm_triage.core.errors import RuleError
from vllm_triage.core.tables import read_toml
from vllm_triage.resources import rules_dir

# Below this a "match" is mostly shared boilerplate (`RuntimeError: CUDA error: …`).
MIN_SCORE = 0.75
# A match in another category than the one triage gave is less likely the same failure; it is
# scaled, not excluded, because rule categories evolve and pasted snippets get generic ones.
OTHER_CATEGORY_FACTOR = 0.9

_KEYS = {
    "id",
    "ref",
    "url",
    "title",
    "category",
    "signature",
    "affected",
    "fixed_in",
    "workaround",
    "example",
    "requires",
}
_REQUIRED = ("id", "ref", "title", "signature", "workaround")


@dataclass(frozen=True)
class KnownIssue:
    id: str
    ref: str
    title: str
    signatures: tuple[str, ...]
    workaround: str
    category: str = ""
    url: str = ""
    affected: str = ""
    fixed_in: str = ""
    example: str = ""
    file: str = ""
    # Words of which the raw message must hold one. A signature is compared once normalised, and
    # normalising turns the one word that makes some messages this issue into a placeholder
    # (`No such file or directory: '/usr/local/cuda/bin/nvcc'` → `'<path>'`): without it every
    # missing file would read as the missing compiler.
    requires: tuple[str, ...] = ()


@dataclass(frozen=True)
class Match:
    issue: KnownIssue
    score: float  # 0..1
    suppressed: bool  # the run's version already contains the fix
    in_affected_range: bool | None  # None: the run's version is unknown
    reasons: list[str] = field(default_factory=list, compare=False, hash=False)

    def to_json(self) -> dict[str, Any]:
        issue = self.issue
        return {
            "id": issue.id,
            "ref": issue.ref,
            "url": issue.url or None,
            "title": issue.title,
            "score": round(self.score, 3),
            "affected": issue.affected or None,
            "fixed_in": issue.fixed_in or None,
            "in_affected_range": self.in_affected_range,
            "workaround": issue.workaround,
        }


def _issue_from_table(table: dict, file: str) -> KnownIssue:
    issue_id = table.get("id")
    where = f"{file}: known_issue {issue_id or '?'}"
    unknown = set(table) - _KEYS
    if unknown:
        raise RuleError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    for key in _REQUIRED:
        if not table.get(key):
            raise RuleError(f"{where}: missing or empty '{key}'")
    raw = table["signature"]
    signatures = tuple(raw) if isinstance(raw, list) else (raw,)
    if not signatures or not all(isinstance(s, str) and s for s in signatures):
        raise RuleError(f"{where}: 'signature' must be a string or a list of strings")
    for key in ("affected", "fixed_in"):
        value = table.get(key, "")
        if not isinstance(value, str):
            raise RuleError(f"{where}: '{key}' must be a string")
    if table.get("fixed_in") and versions.parse(table["fixed_in"]) is None:
        raise RuleError(f"{where}: fixed_in {table['fixed_in']!r} is not a version")
    try:
        versions.in_range("0.0.0", table.get("affected", ""))
    except ValueError as exc:
        raise RuleError(f"{where}: {exc}") from exc
    required = table.get("requires", [])
    required = [required] if isinstance(required, str) else required
    if not isinstance(required, list) or not all(isinstance(w, str) and w for w in required):
        raise RuleError(f"{where}: 'requires' must be a string or a list of strings")
    return KnownIssue(
        requires=tuple(required),
        id=str(issue_id),
        ref=table["ref"],
        title=table["title"],
        signatures=signatures,
        workaround=table["workaround"],
        category=table.get("category", ""),
        url=table.get("url", ""),
        affected=table.get("affected", ""),
        fixed_in=table.get("fixed_in", ""),
        example=table.get("example", ""),
        file=file,
    )


def load(extra_dirs: tuple[str, ...] = ()) -> list[KnownIssue]:
    """Every [[known_issue]] under rules/ (built-in first, then extra dirs; a later id wins)."""
    return list(_load(tuple(extra_dirs)))


@lru_cache(maxsize=8)
def _load(extra_dirs: tuple[str, ...]) -> tuple[KnownIssue, ...]:
    found: dict[str, KnownIssue] = {}
    for directory in (rules_dir(), *(Path(d) for d in extra_dirs)):
        for path in sorted(Path(directory).rglob("*.toml")):
            document = read_toml(path)
            seen_here: set[str] = set()
            for table in document.get("known_issue", []):
                issue = _issue_from_table(table, str(path))
                if issue.id in seen_here:
                    raise RuleError(f"{path}: known_issue {issue.id}: duplicate id in the same file")
                seen_here.add(issue.id)
                found[issue.id] = issue
    return tuple(found.values())


def score(message: str, signature: str) -> float:
    """0..1. Catalogue signatures are the stable core of a message and runs carry tails (sizes,
    advice, a model name), so containment counts most (`partial_ratio`: the shorter string's best
    alignment inside the longer); the whole-string similarity keeps a short generic signature from
    scoring 1.0 inside any long message."""
    if not message or not signature:
        return 0.0
    contained = fuzz.partial_ratio(signature, message) / 100.0
    return 0.7 * contained + 0.3 * similarity(message, signature)


def match(
    message: str | None,
    category: str | None,
    vllm_version: str | None,
    catalogue: list[KnownIssue] | None = None,
    min_score: float = MIN_SCORE,
) -> list[Match]:
    """Every catalogue entry scoring at least `min_score`, best first (suppressed ones included,
    flagged). `message` is normalised here, so a raw line or a triage `message` both work."""
    normalised = normalise(message or "")
    if not normalised:
        return []
    found: list[Match] = []
    for issue in catalogue if catalogue is not None else load():
        if issue.requires and not any(word in (message or "") for word in issue.requires):
            continue
        best = max(score(normalised, sig) for sig in issue.signatures)
        reasons = []
        if issue.category and category and category != issue.category:
            best *= OTHER_CATEGORY_FACTOR
            reasons.append(f"category {category} is not {issue.category}")
        if best < min_score:
            continue
        suppressed = bool(issue.fixed_in) and versions.contains_fix(vllm_version, issue.fixed_in)
        if suppressed:
            reasons.append(f"vLLM {vllm_version} already contains the fix ({issue.fixed_in})")
        found.append(Match(issue, best, suppressed, versions.in_range(vllm_version, issue.affected), reasons))
    # Prefer, at equal score, an entry whose affected range holds the run's version.
    found.sort(key=lambda m: (m.score, m.in_affected_range is not False), reverse=True)
    return found


def best_match(
    first_error: dict[str, Any] | None, vllm_version: str | None, rule_dirs: tuple[str, ...] = ()
) -> dict[str, Any] | None:
    """The hook for `triage`: the best known issue for a triage JSON `first_error`, or None.

    None when there is no failure, nothing scores MIN_SCORE, or every match is already fixed in
    `vllm_version`. The dict is `Match.to_json()`: id, ref, url, title, score, affected, fixed_in,
    in_affected_range, workaround. `rule_dirs` adds catalogue files from --rules directories.
    """
    if not first_error:
        return None
    message = first_error.get("message") or first_error.get("text") or ""
    catalogue = load(tuple(rule_dirs))
    for candidate in match(message, first_error.get("category"), vllm_version, catalogue):
        if not candidate.suppressed:
            return candidate.to_json()
    return None
