"""The known-issue catalogue: data checks, matching, and version gating."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_triage.analysis import known_issues, versions
from vllm_triage.analysis.known_issues import MIN_SCORE, best_match, load, match
from vllm_triage.analysis.signature import normalise
from vllm_triage.core.errors import RuleError
from vllm_triage.engine.rules import load_file
from vllm_triage.resources import rules_dir

CATALOGUE = load()


def test_catalogue_is_large_enough_and_ids_are_unique():
    assert len(CATALOGUE) >= 25
    assert len({i.id for i in CATALOGUE}) == len(CATALOGUE)
    assert all(i.ref and i.title and i.workaround for i in CATALOGUE)
    assert sum(1 for i in CATALOGUE if i.fixed_in) >= 2


def test_rule_loader_ignores_known_issue_tables():
    rules, frames, order = load_file(rules_dir() / "known_issues.toml")
    assert (rules, frames, order) == ([], [], [])


@pytest.mark.parametrize("issue", CATALOGUE, ids=lambda i: i.id)
def test_signature_is_written_as_normalise_writes_it(issue):
    for signature in issue.signatures:
        assert normalise(signature) == signature


@pytest.mark.parametrize("issue", CATALOGUE, ids=lambda i: i.id)
def test_example_matches_its_own_entry_first(issue):
    assert issue.example, "every entry carries a raw example"
    found = match(issue.example, issue.category, None, CATALOGUE)
    assert found and found[0].score >= MIN_SCORE
    # entries with the same signature (one message, two upstream threads) tie; either is right
    assert found[0].issue.signatures == issue.signatures


@pytest.mark.parametrize("issue", CATALOGUE, ids=lambda i: i.id)
def test_versions_in_entries_parse(issue):
    if issue.fixed_in:
        assert versions.parse(issue.fixed_in) is not None
    assert versions.in_range("0.10.0", issue.affected) in (True, False)


def test_best_match_reports_score_and_workaround():
    first_error = {
        "message": "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
        "when initializing the engine.",
        "category": "kv_cache_insufficient",
    }
    found = best_match(first_error, "0.10.2")
    assert found["id"] == "no-memory-for-cache-blocks"
    assert 0.9 <= found["score"] <= 1.0
    assert found["workaround"] and found["url"].startswith("https://")


def test_version_gating_suppresses_a_match_the_run_already_has_the_fix_for():
    first_error = {
        "message": "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
        "Your Tesla V100-SXM2-32GB GPU has compute capability 7.0.",
        "category": "dtype_unsupported_on_gpu",
    }
    assert best_match(first_error, "0.8.5")["id"] == "bfloat16-on-pre-ampere"
    assert best_match(first_error, None)["id"] == "bfloat16-on-pre-ampere"  # unknown: not gated
    assert best_match(first_error, "0.1.dev19262+gb6bbf29dd.d20260727")["id"] == "bfloat16-on-pre-ampere"
    assert best_match(first_error, "0.9.0") is None
    assert best_match(first_error, "0.10.1.post1") is None
    assert best_match(first_error, "0.17.1+a03ca76a.nv26.03.46967107") is None
    # a dev build of the fixing release was cut before it: not assumed fixed
    assert best_match(first_error, "0.9.0.dev12+g1234abc")["id"] == "bfloat16-on-pre-ampere"
    suppressed = match(first_error["message"], first_error["category"], "0.9.2")
    assert suppressed[0].suppressed and "already contains the fix" in suppressed[0].reasons[-1]


def test_gating_falls_through_to_the_entry_that_still_applies():
    message = (
        "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
        "you must use the 'spawn' start method"
    )
    first_error = {"message": message, "category": "cuda_reinit_in_fork"}
    assert best_match(first_error, "0.5.4")["id"] == "cuda-reinit-in-forked-worker-v0"
    assert best_match(first_error, "0.8.0")["id"] == "cuda-reinit-in-forked-engine-v1"


def test_unrelated_and_empty_errors_match_nothing():
    assert best_match(None, "0.10.0") is None
    assert best_match({"message": "", "category": "x"}, None) is None
    unrelated = {
        "message": "KeyError: 'model.layers.0.mlp.gate_proj.weight'",
        "category": "unexpected_weight_key",
    }
    assert best_match(unrelated, "0.10.0") is None


def test_a_missing_file_is_the_missing_compiler_only_when_it_is_nvcc():
    # normalised, every `No such file or directory: '…'` reads the same: `requires` keeps the word
    lora = "FileNotFoundError: [Errno 2] No such file or directory: '/data/adapters/a/adapter_config.json'"
    assert best_match({"message": lora, "category": "python_exception"}, "0.10.0") is None
    compiler = "FileNotFoundError: [Errno 2] No such file or directory: '/usr/local/cuda/bin/nvcc'"
    found = best_match({"message": compiler, "category": "python_exception"}, "0.10.0")
    assert found is not None and found["id"] == "flashinfer-jit-needs-nvcc"
    shell = "/bin/sh: 1: /usr/local/cuda/bin/nvcc: not found"
    assert (
        best_match({"message": shell, "category": "nvcc_not_found"}, "0.10.0")["id"]
        == "flashinfer-jit-needs-nvcc"
    )
    assert best_match({"message": "/bin/sh: 1: ninja: not found", "category": "x"}, "0.10.0") is None


def test_another_category_scores_lower_but_is_not_excluded():
    message = "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)"
    same = match(message, "nccl_init_failed", None)[0]
    other = match(message, "cuda_error", None)[0]
    assert same.issue.id == other.issue.id == "nccl-unhandled-cuda-error"
    assert other.score == pytest.approx(same.score * known_issues.OTHER_CATEGORY_FACTOR)


def test_bad_catalogue_entries_are_rule_errors(tmp_path: Path):
    bad = tmp_path / "extra.toml"
    bad.write_text(
        '[[known_issue]]\nid = "x"\nref = "r"\ntitle = "t"\nsignature = "s"\nworkaround = "w"\nfixd_in = "1"\n'
    )
    with pytest.raises(RuleError, match="unknown field"):
        known_issues.load((str(tmp_path),))
    bad.write_text(
        '[[known_issue]]\nid = "x"\nref = "r"\ntitle = "t"\nsignature = "s"\nworkaround = "w"\nfixed_in = "soon"\n'
    )
    with pytest.raises(RuleError, match="not a version"):
        known_issues.load((str(tmp_path),))
    bad.write_text(
        '[[known_issue]]\nid = "x"\nref = "r"\ntitle = "t"\nsignature = "s"\nworkaround = "w"\nrequires = [1]\n'
    )
    with pytest.raises(RuleError, match="'requires' must be"):
        known_issues.load((str(tmp_path),))


@pytest.mark.parametrize(
    "running, fixed, contains",
    [
        ("0.10.2", "0.10.2", True),
        ("v0.10.2", "0.10.2", True),
        ("0.10.10", "0.10.9", True),
        ("0.10.2.dev378+g4d7fe40fc.d20250829", "0.10.2", False),
        ("0.11.0rc2", "0.11.0", False),
        ("0.6.4.post1", "0.6.4", True),
        ("0.17.1+a03ca76a.nv26.03.46967107", "0.17.1", True),
        ("0.1.dev19262+gb6bbf29dd.d20260727", "0.1", False),
        ("unknown", "0.1", False),
        (None, "0.1", False),
    ],
)
def test_version_comparison(running, fixed, contains):
    assert versions.contains_fix(running, fixed) is contains


def test_version_ranges():
    assert versions.in_range("0.8.5", ">=0.7.0, <0.13.0") is True
    assert versions.in_range("0.13.0", ">=0.7.0,<0.13.0") is False
    assert versions.in_range("0.5.0", "") is True
    assert versions.in_range(None, ">=0.1") is None
    with pytest.raises(ValueError):
        versions.in_range("0.5.0", "~=0.5")


def test_extra_rule_dirs_extend_the_catalogue(tmp_path: Path):
    (tmp_path / "site.toml").write_text(
        '[[known_issue]]\nid = "site-nfs-stall"\nref = "internal: INC-123"\ntitle = "NFS stall"\n'
        'category = "hang"\nsignature = "nfs: server storage01 not responding, still trying"\n'
        'workaround = "Use local disk."\n'
    )
    first_error = {"message": "nfs: server storage01 not responding, still trying", "category": "hang"}
    assert best_match(first_error, None) is None
    assert best_match(first_error, None, (str(tmp_path),))["id"] == "site-nfs-stall"
