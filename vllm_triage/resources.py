"""Locate the data shipped with the tool: rules/ and reports/.

In a wheel they sit inside the package (vllm_triage/_data/…); in a source checkout they sit at the
top of the repository. Looking in both keeps `pip install .` and `pip install -e .` working.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"bundled {name}/ directory not found next to {_PACKAGE}")


def rules_dir() -> Path:
    return data_dir("rules")


def reports_dir() -> Path:
    return data_dir("reports")
