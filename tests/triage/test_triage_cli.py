"""Each command through click's CliRunner, read like a shell session."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
SAMPLES = Path(__file__).resolve().parents[2] / "samples"
RunCli = Callable[..., Result]
TriageJson = Callable[..., dict[str, Any]]

OOM = LOGS / "v1-0.10.2-tp1-profile-oom.log"


# --------------------------------------------------------------------------------------------
# vllm-triage triage


def test_triage_text(run_cli: RunCli) -> None:
    result = run_cli("triage", str(OOM), "--width", "250")
    assert result.exit_code == 0
    out = result.stdout
    first = out.splitlines()[0]
    assert first.startswith("failed in engine_reserve: torch could not allocate GPU memory")
    assert "(category oom_engine_reserve)" in out
    assert f"{OOM}:72" in out
    assert "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.31 GiB" in out
    assert "Engine core initialization failed" in out  # a consequence, listed as such
    assert "\x1b[" not in out


def test_triage_text_verbose_shows_the_whole_block(run_cli: RunCli) -> None:
    """-v shows every message of the block (its prefix once, above them); the default elides."""
    short = run_cli("triage", str(OOM), "--width", "2000").stdout
    full = run_cli("triage", str(OOM), "-v", "--width", "2000").stdout
    rows = json.loads(run_cli("triage", str(OOM), "--format", "json").stdout)["first_error"]["block_rows"]
    assert [r["line"] for r in rows] == list(range(31, 73))
    assert all(f"│ {r['message']}" in full for r in rows if r["message"].strip())
    assert not all(f"│ {r['message']}" in short for r in rows if r["message"].strip())
    assert "lines (-v shows them)" in short


def test_triage_json(run_cli: RunCli) -> None:
    result = run_cli("triage", str(OOM), "--format", "json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["schema"] == "vllm-triage.triage/1"
    assert data["phase"] == "engine_reserve"
    assert data["first_error"]["line"] == 72


def test_triage_markdown(run_cli: RunCli) -> None:
    result = run_cli("triage", str(OOM), "--format", "md")
    assert result.exit_code == 0
    md = result.stdout
    assert md.lstrip().startswith("#")
    assert "engine_reserve" in md
    assert "oom_engine_reserve" in md
    assert "```" in md  # the block is fenced
    assert md.count("```") % 2 == 0
    assert "torch.OutOfMemoryError: CUDA out of memory" in md


def test_triage_markdown_of_a_healthy_log(run_cli: RunCli) -> None:
    result = run_cli("triage", str(LOGS / "v1-0.11.0-healthy-then-shutdown.log"), "--format", "md")
    assert result.exit_code == 0
    assert result.stdout.startswith("### vllm-triage: no failure: ready")
    assert result.stdout.count("```") % 2 == 0


def test_triage_markdown_keeps_backticks_of_the_log_inside_the_fence(tmp_path: Path, run_cli: RunCli) -> None:
    """vLLM messages contain backticks (``gpu_memory_utilization``); a log line with ``` must
    not close the fence early."""
    lines = (SAMPLES / "kv-cache-too-small" / "vllm.log").read_text().splitlines()
    lines.insert(60, "(EngineCore_DP0 pid=263) ERROR 11-04 15:23:28 [core.py:718] ```")
    given = tmp_path / "ticks.log"
    given.write_text("\n".join(lines) + "\n")
    md = run_cli("triage", str(given), "--format", "md").stdout
    fences = [line for line in md.splitlines() if line.strip().startswith("```")]
    assert len(fences) % 2 == 0


def test_triage_text_on_stdin_reads_like_a_shell_session(run_cli: RunCli) -> None:
    """`docker logs vllm 2>&1 | vllm-triage triage -`"""
    result = run_cli("triage", "-", input=(LOGS / "v0-0.6.3-mq-tp2-safetensors.log").read_bytes())
    assert result.exit_code == 0
    assert result.stdout.startswith("failed in weight_load:")
    assert "first error  <stdin>:40" in result.stdout


def test_triage_with_extra_rules_directory(tmp_path: Path, triage_json: TriageJson) -> None:
    """A site rule for a cause the built-ins do not know: the generic exception becomes named."""
    (tmp_path / "site.toml").write_text(
        "[[rule]]\n"
        'id = "site.nfs_weights_gone"\n'
        'kind = "error"\n'
        'phase = "weight_load"\n'
        'category = "weights_storage_lost"\n'
        "priority = 90\n"
        'explain = "The NFS share that holds the weights stopped answering."\n'
        'advice = "Check the filer and the mount on the node; copy the weights to local NVMe."\n'
        "pattern = '''OSError: \\[Errno 116\\] Stale file handle'''\n"
        "must_match = [\"OSError: [Errno 116] Stale file handle: '/mnt/nfs/models/x/model-00003-of-00017.safetensors'\"]\n"
    )
    lines = (LOGS / "v1-0.10.2-hang-in-weight-load.log").read_text().splitlines()
    lines += [
        "(EngineCore_DP0 pid=120) ERROR 10-02 14:09:44 [core.py:718] EngineCore failed to start.",
        "(EngineCore_DP0 pid=120) ERROR 10-02 14:09:44 [core.py:718] Traceback (most recent call last):",
        '(EngineCore_DP0 pid=120) ERROR 10-02 14:09:44 [core.py:718]   File "/usr/local/lib/python3.12/dist-packages/'
        'vllm/model_executor/model_loader/weight_utils.py", line 482, in safetensors_weights_iterator',
        '(EngineCore_DP0 pid=120) ERROR 10-02 14:09:44 [core.py:718]     with safe_open(st_file, framework="pt") as f:',
        "(EngineCore_DP0 pid=120) ERROR 10-02 14:09:44 [core.py:718] OSError: [Errno 116] Stale file handle: "
        "'/mnt/nfs/models/Qwen3-32B/model-00003-of-00017.safetensors'",
    ]
    given = tmp_path / "stale.log"
    given.write_text("\n".join(lines) + "\n")

    plain = triage_json(given)
    with_site = triage_json(given, extra=["--rules", str(tmp_path)])
    assert plain["first_error"]["line"] == with_site["first_error"]["line"] == len(lines)
    assert plain["first_error"]["rule"] is None
    assert with_site["first_error"]["rule"] == "site.nfs_weights_gone"
    assert with_site["first_error"]["category"] == "weights_storage_lost"
    assert with_site["phase"] == "weight_load"


# --------------------------------------------------------------------------------------------
# vllm-triage rules list / rules check


def test_rules_list(run_cli: RunCli) -> None:
    result = run_cli("rules", "list")
    assert result.exit_code == 0
    rows = [line.split() for line in result.stdout.splitlines()]
    ids = {row[2] for row in rows}
    assert {
        "kv.max_seq_len_exceeds_cache",
        "engine.core_init_failed",
        "marker.ready",
        "noise.leaked_shm",
    } <= ids
    assert {row[0] for row in rows} == {"marker", "error", "consequence", "noise"}
    assert "rules from" in result.stderr


def test_rules_list_json_filtered_by_kind(run_cli: RunCli) -> None:
    result = run_cli("rules", "list", "--kind", "consequence", "--format", "json")
    assert result.exit_code == 0
    rules = json.loads(result.stdout)
    assert rules and all(r["kind"] == "consequence" for r in rules)
    assert {"id", "kind", "phase", "category", "priority", "file", "pattern"} <= set(rules[0])


def test_rules_check_passes_on_the_built_in_rules(run_cli: RunCli) -> None:
    result = run_cli("rules", "check")
    assert result.exit_code == 0, result.stdout
    assert result.stdout == ""
    assert "0 problem(s)" in result.stderr


BROKEN_RULE_FILES = {
    # bad TOML: an unterminated multi-line string
    "half-written.toml": (
        '[[rule]]\nid = "site.half_written"\nkind = "error"\npattern = \'\'\'unterminated\n',
        None,
        "is not valid TOML",
    ),
    # compiles for Python's regex, not for polars' Rust regex
    "lookbehind.toml": (
        "[[rule]]\n"
        'id = "site.nfs_not_responding"\nkind = "error"\nphase = "weight_load"\ncategory = "site_storage"\n'
        'explain = "The NFS server with the weights stopped answering."\n'
        "pattern = '''(?<=nfs: )server \\S+ not responding'''\n"
        'must_match = ["nfs: server filer-02 not responding, still trying"]\n',
        "site.nfs_not_responding",
        "look-around",
    ),
    # a counted repetition that would make the scan's union automaton too big to cache
    "counted.toml": (
        "[[rule]]\n"
        'id = "site.value_error_line"\nkind = "error"\nphase = "config"\ncategory = "config_validation"\n'
        'explain = "pydantic rejected a launch setting."\n'
        "pattern = '''Value error, .{1,2000}? \\[type=value_error'''\n"
        'must_match = ["Value error, max_model_len 9 is too big [type=value_error, input_value=1]"]\n',
        "site.value_error_line",
        "counted repetition {1,2000} above 255",
    ),
    # an example that does not match
    "xid.toml": (
        "[[rule]]\n"
        'id = "site.gpu_fell_off_bus"\nkind = "error"\nphase = "request"\ncategory = "gpu_lost"\n'
        'explain = "The GPU fell off the bus (Xid 79)."\n'
        "pattern = '''Xid \\(PCI:[\\w:.]+\\): 79,'''\n"
        'must_match = ["NVRM: Xid (PCI:0000:4a:00): 79, pid=2961, name=python3, GPU has fallen off the bus."]\n'
        'must_not_match = ["NVRM: Xid (PCI:0000:4a:00): 79, pid=2961"]\n',
        "site.gpu_fell_off_bus",
        "must_not_match example matches",
    ),
    # a must_match example the pattern does not match (the message says "CUDA error", not "Cuda")
    "ecc.toml": (
        "[[rule]]\n"
        'id = "site.uncorrectable_ecc"\nkind = "error"\nphase = "request"\ncategory = "gpu_hardware"\n'
        'explain = "An uncorrectable ECC error: the GPU needs a reset or replacement."\n'
        "pattern = '''Cuda error: uncorrectable ECC error encountered'''\n"
        'must_match = ["RuntimeError: CUDA error: uncorrectable ECC error encountered"]\n',
        "site.uncorrectable_ecc",
        "must_match example does not match",
    ),
    # an error rule without the text a person reads
    "no-explain.toml": (
        "[[rule]]\n"
        'id = "site.no_explain"\nkind = "error"\nphase = "config"\ncategory = "x"\n'
        "pattern = '''Segmentation fault'''\nmust_match = [\"Segmentation fault (core dumped)\"]\n",
        "site.no_explain",
        "needs 'explain'",
    ),
}


def test_rules_check_names_the_file_and_the_rule_of_every_problem(tmp_path: Path, run_cli: RunCli) -> None:
    for name, (text, _, _) in BROKEN_RULE_FILES.items():
        (tmp_path / name).write_text(text)
    result = run_cli("rules", "check", "--rules", str(tmp_path))
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    for name, (_, rule_id, problem) in BROKEN_RULE_FILES.items():
        reported = [line for line in result.stdout.splitlines() if line.startswith(f"{tmp_path / name}: ")]
        assert len(reported) == 1, (name, result.stdout)
        assert problem in reported[0]
        if rule_id:
            assert f": {rule_id}: " in reported[0] or f"rule {rule_id}: " in reported[0]
    # The built-in rules are still fine: every problem reported is about one of the broken files
    # (other rule families may report a file that does not parse for them too).
    for line in result.stdout.splitlines():
        assert str(tmp_path) in line, line


def test_a_broken_rules_directory_stops_triage_with_one_line(tmp_path: Path, run_cli: RunCli) -> None:
    name = "half-written.toml"
    (tmp_path / name).write_text(BROKEN_RULE_FILES[name][0])
    result = run_cli("triage", str(OOM), "--rules", str(tmp_path))
    assert result.exit_code == 4
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert str(tmp_path / name) in result.stderr
    assert "Traceback" not in result.output


def test_rules_dir_that_does_not_exist(tmp_path: Path, run_cli: RunCli) -> None:
    result = run_cli("rules", "check", "--rules", str(tmp_path / "nope"))
    assert result.exit_code != 0
    assert "not a directory" in result.stdout + result.stderr
    assert "Traceback" not in result.output


def test_version_and_help(run_cli: RunCli) -> None:
    assert run_cli("--version").exit_code == 0
    help_text = run_cli("--help").stdout
    for command in ("triage", "rules"):
        assert command in help_text
