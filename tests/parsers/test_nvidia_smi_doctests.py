"""The examples in the nvidia-smi form modules' docstrings run, so they stay true."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ("table", "gpu_list", "query", "xml_log", "csv_query", "topo", "version")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"vllm_triage.parsers.nvidia_smi.{name}")
    failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert attempted > 0, f"{name} has no example"
    assert failed == 0
