"""Which runs the paths of a `triage` or `fingerprint` name, so each is analysed on its own.

Why: merging two runs' artefacts gives a false answer (value conflicts between their knobs, a
"fewer GPUs than parallel" from one run's GPUs and the other's launch). What one run is comes from
the fleet scan's discovery (vllm_triage/fleet/bundles.py: a folder with a bundle.toml, an archive,
a folder holding a vLLM log, a folder of only logs = one run per log), so a folder of bundles splits
the same way here as in `scan`.

Loose files given on the command line are the artefacts of one run (`triage vllm.log
nvidia-smi.txt`), as they always were; stdin (`-`) is one run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from vllm_triage.fleet.bundles import discover, is_archive


@dataclass
class Run:
    label: str  # how the heading names it: the path as the user wrote it, or relative to it
    paths: list[str]


def split_runs(paths: list[str]) -> list[Run]:
    """The runs among `paths`, in the order given. One run → the paths unchanged."""
    loose: list[str] = []
    runs: list[Run] = []
    for given in paths:
        path = Path(given)
        if given == "-" or not path.exists() or not path.is_dir():
            # Files, archives, stdin, missing paths (ingest reports those): a file is part of the
            # loose run; an archive is a bundle of its own.
            if given != "-" and path.is_file() and is_archive(path):
                runs.append(Run(given, [given]))
            else:
                loose.append(given)
            continue
        refs = discover([given])
        if len(refs) <= 1:
            # The folder is one run (even when discovery points at a sub-folder holding its log).
            runs.append(Run(given, [given]))
            continue
        base = path.resolve()
        for ref in refs:
            # Named under the path as given, so the output shows the user's paths, not absolute ones.
            shown = os.path.normpath(os.path.join(given, os.path.relpath(ref.path, base)))
            runs.append(Run(shown, [shown]))
    if loose:
        runs.insert(0, Run(" ".join(loose) if len(loose) <= 3 else f"{len(loose)} files", loose))
    if len(runs) == 1:
        return [Run(runs[0].label, list(paths))]
    return runs
