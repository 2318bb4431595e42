"""Helm chart values that deploy vLLM, read as the chart turns them into a container.

vLLM's production-stack chart (`vllm-project/production-stack`, helm/values.yaml): every entry of
`servingEngineSpec.modelSpec[]` is one Deployment whose container runs
`vllm serve <modelURL> …` in `<repository>:<tag>`; the template adds a flag for each of a fixed
set of `vllmConfig` keys (`maxModelLen` → `--max-model-len`, `tensorParallelSize`,
`gpuMemoryUtilization`, `maxNumSeqs`, `dtype`, `maxLoras`, `enableChunkedPrefill`,
`enablePrefixCaching` — written as `--no-enable-prefix-caching` whenever `vllmConfig` is given
without it), then `vllmConfig.extraArgs` verbatim; `requestGPU` is the pod's GPU request and
`env` the container's env list. An entry with `enabled: false` is not deployed.

A generic chart keeps the vLLM arguments in a list (`extraArgs:`, `args:`, `vllmArgs:` …) next to
the model name and `image.repository` / `image.tag`, with GPUs under `resources.limits`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from vllm_triage.parsers.base import ParseResult
from vllm_triage.parsers.launch.docker import set_image
from vllm_triage.parsers.launch.kubernetes import k8s_env
from vllm_triage.parsers.launch.launchers import HELM
from vllm_triage.parsers.launch.lexer import Token, tokenize_string
from vllm_triage.parsers.launch.model import KIND_PREFIX, Context, Launch, Value, emit
from vllm_triage.parsers.launch.vllm_args import ArgReader
from vllm_triage.parsers.launch.yaml_doc import Path, YamlDoc, load_yaml, yaml_scalar
from vllm_triage.parsers.vllm_flags import FlagMatch, resolve_flag

# vllmConfig keys the production-stack template turns into flags (deployment-vllm-multi.yaml).
_STACK_FLAGS = {
    "maxModelLen": "--max-model-len",
    "dtype": "--dtype",
    "tensorParallelSize": "--tensor-parallel-size",
    "maxNumSeqs": "--max-num-seqs",
    "gpuMemoryUtilization": "--gpu-memory-utilization",
    "maxLoras": "--max-loras",
}
# vllmConfig keys that are the chart's own, not vLLM flags.
_STACK_OWN = {"v0", "prometheusMultiprocDir", "extraArgs", "enablePrefixCaching", "enableChunkedPrefill"}
# `command` last: vLLM's own example chart (examples/online_serving/chart-helm) gives the whole
# `vllm serve …` list as image.command.
_ARG_KEYS = ("extraArgs", "args", "vllmArgs", "serverArgs", "extra_args", "engineArgs", "command")
_MODEL_KEYS = ("model", "modelURL", "modelName", "modelId", "model_id", "modelPath", "servedModel")
_GPU_KEYS = ("requestGPU", "gpus", "gpu", "gpuCount", "numGpus", "nGpus")


def parse_helm(text: str, file: str) -> ParseResult:
    result = ParseResult(kind=f"{KIND_PREFIX}.helm")
    ctx = Context(file)
    for doc in load_yaml(text, ctx.notes):
        data = doc.data
        # A fragment is read for what it holds: the modelSpec list alone, or entries of it.
        if isinstance(data, list) and any(isinstance(item, dict) and "modelURL" in item for item in data):
            launch = _production_stack(doc, {"modelSpec": data}, (), lambda index: (index,), ctx)
        elif not isinstance(data, dict):
            continue
        elif isinstance(data.get("servingEngineSpec"), dict):
            base: Path = ("servingEngineSpec",)
            spec = data["servingEngineSpec"]
            launch = _production_stack(
                doc, spec, base, lambda index: ("servingEngineSpec", "modelSpec", index), ctx
            )
        elif isinstance(data.get("modelSpec"), list):
            launch = _production_stack(doc, data, (), lambda index: ("modelSpec", index), ctx)
        elif "modelURL" in data:
            launch = _production_stack(doc, {"modelSpec": [data]}, (), lambda _index: (), ctx)
        else:
            launch = _generic(doc, ctx)
        if launch is not None:
            emit(launch, result, file)
            result.notes.extend(ctx.notes)
            return result
    result.notes.append("no vLLM model found in the Helm values")
    result.notes.extend(ctx.notes)
    return result


# -- production-stack --------------------------------------------------------------------------


def _production_stack(
    doc: YamlDoc, spec: dict[str, Any], base: Path, item_path: Callable[[int], Path], ctx: Context
) -> Launch | None:
    """`base`: where `spec` (the mapping holding modelSpec) is in the document; `item_path`:
    where modelSpec entry N is (the two differ for a fragment that is the list itself)."""
    models = spec.get("modelSpec")
    if not isinstance(models, list):
        return None
    chosen: tuple[int, dict[str, Any]] | None = None
    for index, model in enumerate(models):
        if not isinstance(model, dict):
            continue
        name = model.get("name", index)
        if model.get("enabled") is False:
            ctx.notes.append(f"modelSpec {name}: enabled: false, not deployed; not read")
        elif chosen is None:
            chosen = (index, model)
        else:
            ctx.notes.append(
                f"modelSpec {name} is deployed too; the first one ({chosen[1].get('name')}) was read"
            )
    if chosen is None:
        return None
    index, model = chosen
    path = item_path(index)
    launch = Launch(HELM, doc.line((*path, "modelURL")) or doc.line(path))
    launch.notes.append(f"production-stack modelSpec {model.get('name', index)}: the chart runs vllm serve")
    if model.get("repository"):
        tag = yaml_scalar(model.get("tag")) or "latest"
        set_image(launch, Token(f"{yaml_scalar(model['repository'])}:{tag}", doc.line((*path, "repository"))))
    words = []
    if model.get("modelURL") is not None:
        words.append(Token(yaml_scalar(model["modelURL"]), doc.line((*path, "modelURL"))))
    words += _stack_flags(doc, path, model, launch)
    ArgReader(launch, ctx.file, positional="model", entrypoint="vllm serve (production-stack chart)").read(
        words
    )
    k8s_env(launch, doc, path, model)
    config = model.get("vllmConfig")
    if isinstance(config, dict) and str(config.get("v0", "")) == "1":
        launch.env["VLLM_USE_V1"] = Value(
            "0", doc.line((*path, "vllmConfig", "v0")), "set by the chart for v0: 1"
        )
    _hf_token(launch, doc, path, model.get("hf_token"))
    _gpus(launch, doc, path, model, "requestGPU")
    for key, name in (("shmSize", "shm_size"), ("runtimeClassName", "runtime")):
        where = path if model.get(key) else base
        source = model if model.get(key) else spec
        if source.get(key):
            launch.container[name] = Value(yaml_scalar(source[key]), doc.line((*where, key)))
    return launch


def _hf_token(launch: Launch, doc: YamlDoc, path: Path, token: Any) -> None:
    """The chart gives the container HF_TOKEN from a Secret: one it writes from a string
    `hf_token`, or the `secretName`/`secretKey` one named. Either way the server has the variable;
    a written token is a credential (redacted where it is printed), a reference is a placeholder."""
    if not token or "HF_TOKEN" in launch.env:
        return
    line = doc.line((*path, "hf_token"))
    if isinstance(token, dict):
        where = "/".join(str(token[k]) for k in ("secretName", "secretKey") if token.get(k))
        launch.env["HF_TOKEN"] = Value(
            f"<secret {where or '?'}>", line, "the chart reads HF_TOKEN from this Kubernetes secret"
        )
    else:
        launch.env["HF_TOKEN"] = Value(
            yaml_scalar(token), line, "hf_token: the chart stores it in a Secret and sets HF_TOKEN from it"
        )


def _stack_flags(doc: YamlDoc, path: Path, model: dict[str, Any], launch: Launch) -> list[Token]:
    """The flags the chart template writes for a modelSpec, each on the line of its key."""
    words: list[Token] = []

    def flag(text: str, key_path: Path, value: Any = None) -> None:
        line = doc.line(key_path)
        words.append(Token(text, line))
        if value is not None:
            words.append(Token(yaml_scalar(value), line))

    if model.get("enableLoRA"):
        flag("--enable-lora", (*path, "enableLoRA"))
    if model.get("enableTool"):
        flag("--enable-auto-tool-choice", (*path, "enableTool"))
    if model.get("toolCallParser"):
        flag("--tool-call-parser", (*path, "toolCallParser"), model["toolCallParser"])
    config = model.get("vllmConfig")
    if isinstance(config, dict):
        where: Path = (*path, "vllmConfig")
        if "enableChunkedPrefill" in config:
            on = bool(config["enableChunkedPrefill"])
            flag(
                "--enable-chunked-prefill" if on else "--no-enable-chunked-prefill",
                (*where, "enableChunkedPrefill"),
            )
        if config.get("enablePrefixCaching"):
            flag("--enable-prefix-caching", (*where, "enablePrefixCaching"))
        else:
            flag(
                "--no-enable-prefix-caching",
                (*where, "enablePrefixCaching") if "enablePrefixCaching" in config else where,
            )
            launch.notes.append(
                "the chart writes --no-enable-prefix-caching unless vllmConfig.enablePrefixCaching is true"
            )
        for key, value in config.items():
            if key in _STACK_FLAGS:
                flag(_STACK_FLAGS[key], (*where, key), value)
            elif key not in _STACK_OWN and isinstance(resolve_flag(_kebab(key)), FlagMatch):
                launch.notes.append(
                    f"vllmConfig.{key} is not among the keys this chart version passes to vLLM "
                    "(maxModelLen, dtype, tensorParallelSize, maxNumSeqs, gpuMemoryUtilization, maxLoras …); "
                    "put it in extraArgs"
                )
        words += _arg_list(doc, (*where, "extraArgs"), config.get("extraArgs"), launch)
    if model.get("chatTemplate"):
        flag("--chat-template", (*path, "chatTemplate"), f"/templates/{model['chatTemplate']}")
    return words


# -- a generic chart ---------------------------------------------------------------------------


def _generic(doc: YamlDoc, ctx: Context) -> Launch | None:
    found = _find_args(doc.data, ())
    if found is None:
        return _image_only(doc, ctx)
    holder_path, key, holder = found
    launch = Launch(HELM, doc.line((*holder_path, key)))
    launch.notes.append(f"Helm values: vLLM arguments from {'.'.join(map(str, (*holder_path, key)))}")
    words = _arg_list(doc, (*holder_path, key), holder[key], launch)
    _read_generic(doc, ctx, launch, holder_path, holder, words)
    return launch


def _image_only(doc: YamlDoc, ctx: Context) -> Launch | None:
    """Values that name a vLLM image as `image.repository` / `image.tag` but hold no arguments (a
    `helm create` scaffold, a values file cut before its args): a fragment read for what it holds."""
    image = doc.data.get("image") if isinstance(doc.data, dict) else None
    if not (isinstance(image, dict) and _VLLM_IMAGE.search(yaml_scalar(image.get("repository")) or "")):
        return None
    launch = Launch(HELM, doc.line(("image", "repository")))
    launch.notes.append("Helm values: a vLLM image with no arguments in the values (the chart's defaults)")
    _read_generic(doc, ctx, launch, (), doc.data, [])
    return launch


_VLLM_IMAGE = re.compile(r"vllm", re.I)


def _read_generic(
    doc: YamlDoc, ctx: Context, launch: Launch, holder_path: Path, holder: dict[str, Any], words: list[Token]
) -> None:
    if words and words[0].text in ("vllm", "serve"):
        words = (
            words[2:]
            if words[0].text == "vllm" and len(words) > 1 and words[1].text == "serve"
            else words[1:]
        )
    model_at = _nearest(doc.data, holder_path, _MODEL_KEYS)
    if model_at is not None and not any(
        w.text in ("--model", "--model-tag") or w.text.startswith("--model=") for w in words
    ):
        model_path, model = model_at
        words.insert(0, Token(yaml_scalar(model), doc.line(model_path)))
    if words:
        ArgReader(launch, ctx.file, positional="model", entrypoint="vllm serve (Helm chart)").read(words)
    image_at = _nearest(doc.data, holder_path, ("image",))
    if image_at is not None:
        image_path, image = image_at
        if isinstance(image, dict) and image.get("repository"):
            tag = yaml_scalar(image.get("tag")) or "latest"
            set_image(
                launch,
                Token(f"{yaml_scalar(image['repository'])}:{tag}", doc.line((*image_path, "repository"))),
            )
        elif isinstance(image, str):
            set_image(launch, Token(image, doc.line(image_path)))
    if isinstance(holder.get("env"), list):
        k8s_env(launch, doc, holder_path, holder)
    elif isinstance(holder.get("env"), dict):
        for name, value in holder["env"].items():
            launch.env[str(name)] = Value(yaml_scalar(value), doc.line((*holder_path, "env", str(name))))
    resources = _nearest(doc.data, holder_path, ("resources",))
    limits = resources[1].get("limits") if resources and isinstance(resources[1], dict) else None
    gpu_key = next((k for k in (limits or {}) if str(k).endswith("/gpu")), None)
    if gpu_key is not None and resources is not None and limits is not None:
        launch.container["gpus"] = Value(
            yaml_scalar(limits[gpu_key]), doc.line((*resources[0], "limits", gpu_key)), f"{gpu_key} limit"
        )
    else:
        _gpus(launch, doc, holder_path, holder, *_GPU_KEYS)


def _find_args(data: Any, path: Path, depth: int = 0) -> tuple[Path, str, dict[str, Any]] | None:
    """The first mapping (breadth first, a few levels deep) holding a list of vLLM arguments."""
    if not isinstance(data, dict) or depth > 4:
        return None
    for key in _ARG_KEYS:
        value = data.get(key)
        if isinstance(value, (list, str)) and re.search(r"--[a-z]", str(value)):
            return path, key, data
    for key, value in data.items():
        found = _find_args(value, (*path, key), depth + 1)
        if found is not None:
            return found
    return None


def _nearest(data: Any, path: Path, keys: tuple[str, ...]) -> tuple[Path, Any] | None:
    """The first of `keys` in the mapping at `path` or in one of its parents (nearest first)."""
    for cut in range(len(path), -1, -1):
        node = data
        for key in path[:cut]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            for key in keys:
                if node.get(key) not in (None, ""):
                    return (*path[:cut], key), node[key]
    return None


# -- shared ------------------------------------------------------------------------------------


def _arg_list(doc: YamlDoc, path: Path, value: Any, launch: Launch) -> list[Token]:
    """A YAML list of arguments; an item holding several words (`"--max-model-len 8192"`) is
    split as a shell would, since charts often paste whole flags into one item."""
    if isinstance(value, str):
        return tokenize_string(value, doc.line(path), None, launch.notes)
    words: list[Token] = []
    for index, item in enumerate(value if isinstance(value, list) else []):
        line = doc.line((*path, index))
        text = yaml_scalar(item)
        if text.startswith("-") and " " in text.strip() and "=" not in text.split(" ", 1)[0]:
            words.extend(tokenize_string(text, line, None, launch.notes))
        else:
            words.append(Token(text, line))
    return words


def _gpus(launch: Launch, doc: YamlDoc, path: Path, holder: dict[str, Any], *keys: str) -> None:
    for key in keys:
        if holder.get(key) not in (None, ""):
            kind = holder.get("requestGPUType") or "nvidia.com/gpu"
            launch.container["gpus"] = Value(
                yaml_scalar(holder[key]), doc.line((*path, key)), f"{kind} request ({key})"
            )
            return


def _kebab(key: str) -> str:
    return "--" + re.sub(r"(?<=[a-z0-9])([A-Z])", r"-\1", key).lower()
