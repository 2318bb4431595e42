"""Redaction rules are data: `[[secret]]`, `[[mask]]`, `[secret_names]` and `[trivial_values]`
tables in rules/redact/*.toml (and in any --rules DIR), beside the engine's `[[rule]]` tables that
this loader ignores (as the engine ignores these).

Patterns use Python's `regex` module: look-behinds and duplicate group names are needed to say
"the value of this variable" in one pattern, which polars' Rust engine cannot. They are run over
whole text blocks with a timeout, and written without nested quantifiers so they stay linear.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import regex

from vllm_triage.core import tables
from vllm_triage.core.errors import RuleError
from vllm_triage.core.tables import read_toml
from vllm_triage.resources import rules_dir

MASK_KINDS = ("host", "ip", "user", "email")
# What each --mask-* flag turns on.
MASK_FLAGS = {"host": "hosts", "ip": "ips", "user": "users", "email": "users"}
REGEX_FLAGS = regex.MULTILINE | regex.VERSION0

_SECRET_KEYS = {
    "id",
    "kind",
    "pattern",
    "shape",
    "gate",
    "priority",
    "multiline",
    "leak",
    "hints",
    "prefixes",
    "description",
    "must_match",
    "must_not_match",
    "continuation",
}
_MASK_KEYS = {
    "id",
    "kind",
    "pattern",
    "keep",
    "keep_pattern",
    "sweep",
    "priority",
    "hints",
    "description",
    "must_match",
    "must_not_match",
}
_CAMEL_HUMP = regex.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = regex.compile(r"[-_.\s/]+")


@dataclass
class SecretRule:
    id: str
    kind: str  # placeholder kind, or "auto" (derived from the value's shape or the name's word)
    pattern: str
    file: str
    shape: bool = False
    gate: str = ""  # "name": the `name` group must hold a secret-like name
    priority: int = 50
    multiline: bool = False
    leak: bool = True
    # Lower-case substrings one of which every match's line holds: only those lines are searched
    # (a plain substring search is ~50x faster than the pattern over a whole log). Name-gated
    # rules get the words of [secret_names] when they give none.
    hints: tuple[str, ...] = ()
    # Literal starts of a token of this shape (`hf_`): for base64-encoded and line-wrapped tokens.
    prefixes: tuple[str, ...] = ()
    # The hints are words of a name (names.toml): a line holds one only where it stands as a word
    # of a name the way NamePolicy splits names (`tokens/s` and `tokenizer` hold none).
    whole_words: bool = False
    description: str = ""
    must_match: list[str] = field(default_factory=list)
    must_not_match: list[str] = field(default_factory=list)
    # Matched where an accepted match ends, again and again: each match is one more value of the
    # same secret-named thing (the next element of a list, the next key after `--api-key K1`).
    continuation: str = ""
    compiled: regex.Pattern = field(init=False, repr=False)
    continuation_compiled: regex.Pattern | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.compiled = regex.compile(self.pattern, REGEX_FLAGS)
        self.continuation_compiled = (
            regex.compile(self.continuation, REGEX_FLAGS) if self.continuation else None
        )


@dataclass
class MaskRule:
    id: str
    kind: str  # host | ip | user | email
    pattern: str
    file: str
    keep: frozenset[str] = frozenset()
    keep_pattern: str = ""
    sweep: bool = False
    priority: int = 50
    hints: tuple[str, ...] = ()
    multiline: bool = False  # masks never span lines; here so both rule kinds read alike
    description: str = ""
    must_match: list[str] = field(default_factory=list)
    must_not_match: list[str] = field(default_factory=list)
    compiled: regex.Pattern = field(init=False, repr=False)
    keep_compiled: regex.Pattern | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.compiled = regex.compile(self.pattern, REGEX_FLAGS)
        self.keep_compiled = regex.compile(self.keep_pattern, regex.IGNORECASE) if self.keep_pattern else None

    def keeps(self, value: str) -> bool:
        if value.lower() in self.keep:
            return True
        return bool(self.keep_compiled and self.keep_compiled.fullmatch(value))


@dataclass
class NamePolicy:
    """Which names hold a secret (names.toml `[secret_names]`)."""

    words: list[tuple[str, str]] = field(default_factory=list)  # (word, kind), in priority order
    compounds: dict[str, str] = field(default_factory=dict)
    exclude: frozenset[str] = frozenset()
    not_last: frozenset[str] = frozenset()
    must_match: list[str] = field(default_factory=list)
    must_not_match: list[str] = field(default_factory=list)

    def __hash__(self) -> int:  # identity: one policy per loaded rule set, used as a cache key
        return id(self)

    def secret_kind(self, name: str) -> str | None:
        """The kind of secret a variable/flag/key named `name` holds, or None."""
        return _secret_kind(self, name)

    def hint_words(self) -> tuple[str, ...]:
        """The words one of which every secret name holds (lower-case), compounds included."""
        return tuple(sorted({w for w, _ in self.words} | set(self.compounds)))


@functools.lru_cache(maxsize=65536)
def _secret_kind(policy: NamePolicy, name: str) -> str | None:
    # Logs repeat the same few key names millions of times: the cache makes the gate free.
    if name.lower() in policy.exclude:
        return None
    words = [w.lower() for w in _SEPARATORS.split(_CAMEL_HUMP.sub("_", name)) if w]
    if not words or words[-1] in policy.not_last:
        return None
    present = set(words)
    for word, kind in policy.words:
        if word in present:
            return kind
    for word in words:
        if word in policy.compounds:
            return policy.compounds[word]
    return None


@dataclass
class RedactRules:
    secrets: list[SecretRule]
    masks: list[MaskRule]
    names: NamePolicy
    trivial: regex.Pattern
    files: list[str]
    # Examples of the policy tables themselves (checked like rule examples).
    trivial_examples: tuple[list[str], list[str]] = ([], [])

    def is_trivial(self, value: str) -> bool:
        """A value that is never a secret (empty, a flag value, a placeholder, a reference, a path)."""
        value = value.strip()
        return bool(self.trivial.fullmatch(value)) or looks_like_path(value)

    def secret_rule(self, rule_id: str) -> SecretRule | None:
        return next((r for r in self.secrets if r.id == rule_id), None)


_PATH = regex.compile(r"(?:~|\.{1,2})?(?:/[A-Za-z0-9_.@+-]+)+/?")
_UPPER = regex.compile(r"[A-Z]")
_LOWER = regex.compile(r"[a-z]")
_DIGIT = regex.compile(r"[0-9]")


_WORD_SEPARATORS = regex.compile(r"[-_.@+]")


def _random_looking(segment: str) -> bool:
    # A path segment people write is made of words, versions and short hashes (`Qwen3-8B-Instruct`);
    # a run of a dozen characters mixing upper case, lower case and digits (or of 24+ characters)
    # is a key that happens to start with `/`.
    for part in _WORD_SEPARATORS.split(segment):
        if len(part) >= 24:
            return True
        classes = bool(_UPPER.search(part)) + bool(_LOWER.search(part)) + bool(_DIGIT.search(part))
        if len(part) >= 12 and classes == 3:
            return True
    return False


def looks_like_path(value: str) -> bool:
    """`/run/secrets/hf_token`, `~/.cache/hf`, `./token.txt`: where a secret lives. A single segment
    (`/x8JqR2…`) or a random-looking one is not a path but a value that starts with a slash; a
    secret-named key's value is at stake here, so the doubt goes to redaction."""
    if not _PATH.fullmatch(value):
        return False
    segments = [s for s in value.split("/") if s not in ("", "~", ".", "..")]
    if len(segments) < 2 and not value.startswith(("~/", "./", "../")):
        return False
    return bool(segments) and not any(_random_looking(s) for s in segments)


_NOUN = "redact rule"


def _fail(file: str, rule_id: str | None, message: str) -> RuleError:
    return tables.rule_fail(file, _NOUN, rule_id, message)


def _strings(table: dict, key: str, file: str, rule_id: str | None) -> list[str]:
    return tables.string_list(table, key, file, _NOUN, rule_id)


def _compiled_or_fail(pattern: object, file: str, rule_id: str) -> str:
    if not isinstance(pattern, str) or not pattern:
        raise _fail(file, rule_id, "missing or empty 'pattern'")
    try:
        compiled = regex.compile(pattern, REGEX_FLAGS)
    except regex.error as exc:
        raise _fail(file, rule_id, f"pattern does not compile: {exc}") from exc
    if "value" not in compiled.groupindex:
        raise _fail(file, rule_id, "pattern has no (?P<value>…) group")
    return pattern


def _secret_from_table(table: dict, file: str) -> SecretRule:
    rule_id = tables.rule_id(table, file, _NOUN, _SECRET_KEYS, "a [[secret]] table")
    pattern = _compiled_or_fail(table.get("pattern"), file, rule_id)
    gate = table.get("gate", "")
    if gate not in ("", "name"):
        raise _fail(file, rule_id, 'gate must be "name" or absent')
    if gate and "name" not in regex.compile(pattern, REGEX_FLAGS).groupindex:
        raise _fail(file, rule_id, 'gate = "name" needs a (?P<name>…) group')
    kind = table.get("kind")
    if not isinstance(kind, str) or not kind:
        raise _fail(file, rule_id, "missing 'kind'")
    if kind == "auto" and not gate:
        raise _fail(file, rule_id, 'kind = "auto" needs gate = "name"')
    if not table.get("must_match"):
        raise _fail(file, rule_id, "needs at least one example in 'must_match'")
    continuation = table.get("continuation", "")
    if continuation:
        _compiled_or_fail(continuation, file, f"{rule_id} (continuation)")
    return SecretRule(
        id=rule_id,
        kind=kind,
        pattern=pattern,
        file=file,
        shape=bool(table.get("shape", False)),
        gate=gate,
        priority=int(table.get("priority", 50)),
        multiline=bool(table.get("multiline", False)),
        leak=bool(table.get("leak", True)),
        hints=tuple(h.lower() for h in _strings(table, "hints", file, rule_id)),
        prefixes=tuple(_strings(table, "prefixes", file, rule_id)),
        description=str(table.get("description", "")),
        must_match=_strings(table, "must_match", file, rule_id),
        must_not_match=_strings(table, "must_not_match", file, rule_id),
        continuation=str(continuation),
    )


def _mask_from_table(table: dict, file: str) -> MaskRule:
    rule_id = tables.rule_id(table, file, _NOUN, _MASK_KEYS, "a [[mask]] table")
    if table.get("kind") not in MASK_KINDS:
        raise _fail(file, rule_id, f"kind must be one of {', '.join(MASK_KINDS)}")
    pattern = _compiled_or_fail(table.get("pattern"), file, rule_id)
    keep_pattern = str(table.get("keep_pattern", ""))
    if keep_pattern:
        try:
            regex.compile(keep_pattern)
        except regex.error as exc:
            raise _fail(file, rule_id, f"keep_pattern does not compile: {exc}") from exc
    if not table.get("must_match"):
        raise _fail(file, rule_id, "needs at least one example in 'must_match'")
    return MaskRule(
        id=rule_id,
        kind=table["kind"],
        pattern=pattern,
        file=file,
        keep=frozenset(v.lower() for v in _strings(table, "keep", file, rule_id)),
        keep_pattern=keep_pattern,
        sweep=bool(table.get("sweep", False)),
        priority=int(table.get("priority", 50)),
        hints=tuple(h.lower() for h in _strings(table, "hints", file, rule_id)),
        description=str(table.get("description", "")),
        must_match=_strings(table, "must_match", file, rule_id),
        must_not_match=_strings(table, "must_not_match", file, rule_id),
    )


def _pairs(table: dict, key: str, file: str) -> list[tuple[str, str]]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in value
    ):
        raise _fail(file, None, f"[secret_names] {key} must be a list of [word, kind] pairs")
    return [(w.lower(), k) for w, k in value]


def _files(extra_dirs: Iterable[str], include_builtin: bool) -> list[Path]:
    files: list[Path] = sorted((rules_dir() / "redact").rglob("*.toml")) if include_builtin else []
    for extra in extra_dirs:
        path = Path(extra)
        if not path.is_dir():
            raise RuleError(f"--rules {extra}: not a directory")
        files.extend(sorted(path.rglob("*.toml")))
    return files


def load(extra_dirs: Iterable[str] = (), include_builtin: bool = True) -> RedactRules:
    """The built-in redaction rules plus those of any --rules directories (an id there overrides)."""
    secrets: dict[str, SecretRule] = {}
    masks: dict[str, MaskRule] = {}
    names = NamePolicy()
    trivial_pattern = ""
    trivial_examples: tuple[list[str], list[str]] = ([], [])
    files = _files(extra_dirs, include_builtin)
    for path in files:
        name = str(path)
        data = read_toml(path)
        for table in data.get("secret", []):
            secret = _secret_from_table(table, name)
            secrets[secret.id] = secret
        for table in data.get("mask", []):
            mask = _mask_from_table(table, name)
            masks[mask.id] = mask
        policy = data.get("secret_names")
        if isinstance(policy, dict):
            names = NamePolicy(
                words=_pairs(policy, "words", name),
                compounds=dict(_pairs(policy, "compounds", name)),
                exclude=frozenset(v.lower() for v in _strings(policy, "exclude", name, None)),
                not_last=frozenset(v.lower() for v in _strings(policy, "not_last", name, None)),
                must_match=_strings(policy, "must_match", name, None),
                must_not_match=_strings(policy, "must_not_match", name, None),
            )
        values = data.get("trivial_values")
        if isinstance(values, dict):
            trivial_pattern = str(values.get("pattern", ""))
            trivial_examples = (
                _strings(values, "must_match", name, None),
                _strings(values, "must_not_match", name, None),
            )
    if include_builtin and (not secrets or not names.words):
        raise RuleError(f"no redaction rules found under {rules_dir() / 'redact'}")
    try:
        trivial = regex.compile(trivial_pattern or r"\A\Z", regex.IGNORECASE | regex.VERSION0)
    except regex.error as exc:
        raise RuleError(f"[trivial_values] pattern does not compile: {exc}") from exc
    for rule in secrets.values():
        if rule.gate == "name" and not rule.hints:
            rule.hints = names.hint_words()
            rule.whole_words = True
        elif rule.prefixes and not rule.hints and not rule.multiline:
            # Every match starts with a prefix: only lines holding one are searched.
            rule.hints = tuple(sorted({p.lower() for p in rule.prefixes}))
    ordered_secrets = sorted(secrets.values(), key=lambda r: -r.priority)
    ordered_masks = sorted(masks.values(), key=lambda r: -r.priority)
    return RedactRules(
        secrets=ordered_secrets,
        masks=ordered_masks,
        names=names,
        trivial=trivial,
        files=[str(f) for f in files],
        trivial_examples=trivial_examples,
    )


@functools.lru_cache(maxsize=1)
def builtin() -> RedactRules:
    return load()
