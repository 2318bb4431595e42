"""The comparison on hand-made fingerprints (the `vllm-triage.fingerprint/1` JSON shape), and the
compare data that drives it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from vllm_triage.compare import data as compare_data
from vllm_triage.compare.changes import compare_runs
from vllm_triage.compare.diff import diff_runs
from vllm_triage.compare.outcome import CHANGED, NEW, UNKNOWN, compare_outcomes, outcome_of
from vllm_triage.compare.run import Run
from vllm_triage.compare.values import shown
from vllm_triage.core.errors import RuleError

DATA = compare_data.load()


def v(value: Any, file: str = "inspect.json", line: int = 1) -> dict[str, Any]:
    return {"value": value, "source": {"file": file, "line": line}}


def fingerprint(
    knobs: dict[str, Any] | None = None,
    facts: dict[str, Any] | None = None,
    findings: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "schema": "vllm-triage.fingerprint/1",
        "knobs": {k: val if isinstance(val, dict) else v(val) for k, val in (knobs or {}).items()},
        "facts": {k: val if isinstance(val, dict) else v(val) for k, val in (facts or {}).items()},
        "findings": findings or [],
    }


def pair(
    knobs_a: dict, knobs_b: dict, facts_a: dict | None = None, facts_b: dict | None = None
) -> tuple[Run, Run]:
    return (
        Run("A", fingerprint=fingerprint(knobs_a, facts_a)),
        Run("B", fingerprint=fingerprint(knobs_b, facts_b)),
    )


BASE_KNOBS = {
    "image.ref": "vllm/vllm-openai:v0.10.2",
    "arg.model": "Qwen/Qwen3-8B",
    "arg.max_model_len": 8192,
}
BASE_FACTS = {"vllm.version": "0.10.2", "host.driver_version": "570.133.20", "host.cuda_version": "12.8"}


# ------------------------------------------------------------------------------------- data


def test_builtin_compare_data_loads() -> None:
    assert [layer.id for layer in sorted(DATA.layers.values(), key=lambda x: x.order)] == [
        "host",
        "image",
        "gpus",
        "args",
        "env",
        "request",
    ]
    assert {g.id for g in DATA.groups} >= {"node", "driver", "image", "gpus", "arg", "env", "request"}
    assert [s.id for s in DATA.stages] == list(compare_data.KNOWN_STAGES)
    assert {n.id for n in DATA.noise} >= {
        "timestamps",
        "pids",
        "request-ids",
        "container-ids",
        "ports",
        "hostnames",
    }


def test_compare_data_is_invisible_to_the_other_loaders() -> None:
    # rules/compare/ sits under rules/: the rule engine and the fingerprint's data loader read every
    # file there and must find no [[rule]] (or other table of theirs) in it, nor choke on it.
    from vllm_triage.engine import rules
    from vllm_triage.fingerprint import data as fingerprint_data

    assert not [r for r in rules.load().rules if "/compare/" in r.file.replace("\\", "/")]
    fingerprint_data.load()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[noise]]\nid = "x"\nwhy = "y"\nnames = ["a.b"]\npattern = "z"\n', r"unknown field\(s\) pattern"),
        ('[[knob_group]]\nid = "x"\nlabel = "x"\nknobs = ["a.*"]\n', "misses layer"),
        ('[[stage]]\nid = "warp_drive"\norder = 9\nlabel = "x"\n', "unknown stage"),
        ('[[noise]]\nid = "x"\nwhy = "y"\nnames = ["a"]\nmask = "("\n', "mask does not compile"),
        ('[compare_settings]\nsame_failure_similarity = "high"\n', "expected a number"),
    ],
)
def test_compare_data_is_strict(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(RuleError, match=message):
        compare_data.load_file(path, compare_data.CompareData())


def test_extra_rules_dir_overrides_a_group_in_place(tmp_path: Path) -> None:
    (tmp_path / "mine.toml").write_text(
        '[[knob_group]]\nid = "request"\nlabel = "the request"\nlayer = "request"\nknobs = ["request.*"]\nper_name = true\n'
    )
    data = compare_data.load([str(tmp_path)])
    ids = [g.id for g in data.groups]
    assert ids == [g.id for g in DATA.groups]  # same precedence order
    assert next(g for g in data.groups if g.id == "request").per_name is True


# ------------------------------------------------------------------------------- grouping


def test_pip_install_without_image_compares_on_the_vllm_version() -> None:
    a, b = pair(
        {"arg.model": "m"},
        {"arg.model": "m"},
        {"vllm.version": "0.9.2", "torch.version": "2.7.0+cu126"},
        {"vllm.version": "0.10.1", "torch.version": "2.7.1+cu128"},
    )
    result = compare_runs(a, b, DATA)
    (change,) = result.changes
    assert change.group == "image"
    assert [k.name for k in change.knobs] == ["vllm.version"]
    assert [d.name for d in change.derived] == ["torch.version"]
    assert result.drift == []


def test_container_driver_changed_while_the_host_driver_did_not_is_drift() -> None:
    a, b = pair(
        BASE_KNOBS,
        BASE_KNOBS,
        {**BASE_FACTS, "container.driver_version": "570.133.20"},
        {**BASE_FACTS, "container.driver_version": "575.57.08"},
    )
    result = compare_runs(a, b, DATA)
    assert result.changes == []
    assert [d.id for d in result.drift] == ["container-driver"]


def test_software_moved_under_the_same_image_reference_is_drift() -> None:
    a, b = pair(BASE_KNOBS, BASE_KNOBS, BASE_FACTS, {**BASE_FACTS, "vllm.version": "0.10.2.post1"})
    result = compare_runs(a, b, DATA)
    assert [d.id for d in result.drift] == ["image-content"]
    assert "Pin the image by digest" in result.drift[0].advice


def test_a_fact_no_entry_explains_is_plain_drift() -> None:
    a, b = pair(
        BASE_KNOBS,
        BASE_KNOBS,
        {**BASE_FACTS, "host.kernel": "6.8.0"},
        {**BASE_FACTS, "host.kernel": "6.8.12"},
    )
    (drift,) = compare_runs(a, b, DATA).drift
    assert drift.id == "fact:host.kernel"
    assert "no knob to explain it" in drift.message


def test_gpu_selection_spellings_are_one_value() -> None:
    a, b = pair(
        {**BASE_KNOBS, "container.gpus": '"device=0,1"'}, {**BASE_KNOBS, "container.gpus": "device=0,1"}
    )
    assert compare_runs(a, b, DATA).changes == []


def test_image_reference_spellings_are_one_value() -> None:
    a, b = pair({**BASE_KNOBS, "image.ref": "docker.io/vllm/vllm-openai:v0.10.2"}, BASE_KNOBS)
    assert compare_runs(a, b, DATA).changes == []


def test_request_url_host_is_noise_but_its_path_is_not() -> None:
    a, b = pair(
        {**BASE_KNOBS, "request.url": "http://10.0.0.7:8000/v1/chat/completions"},
        {**BASE_KNOBS, "request.url": "http://localhost:8100/v1/chat/completions"},
    )
    result = compare_runs(a, b, DATA)
    assert result.changes == [] and [n.rule for n in result.noise] == ["request-url-host"]
    a, b = pair(
        {**BASE_KNOBS, "request.url": "http://10.0.0.7:8000/v1/chat/completions"},
        {**BASE_KNOBS, "request.url": "http://10.0.0.7:8000/v1/completions"},
    )
    assert [c.id for c in compare_runs(a, b, DATA).changes] == ["request"]


def test_request_ids_inside_a_value_are_noise() -> None:
    a, b = pair(
        {**BASE_KNOBS, "request.user": "chatcmpl-8f3a2b1c9d"},
        {**BASE_KNOBS, "request.user": "chatcmpl-11aa22bb33"},
    )
    assert [n.rule for n in compare_runs(a, b, DATA).noise] == ["request-ids"]


@pytest.mark.parametrize(("version", "is_change"), [("0.10.2", False), ("0.6.3", True)])
def test_default_depends_on_the_vllm_release(version: str, is_change: bool) -> None:
    # --enable-prefix-caching is vLLM's default in V1 (from 0.8), not in V0.
    a, b = pair(
        {**BASE_KNOBS, "arg.enable_prefix_caching": "true"},
        BASE_KNOBS,
        {**BASE_FACTS, "vllm.version": version},
        {**BASE_FACTS, "vllm.version": version},
    )
    result = compare_runs(a, b, DATA)
    assert bool(result.changes) is is_change
    assert bool(result.defaults) is not is_change


def test_one_sided_knob_from_another_kind_of_artefact_is_not_compared() -> None:
    knobs_a = {**BASE_KNOBS, "env.HF_HOME": v("/data", "a/inspect.json")}
    knobs_b = {
        **BASE_KNOBS,
        "env.HF_HOME": v("/data", "b/inspect.json"),
        "env.TORCH_HOME": v("/t", "b/printenv.txt"),
    }
    a = Run(
        "A",
        fingerprint=fingerprint(knobs_a),
        inputs=[{"path": "a/inspect.json", "role": "container_inspect"}],
    )
    b = Run(
        "B",
        fingerprint=fingerprint(knobs_b),
        inputs=[
            {"path": "b/inspect.json", "role": "container_inspect"},
            {"path": "b/printenv.txt", "role": "environment"},
        ],
    )
    result = compare_runs(a, b, DATA)
    assert result.changes == []
    assert [n.name for n in result.not_compared] == ["env.TORCH_HOME"]
    # The same variable from the same kind of artefact (both inspects) is a change: A would have shown it.
    knobs_b["env.TORCH_HOME"] = v("/t", "b/inspect.json")
    b.fingerprint = fingerprint(knobs_b)
    assert [c.id for c in compare_runs(a, b, DATA).changes] == ["env.TORCH_HOME"]


def test_object_reprs_are_not_compared() -> None:
    a, b = pair(
        {**BASE_KNOBS, "arg.dispatch_function": "<function ServeSubcommand.cmd at 0x7f3a>"},
        {**BASE_KNOBS, "arg.dispatch_function": "<function ServeSubcommand.cmd at 0x7f99>"},
    )
    result = compare_runs(a, b, DATA)
    assert result.changes == [] and [n.note for n in result.not_compared] == ["cannot be compared"]


def test_secrets_are_redacted_when_shown() -> None:
    assert shown("env.HF_TOKEN", "hf_abcdef") == "<redacted>"
    assert shown("env.AWS_SECRET_ACCESS_KEY", "x") == "<redacted>"
    assert shown("arg.api_key", "sk-1") == "<redacted>"
    assert shown("arg.tokenizer", "Qwen/Qwen3-8B") == "Qwen/Qwen3-8B"
    assert shown("env.TOKENIZERS_PARALLELISM", "false") == "false"


def test_verdict_counts_changes_and_kinds_of_drift() -> None:
    knobs_b = copy.deepcopy(BASE_KNOBS)
    knobs_b["arg.max_model_len"] = 4096
    a, b = pair(
        BASE_KNOBS, knobs_b, {**BASE_FACTS, "host.gpu_processes": 0}, {**BASE_FACTS, "host.gpu_processes": 2}
    )
    result = diff_runs(a, b, DATA)
    assert result.comparison.variables == 2
    assert result.verdict == "confounded" and result.exit_code == 3


# -------------------------------------------------------------------------------- outcomes


def triage(phase: str, category: str | None, message: str | None, ready: bool = False) -> dict[str, Any]:
    first = (
        None
        if category is None
        else {
            "file": "log.txt",
            "line": 10,
            "text": message,
            "message": message,
            "category": category,
            "rule": category,
        }
    )
    return {"phase": phase, "first_error": first, "ready": ready}


def test_same_phase_but_another_failure_changed_type() -> None:
    a = outcome_of(
        triage(
            "engine_reserve",
            "oom_engine_reserve",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB",
        )
    )
    b = outcome_of(
        triage(
            "engine_reserve",
            "cuda_graph_capture",
            "RuntimeError: CUDA error: operation not permitted when stream is capturing",
        )
    )
    assert compare_outcomes(a, b, 0.85, ["--max-num-seqs"], []).conclusion == CHANGED


def test_a_new_failure_is_attributed_only_to_a_single_change() -> None:
    a = outcome_of(triage("none", None, None, ready=True))
    b = outcome_of(
        triage(
            "request",
            "illegal_memory_access",
            "RuntimeError: CUDA error: an illegal memory access was encountered",
        )
    )
    one = compare_outcomes(a, b, 0.85, ["--enable-prefix-caching"], [])
    assert one.conclusion == NEW and "the one change (--enable-prefix-caching) introduced it" in one.message
    two = compare_outcomes(a, b, 0.85, ["image", "host driver"], [])
    assert "cannot be attributed" in two.message


def test_no_log_means_the_failure_is_unknown() -> None:
    assert (
        compare_outcomes(outcome_of(None), outcome_of(triage("none", None, None)), 0.85, [], []).conclusion
        == UNKNOWN
    )


def test_an_engine_fact_follows_the_argument_of_its_name() -> None:
    a, b = pair(
        {**BASE_KNOBS, "arg.enable_prefix_caching": False, "arg.block_size": 16},
        {**BASE_KNOBS, "arg.enable_prefix_caching": True, "arg.block_size": 32},
        {**BASE_FACTS, "engine.enable_prefix_caching": False},
        {**BASE_FACTS, "engine.enable_prefix_caching": True},
    )
    changes = {c.id: c for c in compare_runs(a, b, DATA).changes}
    assert set(changes) == {"arg.block_size", "arg.enable_prefix_caching"}
    assert [d.name for d in changes["arg.enable_prefix_caching"].derived] == ["engine.enable_prefix_caching"]
    assert changes["arg.block_size"].derived == []
