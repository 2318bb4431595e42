"""Every built-in parser module: importing this registers them all (see parsers/registry.py).
A new format is one module with its `@parser(...)` and one line here."""

from vllm_triage.parsers import (  # noqa: F401
    collect_env,
    container_inspect,
    env_file,
    launch,
    nvidia_smi,
    request,
    vllm_log_config,
)
