"""Commands that live in their own module: each module defines `command` (a click.Command or
Group) and keeps its heavy imports inside the function body so `vllm-triage --help` stays fast.
cli.py registers every module listed here."""

COMMAND_MODULES = (
    "vllm_triage.commands.diff",
    "vllm_triage.commands.series",
    "vllm_triage.commands.check",
    "vllm_triage.commands.collect",
    "vllm_triage.commands.redact",
    "vllm_triage.commands.report",
    "vllm_triage.commands.scan",
    "vllm_triage.commands.fleet",
    "vllm_triage.commands.schema",
    "vllm_triage.commands.lnav_format",
)
