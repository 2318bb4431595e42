"""diff and series read as a person reads them: every word of a change line true."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from compare_builders import Trial, write_bundle

from vllm_triage.cli import cli
from vllm_triage.compare.diff import diff_paths

BASE = Trial(label="base", failure="oom")


def diff_text(tmp_path: Path, a: Trial, b: Trial) -> str:
    runs = [str(write_bundle(tmp_path, t)) for t in (a, b)]
    return CliRunner().invoke(cli, ["diff", *runs]).stdout


def test_an_argument_set_in_one_run_only_is_not_called_not_set_twice(tmp_path: Path) -> None:
    """A had no --max-model-len, B set 16384: `(not set) → 16384`, with no trailing `(not set)`."""
    a = BASE.but(label="a", args={"port": 8000})
    b = BASE.but(label="b", args={"max_model_len": 16384, "port": 8000})
    out = diff_text(tmp_path, a, b)
    line = next(x for x in out.splitlines() if x.strip().startswith("--max-model-len"))
    assert "(not set) → 16384" in line
    assert "16384 (not set)" not in line


def test_max_seq_len_follows_max_model_len_even_when_the_image_changed(tmp_path: Path) -> None:
    a = BASE.but(label="a")
    b = BASE.but(
        label="b",
        image="vllm/vllm-openai:v0.11.0",
        version="0.11.0",
        image_id="sha256:" + "b2" * 32,
        args={"max_model_len": 4096, "port": 8000},
    )
    result = diff_paths(str(write_bundle(tmp_path, a)), str(write_bundle(tmp_path, b))).to_json()
    by_id = {c["id"]: c for c in result["changes"]}
    assert "engine.max_seq_len" in {d["name"] for d in by_id["arg.max_model_len"]["derived"]}
    assert "engine.max_seq_len" not in {d["name"] for d in by_id["image"]["derived"]}


def test_series_does_not_say_a_trial_brought_in_a_default(tmp_path: Path) -> None:
    """V1 turns prefix caching on by default: a trial that never passed the flag did not bring
    it in; the message says it was the default and how to turn it off."""
    from vllm_triage.compare.series import series_paths

    t1 = Trial(label="t1", failure="oom", prefix_caching=True, args={"max_model_len": 8192, "port": 8000})
    t2 = t1.but(
        label="t2", failure=None, requests=1, running=(1,), args={"max_model_len": 4096, "port": 8000}
    )
    result = series_paths([str(write_bundle(tmp_path, t)) for t in (t1, t2)]).to_json()
    (broken,) = result["order"]["breaks"]
    assert "brought in" not in broken["message"]
    assert "prefix caching on by vLLM's default" in broken["message"]
    assert "--no-enable-prefix-caching" in broken["message"]
    asked = t1.but(args={"max_model_len": 8192, "port": 8000, "enable_prefix_caching": True})
    t2b = asked.but(label="t2", failure=None, requests=1, running=(1,))
    result = series_paths([str(write_bundle(tmp_path / "b", t)) for t in (asked, t2b)]).to_json()
    assert result["order"]["breaks"][0]["message"].startswith("T1 brought in --enable-prefix-caching")


def test_diff_text_fits_the_width_and_continues_under_the_value_column(tmp_path: Path) -> None:
    a = BASE.but(label="a-run-with-a-long-name-on-node-17", args={"port": 8000})
    b = BASE.but(
        label="b-run-with-a-long-name-on-node-18",
        args={"max_model_len": 16384, "port": 8000, "gpu_memory_utilization": 0.95},
        model="meta-llama/Llama-3.1-70B-Instruct-with-a-long-repository-name",
    )
    runs = [str(write_bundle(tmp_path, t)) for t in (a, b)]
    for extra, width in (([], 80), (["--width", "100"], 100)):
        out = CliRunner().invoke(cli, ["diff", *runs, *extra]).stdout
        assert max(len(line) for line in out.splitlines()) <= width
    lines = CliRunner().invoke(cli, ["diff", *runs]).stdout.splitlines()
    model = next(i for i, line in enumerate(lines) if line.lstrip().startswith("--model "))
    value_column = lines[model].index("Qwen/")
    assert lines[model + 1][:value_column].strip() == ""  # the continuation starts under the value


def test_the_served_name_moves_with_the_model_not_with_another_argument(tmp_path: Path) -> None:
    a = BASE.but(label="a")
    b = BASE.but(
        label="b",
        model="meta-llama/Llama-3.1-8B-Instruct",
        args={"max_model_len": 8192, "port": 8000, "seed": 7},
    )
    result = diff_paths(str(write_bundle(tmp_path, a)), str(write_bundle(tmp_path, b))).to_json()
    by_id = {c["id"]: c for c in result["changes"]}
    moved = {d["name"] for d in by_id["arg.model"]["derived"]}
    assert {"engine.served_model_name", "engine.tokenizer", "engine.model"} <= moved
    assert not {d["name"] for d in by_id["arg.seed"]["derived"]} & {
        "engine.served_model_name",
        "engine.tokenizer",
    }
