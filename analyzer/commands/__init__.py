"""Commands that live in their own module: each module defines `command` (a click.Command or
Group) and keeps its heavy imports inside the function body so `vllm-triage --help` stays fast.
cli.py registers every module listed here."""

COMMAND_MODULES = (
    "analyzer.commands.diff",
    "analyzer.commands.series",
    "analyzer.commands.check",
    "analyzer.commands.collect",
    "analyzer.commands.redact",
    "analyzer.commands.report",
    "analyzer.commands.scan",
    "analyzer.commands.fleet",
)
