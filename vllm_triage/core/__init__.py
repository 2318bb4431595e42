"""The bottom layer: the ideas every other layer shares, written once.

`Finding` (what any layer reports), `ExitCode` (carried by the exceptions), `Role` (what a file of a
bundle is), provenance, the launch phases and the strict TOML table reader. Nothing here imports
anything of vllm_triage outside core (the import contract in .importlinter checks it).
"""
