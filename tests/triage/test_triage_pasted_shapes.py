"""Shapes of a paste that must not change what a line says.

- A log line quoted as Markdown inline code (one backtick each side, as issue threads show one
  line): its prefix is read inside the backticks, never taken for a paste's tag.
- The Ray worker wrapper's logger (ray_utils.py execute_method) reports a worker's exception from
  whatever step it ran: its module does not place the error in Ray placement (cuda_init).
"""

from __future__ import annotations

from pathlib import Path

from tests.triage.conftest import TriageJson
from tests.triage.triage_helpers import write_log

PROMPT_TOO_LONG = (
    "`ERROR 05-08 21:27:27 [serving_chat.py:198] ValueError: This model's maximum context length is "
    "8192 tokens. However, you requested 8203 tokens (7691 in the messages, 512 in the completion).`\n"
)


def test_a_quoted_request_handler_line_is_a_survived_request_error(
    tmp_path: Path, triage_json: TriageJson
) -> None:
    data = triage_json(write_log(tmp_path, PROMPT_TOO_LONG))
    assert data["phase"] == "none"
    assert any(f["id"] == "survived-error" for f in data["findings"])


def test_the_same_line_unquoted_reads_the_same(tmp_path: Path, triage_json: TriageJson) -> None:
    data = triage_json(write_log(tmp_path, PROMPT_TOO_LONG.replace("`", "")))
    assert data["phase"] == "none"


def test_backticks_inside_a_message_stay(tmp_path: Path, triage_json: TriageJson) -> None:
    line = "ERROR 05-08 21:27:27 [core.py:700] ValueError: set `--max-model-len` lower`\n"
    data = triage_json(write_log(tmp_path, line))
    assert data["first_error"]["message"].endswith("lower`")


def test_a_ray_wrapper_relay_is_placed_by_its_error(tmp_path: Path, triage_json: TriageJson) -> None:
    line = (
        "(RayWorkerVllm pid=1842765) ERROR 04-24 09:33:04 ray_utils.py:44] RuntimeError: Cannot find "
        "any model weights with 'meta-llama/CodeLlama-7b-Instruct-hf'\n"
    )
    data = triage_json(write_log(tmp_path, line))
    assert data["phase"] == "weight_load"
    assert "ray_utils.py" not in data["phase_reason"]


def test_a_command_and_its_quoted_error_is_a_log(tmp_path: Path, triage_json: TriageJson) -> None:
    """An issue body: the command in backticks, a sentence, the error in backticks (ending in a
    backtick of its own)."""
    paste = (
        "`python3 -m vllm.entrypoints.openai.api_server --model /models/vicuna-13b --load-format "
        "safetensors`\n\nIt returns:\n"
        "`RuntimeError: Cannot find any model weights with `/models/vicuna-13b``\n"
    )
    data = triage_json(write_log(tmp_path, paste, name="issue.txt"))
    assert data["phase"] == "weight_load"
    assert data["first_error"]["message"].startswith("RuntimeError: Cannot find any model weights")


def test_a_fence_is_not_a_code_span(tmp_path: Path, triage_json: TriageJson) -> None:
    log = "```\nERROR 05-08 21:27:27 [core.py:700] RuntimeError: CUDA error: out of memory\n```\n"
    data = triage_json(write_log(tmp_path, log))
    assert data["first_error"]["message"] == "RuntimeError: CUDA error: out of memory"
