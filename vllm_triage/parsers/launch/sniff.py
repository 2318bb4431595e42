"""Whether a text is a vLLM launch command, and in which shape (shell, compose, Kubernetes,
supervisord): cheap tests first, so other parsers' formats and logs are turned away early."""

from __future__ import annotations

import re

from vllm_triage.parsers.base import clean_paste
from vllm_triage.parsers.launch.config_file import looks_like_vllm_config
from vllm_triage.parsers.launch.dockerfile import looks_like as dockerfile_looks_like
from vllm_triage.parsers.launch.kubectl_describe import looks_like_describe
from vllm_triage.parsers.launch.llama_swap import looks_like_llama_swap
from vllm_triage.parsers.launch.ray_serve import PYTHON_LLM_CONFIG, YAML_LLM_CONFIG
from vllm_triage.parsers.launch.sbatch import SBATCH_LINE
from vllm_triage.parsers.launch.session import shell_launches
from vllm_triage.parsers.launch.systemd import looks_like_unit
from vllm_triage.parsers.vllm_flags import names_vllm_flags

# Text that belongs to another parser even when it quotes a launch command. (An nvidia-smi screen
# is not among them: an issue pastes the command and the screen together, and nvidia-smi is sniffed
# first, so a launch found beside it is read as well, never instead of it.)
_OTHER_FORMATS = re.compile(
    r"non-default args:|\bNamespace\(|Collecting environment information"
    r"|^PyTorch version:|^vLLM Version\s*:|^[ \t]*\"(?:Entrypoint|HostConfig|Config)\"\s*:",
    re.M,
)


_LOG_LINE = re.compile(
    r"^(?:.*?\s)?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (?:\d\d-\d\d|\d{4}-\d\d-\d\d) \d\d:\d\d:\d\d"
    r"|^Traceback \(most recent call last\)|^\(\w*(?:APIServer|EngineCore|Worker)\w* pid=\d+\)",
    re.M,
)


_JSON_START = re.compile(r"^\s*(?:\{|\[\s*[{\[\"\d\]])")


_SUPERVISORD = re.compile(r"^[ \t]*\[program:[^\]]+\]", re.M)


_SUPERVISORD_COMMAND = re.compile(r"^[ \t]*command\s*=.*(?:vllm|api_server)", re.M)


_K8S = re.compile(r"^[ \t]*(?:-\s+)?containers:\s*$", re.M)


_K8S_KIND = re.compile(r"^[ \t]*kind:\s*\w+", re.M)


_COMPOSE = re.compile(r"^services:\s*$", re.M)


_YAML_VLLM = re.compile(
    r"^[ \t]*(?:-\s+)?(?:image|command|entrypoint|args):.*(?:vllm|api_server|--model)", re.M | re.I
)


# `entrypoint:` / `command:` as a block list: the program is an item of its own.
_YAML_VLLM_ITEM = re.compile(
    r"^[ \t]*-\s+[\"']?(?:vllm[\"']?\s*$|vllm\.entrypoints\.|python3? -m vllm\.)", re.M
)
_LONE_CONTAINER = re.compile(r"^(?:args|resources|volumeMounts|imagePullPolicy):", re.M)
_YAML_IMAGE = re.compile(r"^[ \t]*(?:-\s+)?image:", re.M)
# Keys of a Kubernetes container that no compose service has, at any indent: a container pasted
# out of its Deployment keeps the indentation it had there. Indentation is [ \t] (not \s, which
# would run across every following blank line from every line start: quadratic on blank lines).
_K8S_CONTAINER_KEYS = re.compile(
    r"^[ \t]*(?:-\s+)?(?:imagePullPolicy|volumeMounts|containerPort|livenessProbe|readinessProbe|startupProbe"
    r"|securityContext):|^([ \t]*)env:[ \t]*\n\1[ \t]*-\s+name:",
    re.M,
)


_ARG_KEY = re.compile(r"^[ \t]*(?:-[ \t]+)?(?:args|command):[ \t]*$", re.M)
_ARG_ITEM = re.compile(r"^[ \t]*-[ \t]+(\S.*)$", re.M)
# A paste of one key: a service's `command:` (compose) or a container's `args:` (Kubernetes) list.
_LONE_ARG_LIST = re.compile(r"(args|command):[ \t]*\n(?:[ \t]*-[ \t]+\S.*(?:\n|$))+\s*$")


_VLLM_WORD = re.compile(r"vllm|api_server", re.I)


_YAML_KEY = re.compile(r"^[ \t]*(?:-[ \t]+)?[\w.-]+:(?:[ \t]|$)", re.M)


# RayLLM's serve config (the predecessor of ray.serve.llm): `engine_config:` with `type: VLLMEngine`.
_RAYLLM_ENGINE = re.compile(r"^[ \t]*(?:-[ \t]+)?engine_config:[ \t]*$", re.M)


_SNIFF_LIMIT = 1_000_000
_PRODUCTION_STACK = re.compile(r"^(?:servingEngineSpec|modelSpec):\s*$|^[ \t]*(?:-\s+)?modelURL:\s*\S", re.M)
_HELM_ARGS = re.compile(r"^[ \t]*(?:extraArgs|args|vllmArgs|serverArgs|extra_args|engineArgs):", re.M)
_HELM_IMAGE = re.compile(r"^[ \t]+repository:\s*\S", re.M)
_HELM_IMAGE_MAP = re.compile(r"^image:[ \t]*(?:#.*)?$", re.M)


def looks_like(text: str) -> str | None:
    """The shape of the vLLM launch in `text` ("shell", "sbatch", "compose", "kubernetes",
    "kubectl_describe", "helm",
    "llama_swap", "ray_serve_llm", "supervisord", "systemd", "dockerfile"), or None when it is no launch
    command (or is another parser's format)."""
    if not text or not text.strip() or "\x00" in text[:4096]:
        return None
    head = text[:_SNIFF_LIMIT].lstrip("\ufeff")
    if _OTHER_FORMATS.search(head) or _JSON_START.match(head.lstrip("\ufeff")):
        return None
    if len(_LOG_LINE.findall(head)) >= 3 or "Traceback (most recent call last)" in head:
        return None  # a log (or a traceback) that quotes its command line is still a log
    # Blockquote markers, fences and colours would hide the YAML/INI structure.
    head = "\n".join(line.text for line in clean_paste(head, keep_prompts=True))
    if looks_like_describe(head):
        return "kubectl_describe"  # before YAML: its `Key:  value` lines read as a mapping
    if _SUPERVISORD.search(head) and _SUPERVISORD_COMMAND.search(head):
        return "supervisord"
    if looks_like_unit(head) and _VLLM_WORD.search(head):
        return "systemd"
    if PYTHON_LLM_CONFIG.search(head) and "model_loading_config" in head:
        return "ray_serve_llm"
    yaml_like = len(_YAML_KEY.findall(head)) >= 2
    if yaml_like and (YAML_LLM_CONFIG.search(head) or "VLLMEngine" in head and _RAYLLM_ENGINE.search(head)):
        return "ray_serve_llm"  # before Kubernetes: a RayService holds pod templates too
    if yaml_like and looks_like_llama_swap(head) and _VLLM_WORD.search(head):
        return "llama_swap"  # before compose: a model entry's cmd is one command line, not a service
    if yaml_like and _PRODUCTION_STACK.search(head):
        return "helm"
    # `command:` as a block list puts `vllm` on a later line than the key, hence the second test.
    vllm_in_yaml = bool(_YAML_VLLM.search(head) or _YAML_VLLM_ITEM.search(head))
    # A patch or a fragment may hold only the argument list (`args:` of a Deployment patch, a
    # service's `command:`), with no image and no program: its vLLM-only options say what it is.
    # Seen as strategic-merge Deployment patches (`containers: - name: vllm  args: [...]`), a KServe
    # ServingRuntime's `args: - '--model=/mnt/models'  # Index 1` quoted in overlay docs, and a
    # compose service's `command:` list pasted alone in an issue.
    lone_list = _LONE_ARG_LIST.match(head.lstrip("\n"))
    if (yaml_like or lone_list) and not vllm_in_yaml and _ARG_KEY.search(head):
        vllm_in_yaml = names_vllm_flags("\n".join(_ARG_ITEM.findall(head)))
    if lone_list and vllm_in_yaml:
        return "compose" if lone_list.group(1) == "command" else "kubernetes"
    if yaml_like and (vllm_in_yaml or (_YAML_IMAGE.search(head) and _VLLM_WORD.search(head))):
        if _K8S.search(head) or (_K8S_KIND.search(head) and "apiVersion" in head):
            return "kubernetes"
        if not _COMPOSE.search(head) and _HELM_ARGS.search(head) and _HELM_IMAGE.search(head):
            return "helm"  # values of a generic chart: an args list next to image.repository
        if _HELM_IMAGE_MAP.search(head) and _HELM_IMAGE.search(head):
            # A top-level `image:` mapping (repository / tag) is a chart's values: a container's
            # image is one string, and a compose service is indented under `services:`.
            return "helm"
        if not _COMPOSE.search(head) and _K8S_CONTAINER_KEYS.search(head):
            return "kubernetes"
        if _COMPOSE.search(head) or re.search(r"^[ \t]+(?:image|command|deploy|environment):", head, re.M):
            return "compose"
        if re.search(r"^image:", head, re.M):  # one container or service body, not indented
            return "kubernetes" if _LONE_CONTAINER.search(head) else "compose"
    if dockerfile_looks_like(head):
        return "dockerfile"
    if shell_launches(head, sniff=True)[0]:
        return "sbatch" if SBATCH_LINE.search(head) else "shell"
    if yaml_like and looks_like_vllm_config(head):
        return "vllm_config"
    return None
