"""vLLM version strings, compared without `packaging` (no new dependency for a few lines).

What a fleet reports is messier than PEP 440 releases: `v0.10.2`, `0.6.4.post1`, `0.11.0rc2`,
`0.10.2.dev378+g4d7fe40fc.d20250829` (a dev build), `0.17.1+a03ca76a.nv26.03.46967107` (NVIDIA's
NGC build of 0.17.1) and `0.1.dev19262+gb6bbf29dd.d20260727` (a model-specific image built outside
the release pipeline: its `0.1` is no release number, see vllm-anatomy.md §2.2). The order we need
is only "does this build contain the fix released in X.Y.Z", so:

* the local part after `+` is ignored (an NGC 0.17.1 build contains what 0.17.1 contains);
* a dev/rc/alpha/beta build of X.Y.Z sorts *before* X.Y.Z: it was cut before the release and may
  not hold the fix — the conservative answer for gating a known issue;
* `.postN` sorts after X.Y.Z;
* `0.1.devN` and anything unparsable is *unknown* (None): never gated.
"""

from __future__ import annotations

import re
from functools import total_ordering

_VERSION = re.compile(
    r"^v?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[.-]?(?P<pre>a|alpha|b|beta|rc|c)\.?(?P<pre_n>\d*))?"
    r"(?:[.-]?post\.?(?P<post>\d*))?"
    r"(?:[.-]?dev\.?(?P<dev>\d*))?"
    r"(?:\+[\w.]*)?$",
    re.IGNORECASE,
)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2}


@total_ordering
class Version:
    """A parsed version; compare with <, ==, >= like a tuple."""

    __slots__ = ("text", "_key")

    def __init__(self, text: str, key: tuple) -> None:
        self.text = text
        self._key = key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self._key == other._key

    def __lt__(self, other: Version) -> bool:
        return self._key < other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"Version({self.text!r})"


def parse(text: str | None) -> Version | None:
    """The version, or None when unknown (empty, unparsable, or a `0.1.devN` image build)."""
    if not text or not isinstance(text, str):
        return None
    match = _VERSION.match(text.strip())
    if match is None:
        return None
    release = tuple(int(part) for part in match["release"].split("."))
    if release[:2] == (0, 1) and match["dev"] is not None:
        return None  # setuptools-scm fallback of an ad-hoc image build: says nothing
    # Pad so 0.10 == 0.10.0; the stage decides order within one release:
    # dev-only (0) < alpha/beta/rc (1) < final (2) < post (3).
    padded = release + (0,) * (4 - len(release)) if len(release) < 4 else release
    if match["pre"] is not None:
        stage = (1, _PRE_RANK[match["pre"].lower()], int(match["pre_n"] or 0))
    elif match["dev"] is not None and match["post"] is None:
        stage = (0, 0, 0)
    elif match["post"] is not None:
        stage = (3, int(match["post"] or 0), 0)
    else:
        stage = (2, 0, 0)
    # Within a pre-release, a dev build of it comes first (rc1.dev5 < rc1).
    dev = int(match["dev"] or 0) if match["dev"] is not None else float("inf")
    return Version(text, (padded, stage, dev))


def contains_fix(running: str | None, fixed_in: str | None) -> bool:
    """True only when both versions are known and `running` is at or after the fixing release."""
    have, fix = parse(running), parse(fixed_in)
    if have is None or fix is None:
        return False
    return have >= fix


def in_range(version: str | None, spec: str | None) -> bool | None:
    """`spec` is comma-separated comparisons (`>=0.7.0, <0.13.0`); None when the version is unknown."""
    have = parse(version)
    if have is None:
        return None
    for part in (spec or "").split(","):
        part = part.strip()
        if not part:
            continue
        op_match = re.match(r"^(>=|<=|==|!=|>|<)\s*(.+)$", part)
        if op_match is None:
            raise ValueError(f"bad version comparison {part!r} (use >=, <=, >, <, ==, !=)")
        op, bound_text = op_match.groups()
        bound = parse(bound_text)
        if bound is None:
            raise ValueError(f"bad version {bound_text!r} in {spec!r}")
        ok = {
            ">=": have >= bound,
            "<=": have <= bound,
            ">": have > bound,
            "<": have < bound,
            "==": have == bound,
            "!=": have != bound,
        }[op]
        if not ok:
            return False
    return True
