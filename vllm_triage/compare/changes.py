"""What moved between two runs: knob changes (grouped, derived facts attached), drift, noise,
explicit defaults, and what could not be compared.

The order of decisions for every name present in either run:
1. noise (rules/compare/noise.toml) — ignored, kept for --show-noise;
2. an NCCL_* variable the launch did not set (the fingerprint's nccl-inherited finding) — drift;
3. its role from the knob groups (rules/compare/knobs.toml): a knob of a group, a fact that
   follows groups, or a plain fact;
then groups that changed are the changes, followers of a changed group are attached to it as
derived, and every other fact that changed is drift.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vllm_triage.compare.data import CompareData, KnobGroup, NoiseRule, name_matches
from vllm_triage.compare.defaults import default_for
from vllm_triage.compare.run import NODE, Entry, Run
from vllm_triage.compare.values import Incomparable, comparable, shown
from vllm_triage.fingerprint.values import canonical

# A fingerprint knob no group claims is still a change, in a layer of its own after the others.
_OTHER = KnobGroup(
    id="other", label="other knob", layer="other", knobs=("*",), per_name=True, absent_is_unset=True
)


@dataclass(frozen=True)
class ValueChange:
    name: str
    a: Entry | None
    b: Entry | None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "a": self.a.to_json() if self.a is not None else None,
            "b": self.b.to_json() if self.b is not None else None,
        }
        if self.note:
            out["note"] = self.note
        return out

    def shown(self) -> str:
        a = shown(self.name, self.a.value if self.a else None)
        b = shown(self.name, self.b.value if self.b else None)
        return f"{a} → {b}"


@dataclass
class Change:
    id: str
    label: str
    group: str
    layer: str
    knobs: list[ValueChange] = field(default_factory=list)
    derived: list[ValueChange] = field(default_factory=list)

    @property
    def removed(self) -> bool:
        """B dropped the knob or switched it off: a production parameter taken away."""
        for knob in self.knobs:
            if knob.b is None:
                return True
            before, after = canonical(knob.a.value) if knob.a else None, canonical(knob.b.value)
            if after is False and before is True:
                return True
        return False

    def to_json(self, data: CompareData) -> dict[str, Any]:
        return {
            "id": self.id,
            "label": self.label,
            "group": self.group,
            "layer": self.layer,
            "layer_label": data.layer_label(self.layer),
            "knobs": [k.to_json() for k in self.knobs],
            "derived": [d.to_json() for d in self.derived],
        }


@dataclass
class Drift:
    id: str
    message: str
    advice: str
    values: list[ValueChange] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "message": self.message,
            "advice": self.advice,
            "values": [v.to_json() for v in self.values],
        }


@dataclass(frozen=True)
class NoiseItem:
    change: ValueChange
    rule: str
    why: str

    def to_json(self) -> dict[str, Any]:
        return {**self.change.to_json(), "rule": self.rule, "why": self.why}


@dataclass(frozen=True)
class DefaultItem:
    """An argument or variable given explicitly with vLLM's default on one side only."""

    name: str
    entry: Entry
    side: str  # "a" | "b"
    default: Any

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "side": self.side,
            "value": self.entry.value,
            "source": self.entry.source,
            "default": self.default,
        }


@dataclass
class Comparison:
    changes: list[Change] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)
    noise: list[NoiseItem] = field(default_factory=list)
    defaults: list[DefaultItem] = field(default_factory=list)
    not_compared: list[ValueChange] = field(default_factory=list)
    unchanged: int = 0
    unchanged_knobs: int = 0

    @property
    def compared(self) -> int:
        """Values both runs recorded and that were compared (changed or not)."""
        moved = sum(len(c.knobs) + len(c.derived) for c in self.changes) + sum(
            len(d.values) for d in self.drift
        )
        return self.unchanged + moved

    @property
    def comparable(self) -> bool:
        """Enough in common to call two runs the same set-up: at least one knob recorded by both,
        and no more values recorded by one only than by both (two pasted fragments of unknown
        origin are not repeats of one fingerprint just because nothing in them differs)."""
        knobs = self.unchanged_knobs + sum(len(c.knobs) for c in self.changes)
        return knobs > 0 and len(self.not_compared) <= self.compared

    @property
    def variables(self) -> int:
        """Each changed knob group is one variable, and so is each kind of drift."""
        return len(self.changes) + len(self.drift)


def knob_label(name: str) -> str:
    """How a person would name the knob: `--max-model-len`, `NCCL_P2P_DISABLE`, `request max_tokens`."""
    family, _, rest = name.partition(".")
    if family == "arg":
        return "--" + rest.replace("_", "-")
    if family == "env":
        return rest
    if family in ("request", "container"):
        return f"{family} {rest}"
    if name == NODE:
        return "node"
    return name


# ---------------------------------------------------------------------------------------- noise


def _node_changed(ea: dict[str, Entry], eb: dict[str, Entry]) -> bool:
    a, b = ea.get(NODE), eb.get(NODE)
    return a is not None and b is not None and str(a.value).strip() != str(b.value).strip()


def _noise_rule(name: str, rules: list[NoiseRule], node_changed: bool) -> list[NoiseRule]:
    return [r for r in rules if name_matches(name, r.names) and not (r.when == "same-node" and node_changed)]


def _masked(rule: NoiseRule, value: Any) -> Any:
    return rule.mask.sub("<masked>", value) if rule.mask is not None and isinstance(value, str) else value


def _is_noise(name: str, a: Entry | None, b: Entry | None, rules: list[NoiseRule]) -> NoiseRule | None:
    """The rule that makes the difference between a and b noise, if one does."""
    whole = next((r for r in rules if r.mask is None), None)
    if whole is not None:
        return whole
    if a is None or b is None or a.value == b.value:
        return None
    masked = [r for r in rules if r.mask is not None]
    va, vb = a.value, b.value
    for rule in masked:  # several masks may apply to one value (a request id inside a URL)
        va, vb = _masked(rule, va), _masked(rule, vb)
    if va != vb:
        return None
    return next(r for r in masked if _masked(r, a.value) != a.value or _masked(r, b.value) != b.value)


# ------------------------------------------------------------------------------- classification


@dataclass
class _Roles:
    knob_of: dict[str, KnobGroup] = field(default_factory=dict)
    follows: dict[str, list[KnobGroup]] = field(default_factory=dict)


def _classify(names: list[str], ea: dict[str, Entry], eb: dict[str, Entry], data: CompareData) -> _Roles:
    roles = _Roles()
    groups = data.groups
    for name in names:
        is_knob = any(e is not None and e.kind == "knob" for e in (ea.get(name), eb.get(name)))
        exact = next((g for g in groups if name in g.knobs), None)
        if exact is not None:
            roles.knob_of[name] = exact
            continue
        followed = [g for g in groups if name_matches(name, g.follows)]
        if followed:
            roles.follows[name] = followed
            continue
        if is_knob:
            roles.knob_of[name] = next((g for g in groups if g.claims_knob(name)), _OTHER)
    # Stand-ins: a group none of whose knobs both runs recorded is compared on its stand-in (a pip
    # install has no image: the vLLM version is then what was chosen).
    for group in groups:
        if not group.stand_ins or group.per_name:
            continue
        mine = [n for n, g in roles.knob_of.items() if g is group]
        if any(n in ea and n in eb for n in mine):
            continue
        for pattern in group.stand_ins:
            both = sorted(n for n in names if name_matches(n, (pattern,)) and n in ea and n in eb)
            if both:
                roles.knob_of[both[0]] = group
                roles.follows.pop(both[0], None)
                break
    return roles


# ------------------------------------------------------------------------------ documented-ness


def _role_of(run: Run, entry: Entry) -> str | None:
    file = entry.source.get("file")
    return next((i.get("role") for i in run.inputs if i.get("path") == file), None)


def _documents(run: Run, entries: dict[str, Entry], name: str, role: str | None) -> bool:
    """Would `run` have shown `name` had it been set? Yes when it recorded other values of the same
    family (arg., env., …) from the same kind of artefact (when artefact roles are known)."""
    family = name.split(".", 1)[0] + "."
    for other in entries.values():
        if other.kind != "knob" or not other.name.startswith(family):
            continue
        if role is None or not run.inputs or _role_of(run, other) in (None, role):
            return True
    return False


# ------------------------------------------------------------------------------------- compare


def _differ(name: str, a: Entry, b: Entry, data: CompareData) -> bool | None:
    """True/False, or None when the values cannot be compared."""
    ca, cb = comparable(name, a.value, data), comparable(name, b.value, data)
    if isinstance(ca, Incomparable) or isinstance(cb, Incomparable):
        return None
    return bool(ca != cb)


def _inherited_env(run: Run, entries: dict[str, Entry]) -> set[str]:
    """env.* names the fingerprint's nccl-inherited finding points at (not set by the launch)."""
    evidence = {
        (e.get("file"), e.get("line"))
        for f in run.findings("nccl-inherited")
        for e in f.get("evidence") or []
    }
    return {
        name
        for name, e in entries.items()
        if name.startswith("env.") and (e.source.get("file"), e.source.get("line")) in evidence
    }


def _screen(
    a: Run,
    b: Run,
    ea: dict[str, Entry],
    eb: dict[str, Entry],
    data: CompareData,
    node_changed: bool,
    result: Comparison,
    inherited_drift: list[ValueChange],
) -> list[str]:
    """Take out noise and inherited NCCL_* variables; return the names left to classify."""
    inherited = _inherited_env(a, ea) | _inherited_env(b, eb)
    kept: list[str] = []
    for name in sorted(set(ea) | set(eb)):
        x, y = ea.get(name), eb.get(name)
        rule = _is_noise(name, x, y, _noise_rule(name, data.noise, node_changed))
        if rule is not None:
            if x is None or y is None or x.value != y.value:
                result.noise.append(NoiseItem(ValueChange(name, x, y), rule.id, rule.why))
            continue
        if name not in inherited:
            kept.append(name)
            continue
        present, side_run, other_run, other_entries = (x, a, b, eb) if x is not None else (y, b, a, ea)
        if x is not None and y is not None:
            if _differ(name, x, y, data):
                inherited_drift.append(ValueChange(name, x, y))
        elif present is not None and _documents(other_run, other_entries, name, _role_of(side_run, present)):
            inherited_drift.append(ValueChange(name, x, y))
        else:
            side = "A" if x is not None else "B"
            result.not_compared.append(ValueChange(name, x, y, f"inherited; only recorded in {side}"))
    return kept


# The engine banner names some settings differently from the argument that sets them; the served
# name and the tokenizer default to the model.
_ARGS_SETTING = {"max_seq_len": ("max_model_len",), "served_model_name": ("model",), "tokenizer": ("model",)}


def _sets(change: Change, name: str) -> bool:
    """Whether `change` is the knob that sets fact `name` (engine.X ← arg.X)."""
    suffix = name.split(".", 1)[-1]
    return change.id.split(".", 1)[-1] in (suffix, *_ARGS_SETTING.get(suffix, ()))


def _explained_by(name: str, group: KnobGroup, changes: list[Change]) -> Change:
    """The change of `group` a derived fact belongs to: engine.X to the argument X when that is
    one of the changes, else the group's first change."""
    mine = [c for c in changes if c.group == group.id]
    return next((c for c in mine if _sets(c, name)), mine[0])


def compare_runs(a: Run, b: Run, data: CompareData) -> Comparison:
    ea, eb = a.entries(), b.entries()
    node_changed = _node_changed(ea, eb)
    result = Comparison()
    drifted: list[ValueChange] = []
    inherited_drift: list[ValueChange] = []
    kept = _screen(a, b, ea, eb, data, node_changed, result, inherited_drift)
    roles = _classify(kept, ea, eb, data)
    changes = _knob_changes(kept, roles, a, b, ea, eb, data, result)
    changed_groups = {c.group for c in changes}
    by_group = {g.id: i for i, g in enumerate(data.groups)}
    for name in kept:
        if name in roles.knob_of:
            continue
        x, y = ea.get(name), eb.get(name)
        if x is None or y is None:
            result.not_compared.append(ValueChange(name, x, y))
            continue
        differs = _differ(name, x, y, data)
        if differs is None:
            result.not_compared.append(ValueChange(name, x, y, "cannot be compared"))
            continue
        if not differs:
            result.unchanged += 1
            continue
        explaining = [g for g in roles.follows.get(name, []) if g.id in changed_groups]
        if explaining:
            # A fact set by one of the changed knobs follows that knob (engine.max_seq_len moves
            # with --max-model-len, not with a new image that changed at the same time).
            setting = [g for g in explaining if any(c.group == g.id and _sets(c, name) for c in changes)]
            first = min(setting or explaining, key=lambda g: by_group.get(g.id, 99))
            _explained_by(name, first, changes).derived.append(ValueChange(name, x, y))
        else:
            drifted.append(ValueChange(name, x, y))
    for change in changes:
        group = next((g for g in data.groups if g.id == change.group), _OTHER)
        change.knobs.sort(key=lambda v: _rank(v.name, group.knobs + group.stand_ins))
        change.derived.sort(key=lambda v: _rank(v.name, group.follows))
    result.changes = sorted(
        changes, key=lambda c: (data.layer_order(c.layer), by_group.get(c.group, 99), c.id)
    )
    result.drift = _drift(drifted, inherited_drift, node_changed, ea, eb, data)
    return result


def _rank(name: str, patterns: tuple[str, ...]) -> tuple[int, str]:
    """Order within a change as the data lists it: image.ref before image.id, vllm.version first."""
    index = next((i for i, p in enumerate(patterns) if name_matches(name, (p,))), len(patterns))
    return index, name


def _knob_changes(
    names: list[str],
    roles: _Roles,
    a: Run,
    b: Run,
    ea: dict[str, Entry],
    eb: dict[str, Entry],
    data: CompareData,
    result: Comparison,
) -> list[Change]:
    changes: dict[str, Change] = {}
    for name in names:
        group = roles.knob_of.get(name)
        if group is None:
            continue
        x, y = ea.get(name), eb.get(name)
        unit_id = name if group.per_name else group.id
        label = knob_label(name) if group.per_name else group.label
        if x is not None and y is not None:
            differs = _differ(name, x, y, data)
            if differs is None:
                result.not_compared.append(ValueChange(name, x, y, "cannot be compared"))
            elif differs:
                changes.setdefault(unit_id, Change(unit_id, label, group.id, group.layer)).knobs.append(
                    ValueChange(name, x, y)
                )
            else:
                result.unchanged += 1
                result.unchanged_knobs += 1
            continue
        present = x if x is not None else y
        assert present is not None
        side, present_run, other_run, other_entries = ("a", a, b, eb) if x is not None else ("b", b, a, ea)
        if not group.absent_is_unset or not _documents(
            other_run, other_entries, name, _role_of(present_run, present)
        ):
            result.not_compared.append(ValueChange(name, x, y, f"only recorded in {side.upper()}"))
            continue
        known, default = default_for(name, other_run.vllm_version(), data)
        if known and comparable(name, present.value, data) == comparable(name, default, data):
            result.defaults.append(DefaultItem(name, present, side, default))
            continue
        note = f"default {shown(name, default)}" if known else "not set"
        changes.setdefault(unit_id, Change(unit_id, label, group.id, group.layer)).knobs.append(
            ValueChange(name, x, y, note)
        )
    return list(changes.values())


def _drift(
    drifted: list[ValueChange],
    inherited: list[ValueChange],
    node_changed: bool,
    ea: dict[str, Entry],
    eb: dict[str, Entry],
    data: CompareData,
) -> list[Drift]:
    out: dict[str, Drift] = {}

    def add(kind_id: str, change: ValueChange | None, fallback: str) -> None:
        kind = data.drift_kind(kind_id)
        if kind_id not in out:
            out[kind_id] = Drift(
                kind_id,
                kind.message if kind else fallback,
                kind.advice
                if kind
                else "Find what changed it: a knob the bundles do not record, or a moved reference.",
            )
        if change is not None:
            out[kind_id].values.append(change)

    for change in drifted:
        kind = next((d for d in data.drift if d.names and name_matches(change.name, d.names)), None)
        if kind is not None:
            add(kind.id, change, kind.message)
        else:
            add(f"fact:{change.name}", change, f"{change.name} changed with no knob to explain it")
    for change in inherited:
        add("nccl-inherited", change, "inherited NCCL_* variables changed")
    if node_changed:
        documented = ("host.driver_version", "host.gpu_models")
        if not all(any(n in entries for n in documented) for entries in (ea, eb)):
            add("node-undocumented", None, "the node changed and one run has no host capture")
    return list(out.values())
