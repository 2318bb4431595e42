"""`series` on trials written as bundles: repeats, the reintroduction order, prefix-cache signal."""

from __future__ import annotations

from pathlib import Path

from compare_builders import Trial, vllm_log, write_bundle

from vllm_triage.compare.series import series_paths

# The minimal start: no prefix caching, one request, served.
BASE = Trial(
    label="t1",
    requests=1,
    running=(1,),
    prefix_caching=False,
    args={"max_model_len": 8192, "port": 8000, "enable_prefix_caching": False},
)


def series(tmp_path: Path, *trials: Trial) -> dict:
    return series_paths([str(write_bundle(tmp_path, t)) for t in trials]).to_json()


def test_stable_repeated_trials(tmp_path: Path) -> None:
    # Same knobs, the same OOM three times (pids and sizes differ: masked in the signature).
    trials = [
        Trial(
            label=f"r{i}",
            failure="oom",
            pid=100 + i,
            oom_bytes=f"2.{i}1 GiB",
            started=f"2026-03-01T1{i}:00:00Z",
            container_id=f"{i}" * 64,
        )
        for i in range(1, 4)
    ]
    result = series(tmp_path, *trials)
    assert result["schema"] == "vllm-triage.series/1"
    (repeat,) = result["repeats"]
    assert repeat["trials"] == [1, 2, 3]
    assert repeat["verdict"] == "stable"
    assert repeat["phases"] == ["engine_reserve"] * 3
    assert len(set(repeat["signatures"])) == 1
    assert all(step["verdict"] == "identical" for step in result["steps"])
    assert result["exit_code"] == 0


def test_intermittent_repeated_trials_point_at_occupancy_and_an_isolated_node(tmp_path: Path) -> None:
    ok = BASE.but(label="r1")
    busy = BASE.but(label="r2", failure="oom", used_mib=(52011, 1), processes=((0, 7321, 52004),))
    ok_again = BASE.but(label="r3")
    result = series(tmp_path, ok, busy, ok_again)
    (repeat,) = result["repeats"]
    assert repeat["trials"] == [1, 2, 3]
    assert repeat["verdict"] == "intermittent"
    assert "GPU occupancy" in repeat["advice"] and "isolated node" in repeat["advice"]
    assert "inherited" in repeat["advice"] and "mounts" in repeat["advice"] and "runtime" in repeat["advice"]
    # What differed between the repeats is named: the GPU that was already in use.
    assert [d["id"] for d in repeat["drift"]] == ["gpu-occupancy"]


def test_prefix_caching_enabled_with_no_hit_rate_signal(tmp_path: Path) -> None:
    alone = BASE.but(
        label="t2",
        prefix_caching=True,
        hit_rates=(0.0,),
        args={"max_model_len": 8192, "port": 8000, "enable_prefix_caching": True},
    )
    shared = alone.but(label="t3", requests=2, running=(1, 1, 0), hit_rates=(0.0, 0.0, 0.0))
    result = series(tmp_path, BASE, alone, shared)
    signals = {s["trial"]: s for s in result["prefix_cache"]}
    assert set(signals) == {2, 3}
    signal = signals[3]
    assert signal["signal"] == "no-hits"
    assert "3 stats line(s)" in signal["message"]
    assert "hit rate at most 0.0%" in signal["message"]
    assert signal["evidence"]["file"].endswith("t3/vllm.log")
    assert "share a prefix" in signal["advice"]
    assert result["trials"][2]["signals"]["prefix_cache"]["hits_seen"] is False
    assert "cache_hits" not in result["trials"][2]["stages"]
    # Prefix caching alone, then two requests: the order was kept.
    assert [s["verdict"] for s in result["steps"]] == ["one-variable", "identical"]
    assert result["order"]["breaks"] == []


def test_prefix_caching_and_two_requests_in_one_step_break_the_order(tmp_path: Path) -> None:
    both = BASE.but(
        label="t2",
        prefix_caching=True,
        requests=2,
        running=(1, 1),
        hit_rates=(0.0, 0.0),
        args={"max_model_len": 8192, "port": 8000, "enable_prefix_caching": True},
    )
    result = series(tmp_path, BASE, both)
    (broken,) = result["order"]["breaks"]
    assert (broken["trial"], broken["stage"], broken["missing"]) == (2, "shared_prefix", ["prefix_caching"])


def test_prefix_cache_hits_seen(tmp_path: Path) -> None:
    caching = BASE.but(
        label="t2",
        prefix_caching=True,
        requests=2,
        running=(1, 1),
        hit_rates=(0.0, 48.4),
        args={"max_model_len": 8192, "port": 8000, "enable_prefix_caching": True},
    )
    result = series(tmp_path, BASE, caching)
    (signal,) = result["prefix_cache"]
    assert signal["signal"] == "hits"
    assert signal["evidence"]["line"] is not None
    assert set(result["trials"][1]["stages"]) == {"base", "prefix_caching", "shared_prefix", "cache_hits"}


def test_concurrency_raised_before_the_single_request_passed(tmp_path: Path) -> None:
    single_fails = BASE.but(label="t1", failure="illegal")
    concurrent = single_fails.but(label="t2", concurrency=8, requests=8, running=(8, 8))
    result = series(tmp_path, single_fails, concurrent)
    assert result["trials"][0]["passed"] is False
    (broken,) = result["order"]["breaks"]
    assert broken["trial"] == 2
    assert broken["stage"] == "concurrency"
    assert broken["missing"][0] == "base"
    assert "before minimal start, one request, no prefix caching had passed" in broken["message"]
    assert result["steps"][0]["changes"][0]["id"] == "concurrency"


def test_order_kept_when_each_stage_passed_first(tmp_path: Path) -> None:
    concurrent = BASE.but(label="t2", concurrency=8, requests=8, running=(8, 6))
    result = series(tmp_path, BASE, concurrent)
    assert result["trials"][0]["passed"] is True
    assert result["order"]["breaks"] == []


def test_steps_that_changed_more_than_one_knob_are_listed(tmp_path: Path) -> None:
    t2 = BASE.but(label="t2", args={"max_model_len": 4096, "port": 8000, "enable_prefix_caching": False})
    t3 = t2.but(
        label="t3",
        image="vllm/vllm-openai:v0.11.0",
        version="0.11.0",
        image_id="sha256:" + "e5" * 32,
        driver="580.65.06",
        smi_cuda="13.0",
    )
    result = series(tmp_path, BASE, t2, t3)
    assert result["confounded_steps"] == [3]
    assert [c["id"] for c in result["steps"][1]["changes"]] == ["driver", "image"]
    assert result["exit_code"] == 3


def test_one_folder_of_trials_is_ordered_by_recorded_start(tmp_path: Path) -> None:
    root = tmp_path / "series"
    # Folder names sort the other way round from the start times.
    write_bundle(root, BASE.but(label="c-first", started="2026-03-01T08:00:00Z"))
    write_bundle(
        root,
        BASE.but(
            label="b-second",
            started="2026-03-01T09:30:00Z",
            args={"max_model_len": 4096, "port": 8000, "enable_prefix_caching": False},
        ),
    )
    write_bundle(root, BASE.but(label="a-third", started="2026-03-01T11:00:00+00:00", failure="oom"))
    result = series_paths([str(root)]).to_json()
    assert result["ordered_by"] == "started"
    assert [t["label"] for t in result["trials"]] == ["c-first", "b-second", "a-third"]


def test_fragments_that_record_nothing_in_common_are_not_repeats(tmp_path: Path) -> None:
    # Two pasted fragments: no version, arguments or banner lines, only the failure.
    paths = []
    for name, trial in (("one.log", Trial(failure="oom")), ("two.log", Trial(failure="driver"))):
        lines = [
            line
            for line in vllm_log(trial).splitlines()
            if not any(
                k in line for k in ("non-default args", "Initializing a V1", "version", "max model len")
            )
        ]
        (tmp_path / name).write_text("\n".join(lines) + "\n")
        paths.append(str(tmp_path / name))
    result = series_paths(paths).to_json()
    assert result["repeats"] == []
    assert result["uncomparable_steps"] == [2]
