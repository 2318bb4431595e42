"""What a file of a bundle is. The values are the strings of `bundle.toml` (`role = "nvidia_smi"`)
and of every JSON payload, so a Role compares and serialises as its plain string."""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    VLLM_LOG = "vllm_log"
    NVIDIA_SMI = "nvidia_smi"
    CONTAINER_INSPECT = "container_inspect"
    LAUNCH_COMMAND = "launch_command"
    ENVIRONMENT = "environment"
    COLLECT_ENV = "collect_env"
    REQUEST = "request"
    MANIFEST = "manifest"
    UNKNOWN = "unknown"
