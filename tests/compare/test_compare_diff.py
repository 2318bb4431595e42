"""`diff` on pairs of bundles that differ the way two trials differ in practice."""

from __future__ import annotations

from pathlib import Path

import pytest
from compare_builders import Trial, write_bundle

from vllm_triage.compare.diff import diff_paths

# A run that fails while reserving memory (profile_run OOM), on an idle node.
BASE = Trial(label="base", failure="oom")


def diff(tmp_path: Path, a: Trial, b: Trial) -> dict:
    return diff_paths(str(write_bundle(tmp_path, a)), str(write_bundle(tmp_path, b))).to_json()


def change_ids(result: dict) -> list[str]:
    return [c["id"] for c in result["changes"]]


def test_exactly_one_knob_changed(tmp_path: Path) -> None:
    after = BASE.but(label="smaller-context", args={"max_model_len": 4096, "port": 8000})
    result = diff(tmp_path, BASE, after)
    assert result["schema"] == "vllm-triage.diff/1"
    assert result["verdict"] == "one-variable"
    assert result["exit_code"] == 0
    assert change_ids(result) == ["arg.max_model_len"]
    (change,) = result["changes"]
    assert change["label"] == "--max-model-len"
    assert change["layer"] == "args"
    (knob,) = change["knobs"]
    assert (knob["a"]["value"], knob["b"]["value"]) == (8192, 4096)
    # Provenance: the log's non-default args line, in each run's own bundle.
    assert knob["a"]["source"]["file"].endswith("base/vllm.log")
    assert knob["b"]["source"]["file"].endswith("smaller-context/vllm.log")
    assert knob["a"]["source"]["line"] == 3
    # The engine banner's max_seq_len moved with the argument: derived, not a second change.
    assert [d["name"] for d in change["derived"]] == ["engine.max_seq_len"]
    assert result["drift"] == []


def test_new_image_is_one_change_with_its_derived_facts(tmp_path: Path) -> None:
    upgraded = BASE.but(
        label="new-image",
        image="vllm/vllm-openai:v0.11.0",
        version="0.11.0",
        image_cuda="12.9.1",
        image_id="sha256:" + "b2" * 32,
    )
    result = diff(tmp_path, BASE, upgraded)
    assert result["verdict"] == "one-variable"
    assert change_ids(result) == ["image"]
    (change,) = result["changes"]
    assert {k["name"] for k in change["knobs"]} == {"image.ref", "image.id"}
    derived = {d["name"] for d in change["derived"]}
    # vLLM, the CUDA build and what the image's environment says all moved with the image.
    assert {
        "vllm.version",
        "cuda.build",
        "image.cuda_version",
        "image.vllm_version",
        "env.CUDA_VERSION",
    } <= derived
    assert len(derived) >= 5
    assert result["drift"] == []


def test_driver_and_image_together_are_confounded_with_a_retest_order(tmp_path: Path) -> None:
    both = BASE.but(
        label="both",
        driver="580.65.06",
        smi_cuda="13.0",
        image="vllm/vllm-openai:v0.11.0",
        version="0.11.0",
        image_cuda="12.9.1",
        image_id="sha256:" + "c3" * 32,
    )
    result = diff(tmp_path, BASE, both)
    assert result["verdict"] == "confounded"
    assert result["exit_code"] == 3
    assert result["variables"] == 2
    assert change_ids(result) == ["driver", "image"]
    driver = result["changes"][0]
    assert [d["name"] for d in driver["derived"]] == ["host.cuda_version"]  # moved with the driver
    order = [(s["step"], s["change"], s["layer"]) for s in result["retest_order"]]
    assert order == [(1, "driver", "host"), (2, "image", "image")]


def test_only_noise_changed_is_identical(tmp_path: Path) -> None:
    again = BASE.but(
        label="again",
        started="2026-03-02T08:00:00Z",
        container_id="d00d" * 16,
        container_name="vllm-trial-2",
        args={"max_model_len": 8192, "port": 8001},
        pid=4711,
    )
    result = diff(tmp_path, BASE, again)
    assert result["verdict"] == "identical"
    assert result["exit_code"] == 0
    assert result["changes"] == [] and result["drift"] == []
    noise = {n["name"]: n["rule"] for n in result["noise"]}
    assert noise["container.id"] == "container-ids"
    assert noise["arg.port"] == "ports"
    assert noise["run.start"] == "timestamps"
    assert noise["run.label"] == "labels"
    # Same failure: a pid in the message does not make it another one.
    assert result["failure"]["conclusion"] == "same-failure"


def test_explicit_default_argument_is_not_a_change(tmp_path: Path) -> None:
    explicit = BASE.but(
        label="explicit", args={"max_model_len": 8192, "port": 8000, "gpu_memory_utilization": 0.9}
    )
    result = diff(tmp_path, BASE, explicit)
    assert result["verdict"] == "identical"
    assert [(d["name"], d["side"]) for d in result["defaults"]] == [("arg.gpu_memory_utilization", "b")]


def test_drift_with_no_knob(tmp_path: Path) -> None:
    shared = BASE.but(label="shared", used_mib=(40213, 1), processes=((0, 91234, 40206),))
    result = diff(tmp_path, BASE, shared)
    assert result["changes"] == []
    assert [d["id"] for d in result["drift"]] == ["gpu-occupancy"]
    drifted = {v["name"] for v in result["drift"][0]["values"]}
    assert drifted == {"host.gpu_memory_used_mib", "host.gpu_processes"}
    assert result["verdict"] == "one-variable"  # the drift is the one thing that moved
    assert "isolated node" in result["drift"][0]["advice"]


def test_inherited_nccl_variable_is_drift_not_a_knob(tmp_path: Path) -> None:
    cluster = BASE.but(label="cluster", inherited={"NCCL_P2P_DISABLE": "1", "NCCL_IB_HCA": "mlx5_0"})
    rental = BASE.but(label="rental", inherited={"NCCL_P2P_DISABLE": "0", "NCCL_IB_HCA": "mlx5_0"})
    result = diff(tmp_path, cluster, rental)
    assert result["changes"] == []
    (drift,) = result["drift"]
    assert drift["id"] == "nccl-inherited"
    assert [v["name"] for v in drift["values"]] == ["env.NCCL_P2P_DISABLE"]


def test_same_failure_in_the_same_phase_across_two_nodes(tmp_path: Path) -> None:
    cluster = BASE.but(label="shared-cluster", node="cluster-n17", pid=157, oom_bytes="2.31 GiB")
    rental = BASE.but(
        label="rental-node", node="rental-01", pid=98, oom_bytes="2.45 GiB", container_id="beef" * 16
    )
    result = diff(tmp_path, cluster, rental)
    assert change_ids(result) == ["node"]
    assert result["verdict"] == "one-variable"
    failure = result["failure"]
    assert failure["conclusion"] == "same-failure"
    assert failure["similarity"] >= 0.85
    assert result["a"]["outcome"]["signature"] == result["b"]["outcome"]["signature"]
    assert "reproduction is usable" in failure["advice"]


def test_failure_that_moved_phase(tmp_path: Path) -> None:
    moved = BASE.but(label="moved", failure="driver")
    result = diff(tmp_path, BASE, moved)
    assert result["a"]["outcome"]["phase"] == "engine_reserve"
    assert result["b"]["outcome"]["phase"] == "cuda_init"
    assert result["failure"]["conclusion"] == "moved-phase"
    assert "fails earlier" in result["failure"]["message"]
    assert "last level that was stable" in result["failure"]["advice"]


def test_base_that_no_longer_fails_names_the_removed_parameter(tmp_path: Path) -> None:
    production = Trial(
        label="production",
        failure="illegal",
        prefix_caching=True,
        requests=3,
        args={"max_model_len": 8192, "port": 8000, "enable_prefix_caching": True},
    )
    stripped = production.but(
        label="stripped",
        failure=None,
        prefix_caching=False,
        args={"max_model_len": 8192, "port": 8000, "enable_prefix_caching": False},
    )
    result = diff(tmp_path, production, stripped)
    assert result["a"]["outcome"]["phase"] == "request"
    assert result["failure"]["conclusion"] == "no-longer-fails"
    assert change_ids(result) == ["arg.enable_prefix_caching"]
    advice = result["failure"]["advice"]
    assert "instead of declaring it fixed" in advice
    assert "--enable-prefix-caching" in advice and "reintroduce separately" in advice


def test_node_change_without_host_capture_is_flagged(tmp_path: Path) -> None:
    elsewhere = BASE.but(label="elsewhere", node="rental-02", host_smi=False)
    result = diff(tmp_path, BASE, elsewhere)
    assert change_ids(result) == ["node"]
    assert [d["id"] for d in result["drift"]] == ["node-undocumented"]
    assert result["verdict"] == "confounded"


@pytest.mark.parametrize("same_node", [True, False])
def test_hostname_is_noise_only_on_the_same_node(tmp_path: Path, same_node: bool) -> None:
    a = BASE.but(label="a", env={"HOSTNAME": "worker-1"})
    b = BASE.but(label="b", env={"HOSTNAME": "worker-2"}, node=a.node if same_node else "other-node")
    result = diff(tmp_path, a, b)
    noise = {n["name"] for n in result["noise"]}
    if same_node:
        assert "env.HOSTNAME" in noise and result["verdict"] == "identical"
    else:
        assert "env.HOSTNAME" not in noise
        node = next(c for c in result["changes"] if c["id"] == "node")
        assert "env.HOSTNAME" in {d["name"] for d in node["derived"]}
