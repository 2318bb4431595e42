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


def samples_dir() -> Path:
    return data_dir("samples")


def samples() -> dict[str, tuple[Path, str]]:
    """name → (folder, one-line description from the leading comment of its bundle.toml)."""
    out: dict[str, tuple[Path, str]] = {}
    for folder in sorted(p for p in samples_dir().iterdir() if p.is_dir()):
        manifest = folder / "bundle.toml"
        about = ""
        if manifest.is_file():
            comment = []
            for line in manifest.read_text(encoding="utf-8").splitlines():
                if not line.startswith("#"):
                    break
                comment.append(line.lstrip("# ").strip())
            about = " ".join(comment)
        out[folder.name] = (folder, about)
    return out
