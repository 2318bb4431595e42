"""llama-swap's config.yaml: a proxy that starts one server per model from the model's `cmd:`.

    models:
      "qwen-vl":
        proxy: "http://127.0.0.1:${PORT}"
        cmdStop: docker stop qwen-vl
        cmd: |
          docker run --rm --name qwen-vl --gpus '"device=0"'
          vllm/vllm-openai:v0.8.5
          --model Qwen/Qwen2.5-VL-7B-Instruct --port 8000

gives `launcher=docker_run` (what `cmd` runs), the image, GPUs and the vLLM arguments.

`cmd` is one command line, not a shell script: llama-swap joins its lines, drops comment lines and
trailing backslashes, and splits the rest into words as a shell would, without running a shell.
So every line is more words of the same command. Seen in llama-swap's own README (`cmd: |` with
`docker run --name ${MODEL_ID} … ghcr.io/ggml-org/llama.cpp:server`), in configs that run vLLM
containers (`cmd: |` / `cmd: >` with `--runtime=nvidia --gpus '"device=2,3"' … vllm/vllm-openai`)
and in install scripts that write the config with a heredoc; older configs spell the stop command
`cmd_stop`, newer ones `cmdStop`. A model entry pasted alone (no `models:`) is read the same way.
"""

from __future__ import annotations

import re
from typing import Any

from vllm_triage.parsers.base import ParseResult
from vllm_triage.parsers.launch.analyse import analyse
from vllm_triage.parsers.launch.lexer import Logical, tokenize
from vllm_triage.parsers.launch.model import KIND_PREFIX, Context, Launch, Shell, emit
from vllm_triage.parsers.launch.yaml_doc import Path, YamlDoc, load_yaml

# `cmd:` beside a key only llama-swap's model entries have.
_CMD = re.compile(r"^[ \t]+cmd:[ \t]*(?:[|>][-+]?)?[ \t]*\S*", re.M)
_ENTRY_KEYS = re.compile(r"^[ \t]+(?:proxy|cmdStop|cmd_stop|checkEndpoint|ttl|useModelName|aliases):", re.M)
_MACRO = re.compile(r"\$\{(PORT|MODEL_ID)\}")


def looks_like_llama_swap(text: str) -> bool:
    return bool(_CMD.search(text) and _ENTRY_KEYS.search(text))


def parse_llama_swap(text: str, file: str) -> ParseResult:
    result = ParseResult(kind=f"{KIND_PREFIX}.llama_swap")
    ctx = Context(file)
    for doc in load_yaml(text, ctx.notes):
        for path, entry in _entries(doc.data, ()):
            launch = _entry_launch(doc, path, entry, ctx)
            if launch is not None:
                emit(launch, result, file)
                result.notes.append(
                    f"llama-swap model {path[-1] if path else '(entry)'}: its cmd is the launch"
                )
                result.notes.extend(ctx.notes)
                return result
    result.notes.append("no llama-swap model whose cmd starts vLLM")
    result.notes.extend(ctx.notes)
    return result


def _entries(data: Any, path: Path, depth: int = 0) -> list[tuple[Path, dict[str, Any]]]:
    """Every mapping with a string `cmd` (a model entry), a few levels deep, in document order."""
    if not isinstance(data, dict) or depth > 3:
        return []
    if isinstance(data.get("cmd"), str):
        return [(path, data)]
    found = []
    for key, value in data.items():
        found.extend(_entries(value, (*path, str(key)), depth + 1))
    return found


def _entry_launch(doc: YamlDoc, path: Path, entry: dict[str, Any], ctx: Context) -> Launch | None:
    first = doc.line((*path, "cmd"))
    logical = Logical()
    for offset, raw in enumerate(str(entry["cmd"]).split("\n")):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        if text.endswith("\\") and not text.endswith("\\\\"):
            text = text[:-1]
        logical.add(first + offset if first else 0, text, " ")
    # ${PORT} and ${MODEL_ID} are llama-swap's macros, filled in when it starts the model.
    words = tokenize(logical, None, ctx.notes)
    for word in words:
        if _MACRO.search(word.text):
            ctx.notes.append(f"line {word.line}: {word.text} holds a llama-swap macro, filled in at start")
            break
    return analyse(words, Shell(), ctx) if words else None
