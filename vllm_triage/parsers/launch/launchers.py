"""The launcher names of the fingerprint contract: the value of the `launcher` knob says how vLLM
was started. Every name a reader writes is declared here (a test holds the readers to it), and
the groups tell the bundle code which scene a launch implies (a shell, a container, a pod)."""

from __future__ import annotations

VLLM_SERVE = "vllm_serve"
API_SERVER_MODULE = "api_server_module"
DOCKER_RUN = "docker_run"
PODMAN_RUN = "podman_run"
COMPOSE = "compose"
KUBERNETES = "kubernetes"
HELM = "helm"
SUPERVISORD = "supervisord"
RAY_SERVE_LLM = "ray_serve_llm"
SLURM = "slurm"

LAUNCHERS: dict[str, str] = {
    VLLM_SERVE: "`vllm serve MODEL …` (also `python -m vllm.entrypoints.cli.main serve`), through "
    "any wrapper",
    API_SERVER_MODULE: "`python -m vllm.entrypoints.openai.api_server --model MODEL …`",
    DOCKER_RUN: "`docker run … IMAGE [vLLM arguments]` (nvidia-docker too)",
    PODMAN_RUN: "`podman run … IMAGE [vLLM arguments]`",
    COMPOSE: "a docker-compose service (image, entrypoint, command)",
    KUBERNETES: "a Kubernetes container spec (Pod, Deployment, StatefulSet, Job, LeaderWorkerSet …)",
    HELM: "Helm chart values: vLLM's production-stack chart (servingEngineSpec.modelSpec[]) or a generic "
    "chart with extraArgs / args",
    SUPERVISORD: "a supervisord [program:x] whose command= starts vLLM",
    RAY_SERVE_LLM: "a Ray Serve LLM config: Python LLMConfig(...) or serve YAML "
    "applications[].args.llm_configs[]",
    SLURM: "vLLM started on the host by Slurm: an sbatch script (#SBATCH directives) or an `srun … vllm "
    "serve …` / `srun … python -m vllm.entrypoints.openai.api_server …` line",
}

# What Slurm starts directly (a `docker run` in an sbatch script stays docker_run: the container,
# not the scheduler, says where vLLM ran and what to collect).
SLURM_STARTS = (VLLM_SERVE, API_SERVER_MODULE)

# What each launch implies about where vLLM ran (bundle collection and the checklist use these).
SHELL_TYPED = (VLLM_SERVE, API_SERVER_MODULE, DOCKER_RUN, PODMAN_RUN, SUPERVISORD, SLURM)
CONTAINER_RUNTIME = {DOCKER_RUN: "docker", COMPOSE: "docker", PODMAN_RUN: "podman"}
IN_A_POD = (KUBERNETES, HELM)
ON_A_HOST = (VLLM_SERVE, API_SERVER_MODULE, SUPERVISORD, RAY_SERVE_LLM, SLURM)
