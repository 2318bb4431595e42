"""Slurm batch scripts: the `#SBATCH` directives say what the job was given (GPUs per node,
nodes, partition, exported environment); the script body is a shell session whose last vLLM
launch (often under `srun`) is the one read.

    #!/bin/bash
    #SBATCH --job-name=vllm-70b
    #SBATCH --nodes=1
    #SBATCH --gres=gpu:a100:4
    export HF_HOME=/scratch/hf
    srun vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4

gives `launcher=slurm` (the entrypoint, `vllm serve`, is a note), `slurm.gres=gpu:a100:4`,
`slurm.nodes=1`, `container.gpus=4` (GPUs per node), `env.HF_HOME`, and the vLLM arguments.
"""

from __future__ import annotations

import re

from vllm_triage.parsers.base import ParseResult
from vllm_triage.parsers.launch.launchers import SLURM, SLURM_STARTS
from vllm_triage.parsers.launch.model import KIND_PREFIX
from vllm_triage.parsers.launch.session import parse_shell

SBATCH_LINE = re.compile(r"^[ \t]*#SBATCH[ \t]+(.*)$", re.M)
_DIRECTIVE = re.compile(r"^(--?[A-Za-z][\w-]*)(?:[= ][ \t]*(\S+))?")
# Short forms of the directives read here (sbatch(1)).
_SHORT = {"-N": "--nodes", "-G": "--gpus", "-p": "--partition", "-J": "--job-name", "-t": "--time"}
_KNOBS = {
    "--gres": "slurm.gres",
    "--nodes": "slurm.nodes",
    "--gpus": "slurm.gpus",
    "--gpus-per-node": "slurm.gpus_per_node",
    "--gpus-per-task": "slurm.gpus_per_task",
    "--ntasks-per-node": "slurm.ntasks_per_node",
    "--partition": "slurm.partition",
    "--job-name": "slurm.job_name",
    "--time": "slurm.time",
}
_GPU_GRES = re.compile(r"(?:^|,)gpu(?::[\w.-]+)*?:(\d+)(?:\(|,|$)")
_GPU_COUNT = re.compile(r"^(?:[\w.-]+:)?(\d+)$")


def parse_sbatch(text: str, file: str) -> ParseResult:
    result = parse_shell(text, file)  # the #SBATCH lines are comments to the shell
    result.kind = f"{KIND_PREFIX}.sbatch"
    directives = _directives(text)
    for option, (value, line) in directives.items():
        if option in _KNOBS:
            result.knob(_KNOBS[option], value, file, line)
        elif option == "--export":
            _exports(result, value, file, line)
    gpus = _gpus_per_node(directives)
    if gpus is not None and "container.gpus" not in result.knobs:
        count, line, how = gpus
        result.knob("container.gpus", count, file, line, f"GPUs per node given to the job ({how})")
    launcher = result.knobs.get("launcher")
    if launcher is not None:
        result.notes.insert(0, "run as a Slurm batch job (#SBATCH directives)")
        if launcher.value in SLURM_STARTS:
            # the batch script, not a login shell, started vLLM (srun or not)
            result.knob("launcher", SLURM, file, launcher.source.line)
            result.notes.append(f"the job script starts vLLM as {launcher.value}")
    return result


def _directives(text: str) -> dict[str, tuple[str, int]]:
    """{long option: (value, line)}; a later directive wins, as sbatch reads them in order."""
    found: dict[str, tuple[str, int]] = {}
    for match in SBATCH_LINE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        body = match.group(1).split(" #", 1)[0].strip()
        directive = _DIRECTIVE.match(body)
        if directive is None:
            continue
        option = _SHORT.get(directive.group(1), directive.group(1))
        found[option] = ((directive.group(2) or "true").strip("\"'"), line)
    return found


def _gpus_per_node(directives: dict[str, tuple[str, int]]) -> tuple[str, int, str] | None:
    if "--gpus-per-node" in directives:
        value, line = directives["--gpus-per-node"]
        count = _GPU_COUNT.match(value)
        if count:
            return count.group(1), line, f"--gpus-per-node={value}"
    if "--gres" in directives:
        value, line = directives["--gres"]
        count = _GPU_GRES.search(value)
        if count:
            return count.group(1), line, f"--gres={value}"
    if "--gpus" in directives and directives.get("--nodes", ("1", 0))[0] == "1":
        value, line = directives["--gpus"]
        count = _GPU_COUNT.match(value)
        if count:
            return count.group(1), line, f"--gpus={value} on one node"
    return None


def _exports(result: ParseResult, value: str, file: str, line: int) -> None:
    """`--export=ALL,HF_HOME=/x,VLLM_LOGGING_LEVEL=DEBUG`: the job's environment additions."""
    for item in value.split(","):
        name, eq, setting = item.partition("=")
        if eq and re.fullmatch(r"[A-Za-z_]\w*", name) and f"env.{name}" not in result.knobs:
            result.knob(f"env.{name}", setting, file, line, "from #SBATCH --export")
