"""The launch command of a vLLM server, in every shape people paste it.

Shapes: `vllm serve MODEL …`, `python -m vllm.entrypoints.openai.api_server --model MODEL …`
(also under `uv run`, `conda run`, `nohup`, env prefixes), `docker run` / `podman run` (docker
options, the image, then vLLM arguments read against the image's entrypoint), docker-compose
service blocks, Kubernetes container specs, llama-swap model entries (`cmd:`), supervisord
`[program:x]` sections and systemd units (`ExecStart=`).

Sample (a paste as it arrives; prompts, continuations and comments are debris to read through):

    $ export NCCL_DEBUG=INFO
    $ docker run --gpus '"device=0,1"' --ipc=host -e HF_TOKEN \\
        vllm/vllm-openai:v0.8.5 --model Qwen/Qwen2.5-7B-Instruct -tp 2 \\
    #   --enforce-eager \\
        --max_model_len=8192

gives `launcher=docker_run`, `image.ref=vllm/vllm-openai:v0.8.5`, `container.gpus=device=0,1`,
`arg.model`, `arg.tensor_parallel_size=2`, `arg.max_model_len=8192` (no `enforce_eager`: that
line is commented out), each with the line it was written on.

Values are strings as written after shell unquoting; a bare boolean flag is "true", `--no-X` is
"false"; JSON-valued flags keep their JSON text. The parser never raises: what it cannot read
becomes a note, and what vLLM itself would reject (an unknown flag) becomes a problem.
"""

from __future__ import annotations

from vllm_triage.core.finding import Finding
from vllm_triage.core.provenance import Provenance
from vllm_triage.core.roles import Role
from vllm_triage.parsers.base import ParseResult
from vllm_triage.parsers.launch.compose import parse_compose
from vllm_triage.parsers.launch.config_file import parse_vllm_config
from vllm_triage.parsers.launch.dockerfile import parse_dockerfile
from vllm_triage.parsers.launch.helm import parse_helm
from vllm_triage.parsers.launch.kubectl_describe import parse_kubectl_describe
from vllm_triage.parsers.launch.kubernetes import parse_kubernetes
from vllm_triage.parsers.launch.llama_swap import parse_llama_swap
from vllm_triage.parsers.launch.model import KIND_PREFIX
from vllm_triage.parsers.launch.ray_serve import parse_ray_serve
from vllm_triage.parsers.launch.sbatch import parse_sbatch
from vllm_triage.parsers.launch.session import parse_shell
from vllm_triage.parsers.launch.sniff import looks_like
from vllm_triage.parsers.launch.supervisord import parse_supervisord
from vllm_triage.parsers.launch.systemd import parse_systemd
from vllm_triage.parsers.registry import parser
from vllm_triage.parsers.safe_yaml import YamlRefused


# Sniffed after inspect: a launch script that ends with a health-check curl is a launch command.
@parser(Role.LAUNCH_COMMAND, looks_like=looks_like, sniff=40)
def parse(text: str, file: str) -> ParseResult:
    """Read the launch command(s) in `text`; never raises on odd input."""
    shape = None
    try:
        text = text.lstrip("\ufeff")  # a BOM from a Windows editor is no part of the first word
        shape = looks_like(text)
        if shape is None:
            result = ParseResult(kind=f"{KIND_PREFIX}.unknown")
            result.notes.append(
                "no vLLM launch command recognised (vllm serve, api_server, docker/podman run, sbatch, "
                "compose, Kubernetes, Helm values, Ray Serve LLM, llama-swap, supervisord or a systemd unit)"
            )
            return result
        reader = {
            "shell": parse_shell,
            "compose": parse_compose,
            "kubernetes": parse_kubernetes,
            "kubectl_describe": parse_kubectl_describe,
            "supervisord": parse_supervisord,
            "systemd": parse_systemd,
            "sbatch": parse_sbatch,
            "helm": parse_helm,
            "ray_serve_llm": parse_ray_serve,
            "dockerfile": parse_dockerfile,
            "llama_swap": parse_llama_swap,
            "vllm_config": parse_vllm_config,
        }[shape]
        result = reader(text, file)
        if "launcher" not in result.knobs and shape in ("compose", "kubernetes"):
            # A fragment (a bare container list, one service body) can read as either.
            other = parse_kubernetes(text, file) if shape == "compose" else parse_compose(text, file)
            if "launcher" in other.knobs:
                return other
        if "launcher" not in result.knobs and shape != "shell":
            # YAML-looking prose around a shell command (a README, an issue): try the shell.
            fallback = parse_shell(text, file)
            if "launcher" in fallback.knobs:
                return fallback
        return result
    except YamlRefused as exc:
        # Not read at all (billion laughs, an oversized file): say so as a problem, and do not
        # fall back to reading the same text as a shell paste.
        result = ParseResult(kind=f"{KIND_PREFIX}.{shape or 'unknown'}")
        result.problems.append(Finding("yaml-refused", "warning", str(exc), [Provenance(file, None)]))
        return result
    except Exception as exc:  # a parser must never take the run down; say what happened instead
        result = ParseResult(kind=f"{KIND_PREFIX}.{shape or 'unknown'}")
        result.notes.append(f"launch command could not be read ({type(exc).__name__}: {exc})")
        return result
