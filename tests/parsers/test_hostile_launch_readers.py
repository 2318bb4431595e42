"""The launch readers fed what breaks parsers (issue 11): Python that makes `ast.parse` warn or
nests past the recursion limit, a script of tens of thousands of LLMConfig calls or of
unterminated ones, a unit of thousands of unknown flags, YAML aliases that expand a billion
times, a quote never closed. Each must stay silent (a parser never prints), end with exit 0 or 4
and at most one line on stderr, and do a bounded amount of work: the tests count the work (parses,
bracket passes, "did you mean" searches), not the seconds (the machine is shared)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from vllm_triage.cli import cli
from vllm_triage.core import pysource
from vllm_triage.parsers.launch import ray_serve, vllm_args
from vllm_triage.parsers.launch.ray_serve import MAX_CALLS, MAX_PYTHON_CHARS, parse_ray_serve
from vllm_triage.parsers.launch.systemd import parse_systemd

HEAD = "from ray.serve.llm import LLMConfig\n"
CALL = "LLMConfig(model_loading_config=dict(model_id='q', model_source='Qwen/Qwen3-8B'))\n"


def counted(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """Replace module.name by a wrapper that counts its calls; the list holds the count."""
    calls = [0]
    real: Callable[..., Any] = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)
    return calls


def fingerprint(tmp_path: Path, files: dict[str, str]) -> Any:
    bundle = tmp_path / "b"
    bundle.mkdir()
    for name, text in files.items():
        (bundle / name).write_text(text)
    return CliRunner().invoke(cli, ["fingerprint", str(bundle), "--format", "json"])


def test_ast_parse_warnings_never_reach_stderr(tmp_path: Path) -> None:
    # `1if` and `0x1for` make the tokenizer warn "invalid decimal (hexadecimal) literal" on stderr
    # while parsing; `"\d"`, an invalid escape, warns too (a SyntaxWarning from Python 3.12).
    source = HEAD + 'pattern = "\\d+"\nport = 1if True else 2\nodd = [0x1for x in y]\n' + CALL
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = parse_ray_serve(source, "serve_llm.py")
    assert [str(w.message) for w in caught] == []
    assert result.knobs["arg.model"].value == "Qwen/Qwen3-8B"
    # Through the installed entry point: pytest would catch a warning before a CliRunner saw it.
    (tmp_path / "serve_llm.py").write_text(source)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "vllm_triage",
            "fingerprint",
            str(tmp_path / "serve_llm.py"),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""


def test_warnings_in_a_fragment_read_call_by_call_are_silenced_too() -> None:
    # Does not parse whole (cut short after the call): each call is parsed alone, also silently.
    source = HEAD + CALL.replace("))\n", "), placement=1if 1 else 2)\n") + "def broken(:\n"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = parse_ray_serve(source, "serve_llm.py")
    assert [str(w.message) for w in caught] == []
    assert any("does not parse as a whole" in note for note in result.notes)
    assert result.knobs["arg.model"].value == "Qwen/Qwen3-8B"


def test_many_llm_config_calls_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    # 40,000 calls (3 MB): past MAX_PYTHON_CHARS the module is not parsed whole, and no more than
    # a few MAX_CALLS calls are parsed alone, however many there are.
    parses = counted(monkeypatch, pysource, "parse")
    text = HEAD + CALL * 40_000
    assert len(text) > MAX_PYTHON_CHARS
    result = parse_ray_serve(text, "s.py")
    assert parses[0] <= 4 * MAX_CALLS
    assert any(f"the first {MAX_CALLS} read" in note for note in result.notes), result.notes
    assert any("each LLMConfig(...) call read alone" in note for note in result.notes)
    assert result.knobs["arg.model"].value == "Qwen/Qwen3-8B"


def test_a_script_under_the_size_bound_is_parsed_whole_and_its_calls_capped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parses = counted(monkeypatch, pysource, "parse")
    result = parse_ray_serve(HEAD + CALL * (MAX_CALLS + 10), "s.py")
    assert parses[0] == 1
    assert any(f"the first {MAX_CALLS} read" in note for note in result.notes), result.notes


def test_unterminated_calls_are_matched_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each `LLMConfig(` that never closes used to be scanned to the end of the text: quadratic.
    brackets = counted(monkeypatch, ray_serve, "_matching_brackets")
    parses = counted(monkeypatch, pysource, "parse")
    text = "x = 1\n" + "LLMConfig(model_loading_config=dict(model_id='q'\n" * 20_000
    result = parse_ray_serve(text, "s.py")
    assert brackets[0] == 1
    assert parses[0] <= 1  # the whole, if small enough; no call closes, so none alone
    assert not result.knobs


def test_python_nested_past_the_recursion_limit_is_read_alone(tmp_path: Path) -> None:
    # `1+1+…` 20,000 deep makes ast.parse raise RecursionError (or MemoryError): caught, the call
    # after it is still read on its own.
    source = HEAD + "deep = 1" + "+1" * 20_000 + "\n" + "nested = " + "[" * 5_000 + "]" * 5_000 + "\n" + CALL
    result = parse_ray_serve(source, "serve_llm.py")
    assert result.knobs["arg.model"].value == "Qwen/Qwen3-8B"
    run = fingerprint(tmp_path, {"serve_llm.py": source})
    assert run.exit_code == 0, run.output
    assert run.stderr == ""


def test_a_unit_of_many_unknown_flags_searches_few_suggestions(monkeypatch: pytest.MonkeyPatch) -> None:
    searches = counted(monkeypatch, vllm_args, "suggest_flag")
    flags = "".join(f"  --not-a-flag-{i} \\\n" for i in range(5_000))
    unit = "[Service]\nExecStart=/usr/bin/vllm serve Qwen/Qwen3-8B \\\n" + flags + "  --port 8000\n"
    result = parse_systemd(unit, "vllm.service")
    assert result.knobs["arg.port"].value == "8000"
    assert searches[0] <= 64
    # every unknown flag is still kept (as read, noted unknown)
    assert result.knobs["arg.not_a_flag_4999"].note == "flag unknown to vLLM"


def test_a_typo_still_gets_its_suggestion() -> None:
    unit = "[Service]\nExecStart=/usr/bin/vllm serve Qwen/Qwen3-8B --max-model-lenn 4096\n"
    result = parse_systemd(unit, "vllm.service")
    assert any("did you mean --max-model-len" in f.message for f in result.problems), [
        f.message for f in result.problems
    ]


BILLION_LAUGHS = (
    "servingEngineSpec:\n  a: &a [x,x,x,x,x,x,x,x,x]\n"
    + "".join(f"  b{i}: &b{i} [" + ",".join([f"*b{i - 1}" if i else "*a"] * 9) + "]\n" for i in range(9))
    + "  modelSpec:\n  - name: m\n    modelURL: Qwen/Qwen3-8B\n    env: *b8\n"
)


@pytest.mark.parametrize(
    "files",
    [
        pytest.param({"values.yaml": BILLION_LAUGHS}, id="helm-yaml-bomb"),
        pytest.param(
            {"docker-compose.yml": BILLION_LAUGHS.replace("servingEngineSpec", "services")},
            id="compose-yaml-bomb",
        ),
        pytest.param(
            {
                "job.sbatch": '#!/bin/bash\n#SBATCH -N 1\nexport HF_TOKEN="'
                + "c" * 400_000
                + "\nsrun vllm serve m\n"
            },
            id="sbatch-quote-never-closed",
        ),
        pytest.param(
            {
                "pod.yaml": 'spec:\n  containers:\n  - command: ["sh", "-c", "'
                + " " * 400_000
                + 'vllm serve m"]\n'
            },
            id="sh-c-of-whitespace",
        ),
        pytest.param(
            {"vllm.service": "[Service]\nEnvironment=" + "A=1 " * 200_000 + "\nExecStart=vllm serve m\n"},
            id="systemd-line-of-assignments",
        ),
        pytest.param(
            {"values.yaml": "servingEngineSpec:\n  modelSpec:\n" + "  " + "[" * 50_000 + "]" * 50_000 + "\n"},
            id="yaml-nested-deep",
        ),
        pytest.param(
            {"run.sh": "vllm serve m " + "$(" * 20_000 + "echo" + ")" * 20_000 + "\n"},
            id="shell-nested-substitutions",
        ),
    ],
)
def test_hostile_launch_files_end_in_one_line(tmp_path: Path, files: dict[str, str]) -> None:
    run = fingerprint(tmp_path, files)
    assert run.exit_code in (0, 4), run.output
    assert len(run.stderr.strip().splitlines()) <= 1, run.stderr
    assert "Traceback" not in run.output
