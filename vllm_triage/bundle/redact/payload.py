"""What a command prints or writes, redacted like a bundle: `triage`, `fingerprint`, `check`, `diff`,
`series` and the rows `scan` writes to Parquet give their JSON payload here before it is printed,
rendered as text or Markdown, or stored. The same library as `redact` and `report`, so the same
rules, the same placeholders (`<redacted:hf-token:1>`), the same secret under one placeholder
everywhere in one output.

Two things a payload needs that a text does not:
- structure: a payload puts a value under its name (`"env.HF_TOKEN": {"value": "…"}`,
  `{"name": "arg.api_key", "a": {"value": "…"}, "b": …}`), where the value stands alone in its
  string and no rule can see a name next to it. A string held by a secret-named key (names.toml,
  the words of the last dotted part: `env.HF_TOKEN`, `arg.api_key`), or a value field (`value`,
  `a`, `b`, `values`) of a dict whose `name`/`id`/`knob`/`change` is secret-named, is a secret as
  a whole. Provenance (`source`, `file`, `line`, `evidence`) and prose (`note`, `message`) are not
  values: they are read by the rules like any text.
- learning first: every string is learned before any is replaced, so a secret found in one (the
  launch command quoted in a finding) is replaced where it stands bare in another (a note).
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

from vllm_triage.bundle.redact.redactor import Redactor

# Fields of a dict that name what its value fields hold.
_NAME_FIELDS = ("name", "id", "knob", "change", "key", "variable")
# Fields that hold the value of the thing named (knob dicts, diff sides).
_VALUE_FIELDS = frozenset({"value", "values", "a", "b", "raw", "shown", "old", "new", "before", "after"})
# Fields that never hold a value: where it was read, and what the tool says about it.
_NOT_VALUES = frozenset(
    {"source", "sources", "file", "line", "evidence", "note", "message", "advice", "label"}
)


class PayloadRedactor:
    def __init__(self, redactor: Redactor | None = None) -> None:
        self.redactor = redactor or Redactor()
        self._policy = self.redactor.rules.names

    def secret_name(self, name: str) -> bool:
        last = name.rsplit(".", 1)[-1] if "." in name else name
        return self._policy.secret_kind(last) is not None

    def redact(self, payload: Any) -> Any:
        declared: dict[str, str] = {}
        self._declare(payload, False, declared)
        for value, kind in declared.items():
            self.redactor.declare(value, kind)
        for text in _strings(payload):
            self.redactor.learn(text)
        return self._walk(payload, False, "")

    def _kind(self, name: str) -> str:
        last = name.rsplit(".", 1)[-1] if "." in name else name
        return self._policy.secret_kind(last) or "secret"

    def _declare(self, value: Any, secret: bool, out: dict[str, str], kind: str = "secret") -> None:
        """Every string that is a secret by where it stands, with its kind (from its name)."""
        if isinstance(value, str):
            if secret and not self.redactor.rules.is_trivial(value):
                out.setdefault(value, self.redactor.kind_of_value(value) or kind)
            return
        if isinstance(value, list | tuple):
            for item in value:
                self._declare(item, secret, out, kind)
            return
        if not isinstance(value, dict):
            return
        named = next(
            (v for f in _NAME_FIELDS if isinstance(v := value.get(f), str) and self.secret_name(v)), None
        )
        for key, item in value.items():
            if not isinstance(key, str) or key in _NOT_VALUES:
                continue
            if self.secret_name(key) and key not in _NAME_FIELDS:
                self._declare(item, True, out, self._kind(key))
            elif named is not None and key in _VALUE_FIELDS:
                self._declare(item, True, out, self._kind(named))
            elif secret and key in _VALUE_FIELDS:
                self._declare(item, True, out, kind)
            else:
                self._declare(item, False, out)

    def _walk(self, value: Any, secret: bool, path: str) -> Any:
        if isinstance(value, str):
            return self.redactor.redact(value, file=path)
        if isinstance(value, list):
            return [self._walk(v, secret, path) for v in value]
        if isinstance(value, tuple):
            return tuple(self._walk(v, secret, path) for v in value)
        if isinstance(value, dict):
            return {k: self._walk(v, secret, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
        return value


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


T = TypeVar("T")


def redact_payload(payload: T, redactor: Redactor | None = None) -> T:
    """The payload with every secret replaced by its placeholder (a new object; the input is kept)."""
    return cast(T, PayloadRedactor(redactor).redact(payload))


def redact_rows(rows: Any) -> Any:
    """A scanned bundle's Parquet rows (fleet BundleRows: run, findings, knobs), redacted together:
    one secret, one placeholder across the three tables of a run."""
    clean = PayloadRedactor().redact({"run": rows.run, "findings": rows.findings, "knobs": rows.knobs})
    return type(rows)(clean["run"], clean["findings"], clean["knobs"])
