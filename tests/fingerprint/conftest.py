"""The `scratch` fixture: a copy of a fixture bundle in a scratch folder, to change one file.

Scratch folders come from tmp_path_factory with neutral names: a path that contains "host" or
"container" (as pytest's per-test tmp_path does for a test named so) would decide the scope of
every nvidia-smi file under it.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from fingerprint_helpers import BUNDLES


@pytest.fixture
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """scratch(bundle, {name: text}): a fresh folder, optionally a copy of a fixture bundle, with
    files written or replaced (text dedented); a text of None deletes the file."""

    def make(bundle: str | None = None, files: dict[str, str | None] | None = None) -> Path:
        folder = tmp_path_factory.mktemp("b")
        if bundle:
            shutil.copytree(BUNDLES / bundle, folder, dirs_exist_ok=True)
        for name, text in (files or {}).items():
            path = folder / name
            if text is None:
                path.unlink()
            else:
                path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return folder

    return make
