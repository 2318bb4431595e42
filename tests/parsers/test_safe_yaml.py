"""The one YAML reader: ordinary files read as PyYAML's safe loader reads them; alias bombs,
self-references and oversized texts refused quickly, with one sentence, before anything is built."""

from __future__ import annotations

import doctest
import time
import tracemalloc

import pytest
import yaml

from vllm_triage.parsers import safe_yaml
from vllm_triage.parsers.launch import parse


def billion_laughs(levels: int = 9, fan: int = 10) -> str:
    """The classic shape, written as a compose file so the launch parser sniffs it as one."""
    lines = ["services:", "  vllm:", "    image: vllm/vllm-openai:v0.9.1", "    x-lol0: &l0 lol"]
    for level in range(1, levels + 1):
        refs = ", ".join(f"*l{level - 1}" for _ in range(fan))
        lines.append(f"    x-lol{level}: &l{level} [{refs}]")
    lines.append(f"    command: [--model, Qwen/Qwen3-8B, --x, *l{levels}]")
    return "\n".join(lines) + "\n"


def test_ordinary_yaml_with_a_merge_key_reads_like_safe_load():
    text = (
        "defaults: &defaults\n  image: vllm/vllm-openai:v0.10.0\n  ipc: host\n"
        "services:\n  a:\n    <<: *defaults\n    command: [--model, m]\n"
    )
    assert safe_yaml.load(text) == yaml.safe_load(text)


def test_billion_laughs_is_refused_fast_and_small():
    text = billion_laughs()
    tracemalloc.start()
    started = time.perf_counter()
    with pytest.raises(safe_yaml.YamlRefused, match="expand past"):
        safe_yaml.load(text)
    elapsed = time.perf_counter() - started
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert elapsed < 0.5
    assert peak < 5 * 2**20


def test_launch_parser_reports_the_refusal_instead_of_expanding():
    started = time.perf_counter()
    result = parse(billion_laughs(), "docker-compose.yaml")
    assert time.perf_counter() - started < 1.0
    assert [p.id for p in result.problems] == ["yaml-refused"]
    assert "billion-laughs" in result.problems[0].message
    assert "launcher" not in result.knobs


def test_many_aliases_are_refused_even_when_each_is_small():
    text = "a: &a x\nb: [" + ", ".join(["*a"] * 300) + "]\n"
    with pytest.raises(safe_yaml.YamlRefused, match="more than 256 aliases"):
        safe_yaml.load(text)
    assert len(safe_yaml.load(text, max_aliases=400)["b"]) == 300


def test_a_node_that_contains_itself_is_refused():
    with pytest.raises(safe_yaml.YamlRefused, match="refers to the node that contains it"):
        safe_yaml.load("a: &a [1, *a]\n")


def test_size_cap_and_deep_nesting():
    with pytest.raises(safe_yaml.YamlRefused, match="byte limit"):
        safe_yaml.load("k: " + "v" * 2000 + "\n", max_bytes=1000)
    with pytest.raises(safe_yaml.YamlRefused, match="nested too deeply"):
        safe_yaml.load("[" * 5000 + "]" * 5000)


def test_syntax_errors_stay_yaml_errors():
    # A cut paste is read up to where it breaks by the callers, so this must not be a refusal.
    with pytest.raises(yaml.YAMLError):
        safe_yaml.load("a: [1, 2\nb: {")


def test_docstring_examples_run():
    outcome = doctest.testmod(safe_yaml)
    assert outcome.attempted >= 2 and outcome.failed == 0
