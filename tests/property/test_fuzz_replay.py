"""The fuzz campaign re-runs an input alone before it calls a wall-clock watchdog kill a hang."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import fuzz  # noqa: E402


def test_an_input_that_ends_when_run_alone_is_fine() -> None:
    # Input 0 of nvidia_smi is a well-formed screen: it parses in milliseconds.
    assert fuzz._replay_alone("nvidia_smi", {"seed": 13, "timeout": 5.0}, 0) == "fine"


def test_a_replay_the_cpu_limit_stops_is_a_hang() -> None:
    # A CPU budget of 0 s: the kernel stops the replay at once, as it would a spinning input.
    assert fuzz._replay_alone("nvidia_smi", {"seed": 13, "timeout": -2.5}, 0) == "hang"


def test_a_parser_that_lets_a_warning_out_fails_like_a_crash(tmp_path: Path) -> None:
    import warnings

    import fuzz_worker

    def noisy(_data: bytes) -> None:
        warnings.warn("invalid decimal literal", SyntaxWarning, stacklevel=1)

    def quiet(_data: bytes) -> None:
        return None

    for run, expected in ((noisy, 1), (quiet, 0)):
        delta = fuzz_worker.new_delta()
        fuzz_worker._one(run, "vllm_log", 13, 7, b"x", 5.0, str(tmp_path), delta)
        assert len(delta["crashes"]) == expected
        assert delta["inputs"] == 1
