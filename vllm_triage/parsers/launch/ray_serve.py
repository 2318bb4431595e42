"""Ray Serve LLM configs (`ray.serve.llm`), in Python or as a serve YAML.

Ray Serve LLM starts vLLM from an `LLMConfig`: `model_loading_config.model_id` is the name
clients ask for, `model_source` (a Hugging Face id, a path, or `{bucket_uri: …}`; `model_id`
when absent) is what vLLM loads; `engine_kwargs` are vLLM engine arguments by their Python
names (`tensor_parallel_size`, `max_model_len` …), `runtime_env.env_vars` the environment of
the replicas, `accelerator_type` the GPU kind to schedule on. Each engine worker holds one GPU,
so a replica takes tensor_parallel_size × pipeline_parallel_size GPUs.

Read from: Python (`LLMConfig(model_loading_config=dict(model_id=…), engine_kwargs=dict(…))`,
dict literals, `dict(...)` calls or ray's config classes (`ModelLoadingConfig(...)`), module-level
constants), a serve config
(`applications[].args.llm_configs[]`), a standalone LLMConfig YAML, and a KubeRay `RayService`
whose `serveConfigV2` holds the serve config as a string. Python is parsed with `ast`, never run.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from vllm_triage.core import pysource
from vllm_triage.core.finding import Finding
from vllm_triage.core.provenance import Provenance
from vllm_triage.parsers.base import ParseResult
from vllm_triage.parsers.launch.docker import set_image
from vllm_triage.parsers.launch.kubernetes import containers_in
from vllm_triage.parsers.launch.launchers import RAY_SERVE_LLM
from vllm_triage.parsers.launch.lexer import Token
from vllm_triage.parsers.launch.model import KIND_PREFIX, Context, Launch, Value, emit
from vllm_triage.parsers.launch.vllm_args import key_dest
from vllm_triage.parsers.launch.yaml_doc import YamlDoc, load_yaml, yaml_scalar

PYTHON_LLM_CONFIG = re.compile(r"\bLLMConfig\s*\(")
YAML_LLM_CONFIG = re.compile(r"^[ \t]*(?:-\s+)?(?:llm_configs|model_loading_config):", re.M)
# A launch script holds a handful of LLMConfig calls in a few KB. Past these bounds the rest is
# data (or an attack, issue 11): a 2.5 MB script of 50,000 calls took over 30 s to parse, walk and
# evaluate whole, and reading unterminated calls one by one was quadratic.
MAX_PYTHON_CHARS = 256 * 1024  # parsed as a whole up to this; above, each call alone
MAX_CALLS = 64
MAX_CALL_CHARS = 16 * 1024  # an LLMConfig(...) call is a few hundred bytes


@dataclass
class _Config:
    """One LLMConfig as plain data, with the line of each value by its key path."""

    data: dict[str, Any]
    lines: dict[tuple[str, ...], int] = field(default_factory=dict)
    line: int | None = None

    def line_of(self, *path: str) -> int | None:
        for cut in range(len(path), 0, -1):
            if path[:cut] in self.lines:
                return self.lines[path[:cut]]
        return self.line


def parse_ray_serve(text: str, file: str) -> ParseResult:
    result = ParseResult(kind=f"{KIND_PREFIX}.ray_serve_llm")
    ctx = Context(file)
    python = PYTHON_LLM_CONFIG.search(text) is not None
    configs = _python_configs(text, ctx) if python else _yaml_configs(text, ctx)
    if not configs:
        result.notes.append("no Ray Serve LLMConfig with a model found")
        result.notes.extend(ctx.notes)
        return result
    launch = _launch(configs[0], ctx)
    if not python:
        _rayservice_image(text, launch, ctx)
    emit(launch, result, file)
    for other in configs[1:]:
        loading = other.data.get("model_loading_config") or {}
        result.notes.append(
            f"line {other.line}: another LLMConfig "
            f"({loading.get('model_id') if isinstance(loading, dict) else '?'}) "
            "is served too; the first one was read"
        )
    result.notes.extend(ctx.notes)
    return result


# -- from an LLMConfig to a Launch ---------------------------------------------------------------


def _launch(config: _Config, ctx: Context) -> Launch:
    data = config.data
    launch = Launch(RAY_SERVE_LLM, config.line)
    loading = data.get("model_loading_config")
    if isinstance(loading, dict):
        model_id, source = loading.get("model_id"), loading.get("model_source")
        if isinstance(source, dict) and source.get("bucket_uri"):
            line = config.line_of("model_loading_config", "model_source", "bucket_uri")
            launch.args["model"] = Value(
                str(source["bucket_uri"]), line, "model_source.bucket_uri (downloaded first)"
            )
        elif source:
            launch.args["model"] = Value(str(source), config.line_of("model_loading_config", "model_source"))
        elif model_id:
            launch.args["model"] = Value(str(model_id), config.line_of("model_loading_config", "model_id"))
        if model_id and source and source != model_id:
            launch.args["served_model_name"] = Value(
                str(model_id),
                config.line_of("model_loading_config", "model_id"),
                "model_loading_config.model_id",
            )
    engine = data.get("engine_kwargs")
    for key, value in (engine or {}).items() if isinstance(engine, dict) else ():
        if value is None:
            continue  # computed in Python (noted), or an explicit None: vLLM's default applies
        _engine_kwarg(launch, str(key), value, config.line_of("engine_kwargs", str(key)), ctx)
    runtime = data.get("runtime_env")
    env_vars = runtime.get("env_vars") if isinstance(runtime, dict) else None
    for name, value in (env_vars or {}).items() if isinstance(env_vars, dict) else ():
        launch.env[str(name)] = Value(
            yaml_scalar(value), config.line_of("runtime_env", "env_vars", str(name))
        )
    if data.get("accelerator_type"):
        launch.container["accelerator_type"] = Value(
            str(data["accelerator_type"]), config.line_of("accelerator_type"), "Ray accelerator_type"
        )
    _gpus(launch)
    return launch


def _engine_kwarg(launch: Launch, key: str, value: Any, line: int | None, ctx: Context) -> None:
    """engine_kwargs go to vLLM's AsyncEngineArgs(**kwargs): a key it does not know fails there."""
    known, suggestion = key_dest(key, exact=True)
    dest = known or key
    if known is None:
        hint = f" (did you mean {suggestion.lstrip('-').replace('-', '_')}?)" if suggestion else ""
        launch.problems.append(
            Finding(
                "unknown-flag",
                "warning",
                f"engine_kwargs key {key} is not a vLLM engine argument{hint}",
                [Provenance(ctx.file, line)],
                "vLLM's engine-args constructor rejects unknown keyword arguments at start-up",
            )
        )
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (dict, list)):
        text = json.dumps(value)
    else:
        text = "" if value is None else str(value)
    launch.args[dest] = Value(text, line, "from engine_kwargs")


def _gpus(launch: Launch) -> None:
    sizes = []
    for dest in ("tensor_parallel_size", "pipeline_parallel_size"):
        value = launch.args.get(dest)
        if value is not None and str(value.value).isdigit():
            sizes.append(int(value.value))
    count = 1
    for size in sizes:
        count *= size
    tp = launch.args.get("tensor_parallel_size")
    launch.container["gpus"] = Value(
        str(count),
        tp.line if tp is not None else launch.line,
        "per replica: one GPU per engine worker (tensor_parallel_size × pipeline_parallel_size)",
    )


def _rayservice_image(text: str, launch: Launch, ctx: Context) -> None:
    """A RayService runs its replicas in the image of its Ray pods (rayproject/ray-llm: vLLM
    comes with it); the head group's container is the first one."""
    for doc in load_yaml(text, []):
        for _pod_path, _pod, path, container in containers_in(doc.data):
            image = yaml_scalar(container.get("image")).strip()
            if image:
                set_image(launch, Token(image, doc.line((*path, "image"))))
                launch.notes.append("image of the RayService's Ray pods (head group first)")
                return


# -- YAML ----------------------------------------------------------------------------------------


def _yaml_configs(text: str, ctx: Context, offset: int = 0) -> list[_Config]:
    configs: list[_Config] = []
    for doc in load_yaml(text, ctx.notes):
        configs.extend(_configs_in(doc, doc.data, (), ctx, offset))
    return configs


def _configs_in(doc: YamlDoc, data: Any, path: tuple[Any, ...], ctx: Context, offset: int) -> list[_Config]:
    """LLMConfigs anywhere in a document: a serve config's llm_configs, a standalone config, a
    RayService's serveConfigV2 string (read as YAML of its own, lines counted from the string)."""
    found: list[_Config] = []
    if isinstance(data, dict):
        if "model_loading_config" in data:
            return [_yaml_config(doc, data, path, offset)]
        engine = data.get("engine_config")
        if isinstance(engine, dict) and (engine.get("type") == "VLLMEngine" or "engine_kwargs" in engine):
            return [_rayllm_config(doc, engine, (*path, "engine_config"), offset)]
        for key, value in data.items():
            if key == "serveConfigV2" and isinstance(value, str):
                line = doc.line((*path, key)) or 1
                found.extend(_yaml_configs(value, ctx, offset + line - 1))
            elif key == "llm_configs" and isinstance(value, list):
                for index, item in enumerate(value):
                    if isinstance(item, str):
                        ctx.notes.append(f"llm_configs lists {item}: that file is not in the input")
                    elif isinstance(item, dict):
                        found.extend(_configs_in(doc, item, (*path, key, index), ctx, offset))
            else:
                found.extend(_configs_in(doc, value, (*path, key), ctx, offset))
    elif isinstance(data, list):
        for index, item in enumerate(data):
            found.extend(_configs_in(doc, item, (*path, index), ctx, offset))
    return found


def _yaml_config(doc: YamlDoc, data: dict[str, Any], path: tuple[Any, ...], offset: int) -> _Config:
    config = _Config(data, line=_shift(doc.line((*path, "model_loading_config")), offset))

    def walk(value: Any, keys: tuple[str, ...]) -> None:
        line = _shift(doc.line((*path, *keys)), offset)
        if line is not None:
            config.lines[keys] = line
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, (*keys, str(key)))

    for key, value in data.items():
        walk(value, (str(key),))
    return config


def _rayllm_config(doc: YamlDoc, engine: dict[str, Any], path: tuple[Any, ...], offset: int) -> _Config:
    """RayLLM (ray-project/ray-llm, before ray.serve.llm): `args.models[].engine_config` holds
    `model_id` (the served name), `hf_model_id` (what vLLM loads; model_id when absent) and
    `engine_kwargs` (vLLM engine arguments), run by `type: VLLMEngine`. Read as the LLMConfig it
    became: model_loading_config {model_id, model_source} and engine_kwargs."""
    loading = {"model_id": engine.get("model_id"), "model_source": engine.get("hf_model_id")}
    kwargs = engine.get("engine_kwargs")
    engine_kwargs: dict[str, Any] = kwargs if isinstance(kwargs, dict) else {}
    data = {
        "model_loading_config": {key: value for key, value in loading.items() if value is not None},
        "engine_kwargs": engine_kwargs,
    }
    config = _Config(data, line=_shift(doc.line((*path, "model_id")) or doc.line(path), offset))
    where = [(("model_loading_config", key), (*path, source)) for key, source in _RAYLLM_LOADING]
    where += [(("engine_kwargs", str(key)), (*path, "engine_kwargs", key)) for key in engine_kwargs]
    for keys, at in where:
        line = _shift(doc.line(at), offset)
        if line is not None:
            config.lines[keys] = line
    return config


_RAYLLM_LOADING = (("model_id", "model_id"), ("model_source", "hf_model_id"))


def _shift(line: int | None, offset: int) -> int | None:
    return None if line is None else line + offset


# -- Python --------------------------------------------------------------------------------------


def _python_configs(text: str, ctx: Context) -> list[_Config]:
    """Every `LLMConfig(...)` call, its arguments evaluated as literals (constants defined at the
    top of the module are looked up; anything computed is left out and noted)."""
    try:
        if len(text) > MAX_PYTHON_CHARS:
            raise OverflowError(f"over {MAX_PYTHON_CHARS // 1024} KB")
        tree: ast.AST = pysource.parse(text)
        constants = _constants(tree)
        calls = [node for node in ast.walk(tree) if _is_llm_config(node)]
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
        # A fragment (an issue paste, a notebook cell cut short), or more than a script: each call
        # is parsed on its own.
        why = f"is {exc}" if isinstance(exc, OverflowError) else "does not parse as a whole"
        ctx.notes.append(f"the Python {why}; each LLMConfig(...) call read alone")
        constants, calls = {}, list(_calls_alone(text))
    if len(calls) > MAX_CALLS:
        ctx.notes.append(f"over {MAX_CALLS} LLMConfig(...) calls; the first {MAX_CALLS} read")
    configs = []
    for call in sorted(calls, key=lambda node: node.lineno)[:MAX_CALLS]:
        evaluator = _Evaluator(constants, ctx)
        data = {kw.arg: evaluator.value(kw.value, (kw.arg,)) for kw in call.keywords if kw.arg}
        configs.append(_Config(data, evaluator.lines, call.lineno))
    return [config for config in configs if config.data.get("model_loading_config")]


def _is_llm_config(node: ast.AST) -> TypeGuard[ast.Call]:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name == "LLMConfig"


def _constants(tree: ast.AST) -> dict[str, ast.expr]:
    names: dict[str, ast.expr] = {}
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            names[node.targets[0].id] = node.value
    return names


def _calls_alone(text: str) -> list[ast.Call]:
    closing = _matching_brackets(text)
    calls: list[ast.Call] = []
    covered = 0  # the end of the last call read: an LLMConfig( inside it is part of it
    line, counted = 0, 0
    attempts = 0
    for match in PYTHON_LLM_CONFIG.finditer(text):
        # One more than read, so the caller notes the rest; calls that do not parse count too
        # (each may be up to MAX_CALL_CHARS), so thousands of broken calls stay bounded.
        if len(calls) > MAX_CALLS or attempts >= 4 * MAX_CALLS:
            break
        start = match.start()
        end = closing.get(match.end() - 1)
        if end is None or start < covered:
            continue  # never closed: the fragment is cut inside the call, and it cannot parse
        covered = end
        if end - start > MAX_CALL_CHARS:
            continue  # not a config call someone wrote: data, or an attack
        attempts += 1
        line += text.count("\n", counted, start)  # counted on from the last call: linear
        counted = start
        try:
            expression = pysource.parse("\n" * line + text[start : end + 1].lstrip(), mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        assert isinstance(expression, ast.Expression)
        if _is_llm_config(expression.body):
            calls.append(expression.body)
    return calls


_BRACKET_EVENTS = re.compile(r"[()\[\]{}\"'#\n\\]")


def _matching_brackets(text: str) -> dict[int, int]:
    """Offset of each opening bracket -> offset of the bracket that closes it, in one pass.

    Scanning from every `LLMConfig(` to its closing parenthesis was quadratic on a paste of many
    unclosed calls (fuzz: 9,835 of them in 246 KB never finished). Quotes and comments end at a
    newline here, so a stray apostrophe in the prose of an issue paste spoils one line, not the
    rest of the text; brackets inside strings and comments do not count."""
    closing: dict[int, int] = {}
    stack: list[int] = []
    quote = ""
    comment = False
    escaped = -1
    for event in _BRACKET_EVENTS.finditer(text):
        index, char = event.start(), event.group()
        if char == "\n":
            quote, comment = "", False
        elif comment or index == escaped:
            continue
        elif quote:
            if char == "\\":
                escaped = index + 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "#":
            comment = True
        elif char in "([{":
            stack.append(index)
        elif char in ")]}" and stack:
            closing[stack.pop()] = index
    return closing


def _keyword_record(node: ast.expr) -> TypeGuard[ast.Call]:
    """`dict(a=1)`, or a config class of ray.serve.llm built from its fields (`ModelLoadingConfig(
    model_id=…)`, `LoraConfig(…)`): LLMConfig takes either, pydantic turns both into the same record."""
    if not isinstance(node, ast.Call) or node.args:
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name == "dict" or (name.endswith("Config") and name != "LLMConfig")


class _Evaluator:
    """Literal values of call arguments, with the line of every value by key path."""

    def __init__(self, constants: dict[str, ast.expr], ctx: Context) -> None:
        self.constants = constants
        self.ctx = ctx
        self.lines: dict[tuple[str, ...], int] = {}
        self.depth = 0

    def value(self, node: ast.expr, path: tuple[str, ...]) -> Any:
        self.lines[path] = node.lineno
        if isinstance(node, ast.Name) and node.id in self.constants and self.depth < 8:
            self.depth += 1
            try:
                value = self.value(self.constants[node.id], path)
            finally:
                self.depth -= 1
            self.lines[path] = node.lineno  # where it is used; the constant's line is in the note
            self.ctx.notes.append(f"line {node.lineno}: {'.'.join(path)} from the constant {node.id}")
            return value
        if isinstance(node, ast.Dict):
            return {
                str(self._key(key)): self.value(item, (*path, str(self._key(key))))
                for key, item in zip(node.keys, node.values, strict=False)
                if key is not None
            }
        if _keyword_record(node):
            return {kw.arg: self.value(kw.value, (*path, kw.arg)) for kw in node.keywords if kw.arg}
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.value(item, path) for item in node.elts]
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, RecursionError):
            self.ctx.notes.append(
                f"line {node.lineno}: {'.'.join(path)} is computed in Python "
                f"({ast.unparse(node)[:60]}); not read"
            )
            return None

    def _key(self, node: ast.expr) -> Any:
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError):
            return ast.unparse(node)
