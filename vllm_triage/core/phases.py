"""The ordered phases of a vLLM launch (DESIGN §3)."""

from __future__ import annotations

PHASES = ("container", "config", "cuda_init", "weight_load", "engine_reserve", "request")
NO_FAILURE = "none"
STARTUP_PHASES = PHASES[:-1]


def phase_index(phase: str) -> int:
    return PHASES.index(phase) if phase in PHASES else -1
