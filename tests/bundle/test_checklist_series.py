"""The checklist across trials: one variable per step, a rollback point after each trial, prefix
caching in its own step, context and concurrency after a single request passed, one node or a
documented one — judged on series of bundles written for each case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from checklist_bundles import Bundle, write_bundle

from vllm_triage.bundle.check.checklist import check_paths

BASE = Bundle(label="t1", started="2026-04-01T09:00:00Z")


def check_series(root: Path, *trials: Bundle) -> dict[str, Any]:
    folders = [str(write_bundle(root, t, f"trial-{i}")) for i, t in enumerate(trials, 1)]
    return check_paths(folders).to_json()


def item(result: dict[str, Any], item_id: str) -> dict[str, Any]:
    return next(i for i in result["items"] if i["id"] == item_id)


def nth(n: int, **changes: Any) -> Bundle:
    return BASE.but(label=f"t{n}", started=f"2026-04-0{n}T09:00:00Z", **changes)


def test_one_variable_per_step_passes(tmp_path: Path) -> None:
    result = check_series(tmp_path, BASE, nth(2, max_model_len=16384))
    found = item(result, "one-variable")
    assert found["status"] == "pass", found
    assert "--max-model-len" in found["message"]


def test_two_variables_in_one_step_fail(tmp_path: Path) -> None:
    result = check_series(tmp_path, BASE, nth(2, max_model_len=16384, gpu_memory_utilization=0.95))
    found = item(result, "one-variable")
    assert found["status"] == "fail"
    assert "T1→T2" in found["message"] and "--max-model-len" in found["message"]
    assert "--gpu-memory-utilization" in found["message"]
    assert found["evidence"] and found["collect"][0]["place"] == "method"


def test_rollback_point_is_the_last_trial_that_passed(tmp_path: Path) -> None:
    result = check_series(tmp_path, BASE, nth(2, failure="oom", request=None))
    found = item(result, "rollback-point")
    assert found["status"] == "pass" and "t1" in found["message"]


def test_no_rollback_point_when_nothing_passed(tmp_path: Path) -> None:
    result = check_series(
        tmp_path,
        BASE.but(failure="oom", request=None),
        nth(2, failure="oom", request=None, max_model_len=4096),
    )
    found = item(result, "rollback-point")
    assert found["status"] == "missing" and "T1 (t1), T2 (t2)" in found["message"]
    assert any("rollback =" in c["command"] for c in found["collect"])


def test_rollback_point_named_in_the_manifest(tmp_path: Path) -> None:
    result = check_series(
        tmp_path,
        BASE.but(failure="oom", request=None, rollback="last week's image"),
        nth(2, failure="oom", request=None, max_model_len=4096, rollback="last week's image"),
    )
    found = item(result, "rollback-point")
    assert found["status"] == "pass" and found["evidence"][0]["file"].endswith("bundle.toml")


def test_prefix_caching_alone_after_a_passing_base(tmp_path: Path) -> None:
    result = check_series(tmp_path, BASE, nth(2, prefix_caching=True))
    found = item(result, "prefix-caching-step")
    assert found["status"] == "pass" and "alone at T2" in found["message"]


def test_prefix_caching_together_with_another_change(tmp_path: Path) -> None:
    result = check_series(tmp_path, BASE, nth(2, prefix_caching=True, max_model_len=16384))
    found = item(result, "prefix-caching-step")
    assert found["status"] == "fail" and "together with" in found["message"]


def test_prefix_caching_after_a_base_that_failed(tmp_path: Path) -> None:
    result = check_series(
        tmp_path, BASE.but(failure="illegal"), nth(2, prefix_caching=True, failure="illegal")
    )
    found = item(result, "prefix-caching-step")
    assert found["status"] == "fail" and "had not passed" in found["message"]


def test_prefix_caching_from_the_first_trial(tmp_path: Path) -> None:
    result = check_series(
        tmp_path, BASE.but(prefix_caching=True), nth(2, prefix_caching=True, max_model_len=16384)
    )
    found = item(result, "prefix-caching-step")
    assert found["status"] == "fail" and "from the first trial" in found["message"]


def test_context_raised_after_the_single_request_passed(tmp_path: Path) -> None:
    result = check_series(tmp_path, BASE, nth(2, max_model_len=65536))
    found = item(result, "context-concurrency-order")
    assert found["status"] == "pass" and "t1" in found["message"]


def test_concurrency_before_any_trial_passed(tmp_path: Path) -> None:
    result = check_series(tmp_path, BASE.but(concurrency=8, failure="illegal"), nth(2, concurrency=8))
    found = item(result, "context-concurrency-order")
    assert found["status"] == "fail" and "T1 (t1) raised concurrency" in found["message"]


def test_same_node(tmp_path: Path) -> None:
    result = check_series(tmp_path, BASE, nth(2, max_model_len=16384))
    found = item(result, "same-node")
    assert found["status"] == "pass" and "every trial ran on node gpu-node-7" in found["message"]


def test_another_node_documented(tmp_path: Path) -> None:
    result = check_series(tmp_path, BASE, nth(2, node="rental-3"))
    found = item(result, "same-node")
    assert found["status"] == "pass" and "each host captured" in found["message"]


def test_another_node_undocumented(tmp_path: Path) -> None:
    result = check_series(tmp_path, BASE, nth(2, node="rental-3", smi_host=False, topo=False))
    found = item(result, "same-node")
    assert found["status"] == "fail" and "t2" in found["message"]


def test_scene_items_are_judged_per_trial(tmp_path: Path) -> None:
    result = check_series(tmp_path, BASE, nth(2, image_digest=False, max_model_len=16384))
    found = item(result, "image-digest")
    assert found["status"] == "fail"
    assert [(t["trial"], t["status"]) for t in found["trials"]] == [("t1", "pass"), ("t2", "fail")]


def test_series_folder_is_ordered_by_start(tmp_path: Path) -> None:
    """One folder holding a folder per trial: ordered by the start time bundle.toml records."""
    series = tmp_path / "series"
    write_bundle(series, nth(2, max_model_len=16384), "a-second")
    write_bundle(series, BASE, "b-first")
    result = check_paths([str(series)]).to_json()
    assert [t["label"] for t in result["trials"]] == ["t1", "t2"]
    assert item(result, "one-variable")["status"] == "pass"


@pytest.mark.parametrize("order", [("t1", "t2")])
def test_series_json_lists_trials(tmp_path: Path, order: tuple[str, str]) -> None:
    result = check_series(tmp_path, BASE, nth(2, max_model_len=16384))
    assert tuple(t["label"] for t in result["trials"]) == order
    assert result["schema"] == "vllm-triage.check/1"
