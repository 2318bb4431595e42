"""Bare snippets with no milestone that still name their start-up step (issue 9, set G group A):
a worker's visible-device check, a chat-template path, and a tokenizer wrapped after loading.
Every log is written for the test after how vLLM prints it."""

from __future__ import annotations

import pytest
from triage_helpers import write_log as _write

SITE = "/usr/local/lib/python3.11/site-packages"


@pytest.mark.parametrize(
    ("visible", "phase"),
    [("0", "container"), ("2", "cuda_init")],
)
def test_the_workers_visible_device_check_is_placed_by_how_many_devices_were_seen(
    tmp_path, triage_json, visible, phase
):
    log = f"AssertionError: local_world_size (4) must be less than or equal to the number of visible devices ({visible}).\n"
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == phase
    assert data["first_error"]["message"].startswith("AssertionError: local_world_size (4)")


def test_a_chat_template_path_that_does_not_exist_is_config(tmp_path, triage_json):
    log = (
        "ValueError: The supplied chat template string (/models/qwen/template.jinja) appears path-like, "
        "but doesn't exist! Tried: /models/qwen/template.jinja and "
        f"{SITE}/vllm/transformers_utils/chat_templates/models/qwen/template.jinja\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "config"
    assert data["first_error"]["rule"] == "config.chat_template_missing"


@pytest.mark.parametrize(
    "module",
    ["vllm/transformers_utils/tokenizer.py", "vllm/tokenizers/hf.py"],
)
def test_a_tokenizer_failing_while_it_is_wrapped_after_loading_is_weight_load(tmp_path, triage_json, module):
    prefix = "(APIServer pid=4412) ERROR 02-03 10:11:12 [api_server.py:1501]"
    log = (
        f"{prefix} Traceback (most recent call last):\n"
        f'{prefix}   File "{SITE}/vllm/entrypoints/openai/api_server.py", line 188, in build_async_engine_client\n'
        f"{prefix}     tokenizer = await engine_client.get_tokenizer()\n"
        f'{prefix}   File "{SITE}/{module}", line 97, in get_cached_tokenizer\n'
        f"{prefix}     tokenizer_all_special_tokens_extended = tokenizer.all_special_tokens_extended\n"
        f"{prefix} AttributeError: LlamaTokenizer has no attribute all_special_tokens_extended\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "weight_load"
    assert "get_cached_tokenizer" in data["phase_reason"]
