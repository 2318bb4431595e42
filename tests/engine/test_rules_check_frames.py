"""`rules check` validates frame tables: a vLLM file for every entry, a phase or teardown, no
(function, file) twice, and a warning for a generic name without a file."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from vllm_triage.cli import cli

GOOD = """
frame = [
  { function = "init_device", file = "vllm/v1/worker/hpu_worker.py", phase = "cuda_init", versions = "plugin" },
  { function = "execute_model", file = "vllm/v1/worker/hpu_model_runner.py", phase = "request", strong = false },
  { function = "shutdown", file = "vllm/v1/worker/hpu_worker.py", teardown = true, why = "plugin teardown" },
]
teardown_frame = [
  { function = "barrier", file = "torch/distributed/distributed_c10d.py", package = "torch" },
]
"""


def run_check(tmp_path: Path, text: str) -> tuple[int, str]:
    (tmp_path / "frames.toml").write_text(text, encoding="utf-8")
    result = CliRunner().invoke(cli, ["rules", "check", "--rules", str(tmp_path)])
    return result.exit_code, result.output


def test_a_good_table_passes(tmp_path: Path) -> None:
    code, output = run_check(tmp_path, GOOD)
    assert code == 0, output
    assert "0 problem(s)" in output


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('{ function = "init_device", phase = "cuda_init" }', "needs 'file'"),
        (
            '{ function = "init_device", file = "v1/worker/gpu_worker.py", phase = "cuda_init" }',
            "must start with 'vllm/'",
        ),
        (
            '{ function = "init_device", file = "vllm/v1/worker/gpu_worker", phase = "cuda_init" }',
            "must be a .py path",
        ),
        (
            '{ function = "init_device", file = "vllm/v1/worker/gpu_worker.py", phase = "booting" }',
            "valid 'phase'",
        ),
        ('{ function = "init_device", file = "vllm/v1/worker/gpu_worker.py" }', "valid 'phase' or teardown"),
        (
            '{ function = "init_device", file = "vllm/x.py", phase = "cuda_init", stage = 1 }',
            "unknown field(s) stage",
        ),
        ('{ file = "vllm/x.py", phase = "cuda_init" }', "needs 'function'"),
    ],
)
def test_bad_frame_entries_are_named(tmp_path: Path, entry: str, message: str) -> None:
    code, output = run_check(tmp_path, f"frame = [\n  {entry},\n]\n")
    assert code == 1
    assert message in output and "frames.toml" in output
    assert "Traceback" not in output


def test_duplicate_function_and_file(tmp_path: Path) -> None:
    entry = '{ function = "load_model", file = "vllm/v1/worker/hpu_worker.py", phase = "weight_load" }'
    code, output = run_check(tmp_path, f"frame = [\n  {entry},\n  {entry},\n]\n")
    assert code == 1
    assert "duplicate (function, file)" in output


def test_same_name_in_two_files_is_fine(tmp_path: Path) -> None:
    code, output = run_check(
        tmp_path,
        'frame = [\n  { function = "capture", file = "vllm/worker/hpu_model_runner.py", phase = "engine_reserve" },\n'
        '  { function = "capture", file = "vllm/v1/worker/hpu_model_runner.py", phase = "engine_reserve" },\n]\n',
    )
    assert code == 0, output


def test_generic_name_without_file_is_warned(tmp_path: Path) -> None:
    code, output = run_check(tmp_path, 'frame = [\n  { function = "__init__", phase = "weight_load" },\n]\n')
    assert code == 1  # the missing file is the error
    assert "warning:" in output and "generic function name '__init__'" in output


def test_overriding_a_builtin_entry_is_a_warning_only(tmp_path: Path) -> None:
    code, output = run_check(
        tmp_path,
        'frame = [\n  { function = "init_device", file = "vllm/v1/worker/gpu_worker.py", phase = "container" },\n]\n',
    )
    assert code == 0, output
    assert "warning:" in output and "overrides the entry" in output
    assert "1 warning(s)" in output


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('{ function = "barrier", file = "torch/distributed/distributed_c10d.py" }', "needs 'package'"),
        (
            '{ function = "shutdown", file = "vllm/v1/engine/core.py", package = "vllm2" }',
            "belongs in 'frame'",
        ),
        (
            '{ function = "barrier", file = "torch/distributed/c10d", package = "torch" }',
            "must be a .py path",
        ),
    ],
)
def test_bad_teardown_frames(tmp_path: Path, entry: str, message: str) -> None:
    code, output = run_check(tmp_path, f"teardown_frame = [\n  {entry},\n]\n")
    assert code == 1
    assert message in output


def test_json_output_marks_warnings(tmp_path: Path) -> None:
    (tmp_path / "frames.toml").write_text(
        'frame = [\n  { function = "init_device", file = "vllm/v1/worker/gpu_worker.py", phase = "container" },\n]\n',
        encoding="utf-8",
    )
    result = CliRunner().invoke(cli, ["rules", "check", "--rules", str(tmp_path), "--format", "json"])
    assert result.exit_code == 0
    assert '"warning": true' in result.output
