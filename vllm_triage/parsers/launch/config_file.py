"""`--config file.yaml` folded in when the file's text is in the same paste (a heredoc, `cat`)."""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from vllm_triage.core.finding import Finding
from vllm_triage.core.provenance import Provenance
from vllm_triage.parsers import safe_yaml
from vllm_triage.parsers.base import ParseResult
from vllm_triage.parsers.launch.model import KIND_PREFIX, Context, Launch, Shell, Value
from vllm_triage.parsers.launch.vllm_args import key_dest
from vllm_triage.parsers.launch.wrappers import basename


def read_config_file(launch: Launch, shell: Shell, ctx: Context) -> None:
    """Fold the keys of `--config x.yaml` in when its text is in the same paste (a heredoc or
    `$ cat x.yaml` output). CLI values win over the YAML (vLLM's precedence), and a key set
    to `false` is dropped by vLLM, so it sets nothing — a trap worth a warning."""
    config = launch.args.get("config")
    if config is None:
        return
    name = str(config.value)
    found = shell.files.get(name) or next(
        (body for path, body in shell.files.items() if basename(path) == basename(name)), None
    )
    if found is None:
        launch.notes.append(
            f"line {config.line}: the values in {name} are not in the paste; "
            "only the arguments on the command line were read"
        )
        return
    body, first_line = found
    try:
        data = safe_yaml.load(body)
    except safe_yaml.YamlRefused as exc:
        launch.notes.append(f"line {first_line}: {name} not read: {exc}")
        return
    except yaml.YAMLError as exc:
        launch.notes.append(f"line {first_line}: {name} does not parse as YAML ({exc.__class__.__name__})")
        return
    if not isinstance(data, dict):
        return
    body_lines = body.splitlines()
    for key, value in data.items():
        _config_key(launch, str(key), value, _key_line(body_lines, str(key), first_line), name, ctx)


def _config_key(launch: Launch, key: str, value: Any, line: int | None, name: str, ctx: Context) -> None:
    dest = key.replace("-", "_")
    if dest in ("model_tag", "model") and "model" not in launch.args:
        launch.args["model"] = Value(str(value), line, f"from {name}")
        return
    known, suggestion = key_dest(key)
    if known is None:
        hint = f" (did you mean {suggestion}?)" if suggestion else ""
        launch.problems.append(
            Finding(
                "unknown-flag",
                "warning",
                f"unknown vLLM flag {key} in {name}{hint}",
                [Provenance(ctx.file, line)],
            )
        )
    else:
        dest = known
    if dest in launch.args:
        return  # the command line wins over the config file
    if value is False:
        launch.problems.append(
            Finding(
                "config-false-dropped",
                "warning",
                f"{key}: false in {name} is dropped by vLLM (only true emits --{key.replace('_', '-')}), "
                "so the default applies",
                [Provenance(ctx.file, line)],
                f"pass --no-{key.replace('_', '-')} on the command line to switch it off",
            )
        )
        return
    if value is True:
        text = "true"
    elif isinstance(value, list):
        text = " ".join(str(item) for item in value)
    elif isinstance(value, dict):
        text = json.dumps(value)
    else:
        text = str(value)
    launch.args[dest] = Value(text, line, f"from {name}")


def _key_line(lines: list[str], key: str, first_line: int) -> int | None:
    pattern = re.compile(rf"^\s*['\"]?{re.escape(key)}['\"]?\s*:")
    for offset, text in enumerate(lines):
        if pattern.match(text):
            return first_line + offset
    return first_line


# A `--config` file pasted on its own (`vllm serve --config vllm.yaml` in a README, the YAML shown):
# a flat mapping whose keys are vLLM's serve arguments, `max_model_len` or `max-model-len`.
_TOP_KEY = re.compile(r"^([A-Za-z][\w-]{0,63})[ \t]*:", re.M)
MIN_CONFIG_KEYS = 3
MAX_CONFIG_KEYS = 200


def looks_like_vllm_config(head: str) -> bool:
    """Most top-level keys of a flat YAML mapping are vLLM arguments, and at least three are."""
    keys = _TOP_KEY.findall(head)[:MAX_CONFIG_KEYS]  # each is looked up in the flag table
    if len(keys) < MIN_CONFIG_KEYS:
        return False
    known = [k for k in keys if k in ("model", "model_tag") or key_dest(k, exact=True)[0] is not None]
    return len(known) >= MIN_CONFIG_KEYS and len(known) >= 0.8 * len(keys)


def parse_vllm_config(text: str, file: str) -> ParseResult:
    """The arguments of a standalone `--config` file, each on its line. No launcher: the command
    that reads the file is not in the paste."""
    result = ParseResult(kind=f"{KIND_PREFIX}.vllm_config")
    try:
        data = safe_yaml.load(text)
    except yaml.YAMLError as exc:
        result.notes.append(f"{file}: does not parse as YAML ({exc.__class__.__name__})")
        return result
    if not isinstance(data, dict):
        return result
    launch = Launch("", None)
    ctx = Context(file)
    lines = text.splitlines()
    for key, value in data.items():
        _config_key(launch, str(key), value, _key_line(lines, str(key), 1), file, ctx)
    for dest, value in launch.args.items():
        result.knob(f"arg.{dest}", value.value, file, value.line)
    result.problems.extend(launch.problems)
    result.notes.append(
        f"{file}: a vLLM --config file: its keys are `vllm serve` arguments (the command that "
        "reads it is not in the paste)"
    )
    return result
