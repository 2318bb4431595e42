"""Files for other tools, shipped in the package: an lnav format for vLLM logs
(`vllm-triage lnav-format > ~/.lnav/formats/installed/vllm_log.json`)."""

from __future__ import annotations

from pathlib import Path

LNAV_FORMAT = Path(__file__).resolve().parent / "vllm_log.lnav.json"
