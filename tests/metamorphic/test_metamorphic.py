"""Metamorphic tests: the verdict on a log must not move when the log says the same thing.

Every case (the fixture logs, the samples' logs, and `../shared/corpus/dev` when it is there)
goes through the transformations of metamorphic_transforms.TRANSFORMS: the project's cases through
all of them; a corpus case through every transformation that changes what the log holds (cuts,
another rank's lines, a duplicated block, dropped timestamps, stripped transports) and three of
the fourteen re-encodings in turn (each re-encoding meets about a fifth of the corpus cases), to keep the
run to a couple of minutes. The baseline is triage's own verdict on the log as given. The
invariant:

1. The first error does not change: its message (the line with every prefix stripped, ANSI off,
   whitespace runs collapsed) is the baseline's, or both are null.
2. The phase does not change, except under a cut (`cut-head`, `cut-tail`).
3. Under a cut the phase stays the same when the baseline's phase rests on evidence the cut keeps
   (the error block itself: its rule's own phase, or a frame of its traceback). When it rested on
   evidence the cut removed (milestones before the block, consequences after it), the phase may
   change, but only to one the cut log's own evidence gives: if the new reason cites a milestone,
   that milestone is in the cut log's milestones at the line it names.
   `drop-timestamps` is read as a cut when the baseline cites a milestone printed after the first
   error: such a milestone counts only because it shares the error's second, and that evidence is
   what the transformation drops.

A known gap of the analysis (not of reading the log) is listed in KNOWN_GAPS: those (case,
transformation) pairs are strict xfails, so fixing one turns the run red until it is removed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from metamorphic_transforms import (
    CORPUS_ENCODINGS_PER_CASE,
    CUTS,
    ENCODINGS,
    TRANSFORMS,
    Case,
    baseline,
    corpus_cases,
    project_cases,
    run_triage,
)

from vllm_triage.ingest.prefixes import strip_ansi

# (case name, transformation) → why the analysis (the lead's area) answers differently.
KNOWN_GAPS: dict[tuple[str, str], str] = {}

_FRAME_OR_RULE = re.compile(r"^(?:rule \S+ places|the traceback passes through)")
_CITED_MILESTONE = re.compile(r"last milestone reached: (?P<marker>\S+) \(line (?P<line>\d+)\)")


def _params(cases: list[Case], encodings_per_case: int | None = None) -> list[Any]:
    """Every (case, transformation); with `encodings_per_case`, each case gets every transformation
    that changes what the log holds but only that many of the re-encodings, taken in turn, so every
    re-encoding still meets a third of the cases and the run stays short."""
    params = []
    for index, case in enumerate(cases):
        names = list(TRANSFORMS)
        if encodings_per_case is not None:
            turn = {
                ENCODINGS[(index * encodings_per_case + k) % len(ENCODINGS)]
                for k in range(encodings_per_case)
            }
            names = [n for n in names if n not in ENCODINGS or n in turn]
        for name in names:
            marks = []
            gap = KNOWN_GAPS.get((case.name, name))
            if gap:
                marks.append(pytest.mark.xfail(strict=True, reason=gap))
            params.append(pytest.param(case, name, id=f"{case.name}-{name}", marks=marks))
    return params


def _corpus_params() -> list[Any]:
    cases = corpus_cases()
    if not cases:
        return [
            pytest.param(
                None, None, id="corpus-absent", marks=pytest.mark.skip(reason="no ../shared/corpus/dev")
            )
        ]
    return _params(cases, CORPUS_ENCODINGS_PER_CASE)


def _message(result: dict[str, Any]) -> str | None:
    first = result["first_error"]
    return None if first is None else " ".join(strip_ansi(first["message"]).split())


def _rests_on_shared_second(base: dict[str, Any], transform: str) -> bool:
    """A milestone printed just after the error counts when it shares the error's second (other
    processes' lines interleave within a second): dropping timestamps removes that evidence."""
    cited = _CITED_MILESTONE.search(base["phase_reason"])
    first = base["first_error"]
    return transform == "drop-timestamps" and bool(cited and first and int(cited["line"]) > first["line"])


def check(case: Case, transform: str, tmp_path: Path) -> None:
    base, rows = baseline(case.path)
    block = base["first_error"]["block"] if base["first_error"] else None
    data = TRANSFORMS[transform](list(rows), block)
    if data is None:
        pytest.skip(f"{transform} does not apply to this case")
    got = run_triage(data, tmp_path / "vllm.log")

    assert _message(got) == _message(base), f"first error moved ({transform})"
    if transform not in CUTS and not _rests_on_shared_second(base, transform):
        assert got["phase"] == base["phase"], (
            f"phase moved: {got['phase_reason']!r} vs {base['phase_reason']!r}"
        )
        return
    cited = _CITED_MILESTONE.search(got["phase_reason"])
    if cited:
        at = {(m["marker"], m["line"]) for m in got["milestones"]}
        assert (cited["marker"], int(cited["line"])) in at, f"phase cites evidence not in the cut log: {got}"


@pytest.mark.parametrize(("case", "transform"), _params(project_cases()))
def test_project_case(case: Case, transform: str, tmp_path: Path) -> None:
    check(case, transform, tmp_path)


@pytest.mark.parametrize(("case", "transform"), _corpus_params())
def test_corpus_case(case: Case, transform: str, tmp_path: Path) -> None:
    check(case, transform, tmp_path)
