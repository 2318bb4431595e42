"""The check data in rules/compat and rules/recipes: loads, is strict, stays out of the rule engine."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fingerprint_helpers import BUNDLES, finding, ids, run

from vllm_triage.core.errors import RuleError
from vllm_triage.engine import rules as engine_rules
from vllm_triage.fingerprint import data
from vllm_triage.pipeline import fingerprint


def test_shipped_tables() -> None:
    loaded = data.load()
    assert {row.cuda: row.branch for row in loaded.cuda_driver}["13.0"] == 580
    assert loaded.driver_for("12.9").branch == 575 and loaded.driver_for("12.8").branch == 570
    assert loaded.cuda_family[13] == "580"
    names = {v.name for v in loaded.debug_variables}
    for name in (
        "CUDA_LAUNCH_BLOCKING",
        "NCCL_DEBUG",
        "VLLM_LOGGING_LEVEL",
        "VLLM_TRACE_FUNCTION",
        "TORCH_USE_CUDA_DSA",
        "TORCH_NCCL_*",
        "NCCL_P2P_DISABLE",
    ):
        assert name in names
    kimi = next(r for r in loaded.recipes if r.id == "kimi-k3")
    assert (
        kimi.min_gpus == 8 and kimi.min_driver_branch == 580 and kimi.args["load_format"] == "fastsafetensors"
    )
    assert {"kimi-k3", "deepseek-v3", "gpt-oss-120b"} <= {r.id for r in loaded.recipes}


def test_rule_engine_ignores_the_check_tables() -> None:
    ruleset = engine_rules.load()
    assert not any("/compat/" in rule.file or "/recipes/" in rule.file for rule in ruleset.rules)


def _rules_dir(tmp_path_factory: pytest.TempPathFactory, text: str) -> Path:
    folder = tmp_path_factory.mktemp("rules")
    (folder / "recipes").mkdir()
    (folder / "recipes" / "extra.toml").write_text(text, encoding="utf-8")
    return folder


def test_unknown_field_is_an_error(tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = _rules_dir(tmp_path_factory, '[[recipe]]\nid = "x"\nname = "X"\nmodel = "x"\nmin_gpu = 2\n')
    with pytest.raises(RuleError, match="unknown field"):
        data.load([str(folder)])


def test_bad_pattern_is_an_error(tmp_path_factory: pytest.TempPathFactory) -> None:
    text = '[[debug_variable]]\nname = "X"\nvalue = "("\nseverity = "info"\neffect = "x"\n'
    with pytest.raises(RuleError, match="does not compile"):
        data.load([str(_rules_dir(tmp_path_factory, text))])


def test_bad_severity_is_an_error(tmp_path_factory: pytest.TempPathFactory) -> None:
    text = '[[mutable_tag]]\npattern = "x"\nseverity = "fatal"\nwhy = "x"\n'
    with pytest.raises(RuleError, match="severity"):
        data.load([str(_rules_dir(tmp_path_factory, text))])


def test_a_recipe_added_with_rules_dir(
    tmp_path_factory: pytest.TempPathFactory, scratch: Callable[..., Path]
) -> None:
    recipe = """
[[recipe]]
id = "qwen3-32b-house"
name = "our Qwen3-32B recipe"
model = "Qwen3-32B"
min_gpus = 4
"""
    folder = _rules_dir(tmp_path_factory, recipe)
    found = fingerprint([str(BUNDLES / "pinned-baseline")], [str(folder)])
    assert "our Qwen3-32B recipe" in finding(found, "recipe-not-met").message
    assert "recipe-not-met" not in ids(run(BUNDLES / "pinned-baseline"))
