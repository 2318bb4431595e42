"""Several launches in one log: a run stopped by a signal, then started again.

A terminal or a `tee`d file often holds more than one launch: the server was stopped (Ctrl-C, a
harness's SIGTERM, a scheduler) and started again with one thing changed. What the first run
printed after its stop signal is its shutdown; a new start-up line after that (the platform
detection every vLLM process prints first, the version banner, the argument dump) begins a new
run with its own milestones and its own failure. Each run is read alone and the one that failed
is reported, as for the servers of a compose stack.
"""

from __future__ import annotations

from itertools import pairwise

from vllm_triage.analysis.model import Row
from vllm_triage.engine.rules import Rule

# The milestones a process prints before anything else it does (markers.toml).
START_MILESTONES = frozenset({"platform", "version", "args"})


def runs(rows: list[Row], rules: dict[str, Rule]) -> list[list[Row]]:
    """The rows of each run: cut at the first start-up line after a stop signal."""
    cuts: list[int] = []
    stopped = False
    for i, row in enumerate(rows):
        rule = rules.get(row.marker) if row.marker else None
        if rule is None:
            continue
        if rule.shutdown:
            stopped = True
        elif stopped and rule.milestone in START_MILESTONES:
            cuts.append(i)
            stopped = False
    return [rows[a:b] for a, b in pairwise([0, *cuts, len(rows)])]
