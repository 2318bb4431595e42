"""An error line quoted at the top of an issue, above a log pasted after it that stops before the
traceback: the quoted line is the root (it is the only cause in the input), not a survivor of the
start-up lines that follow it in the paste."""

from __future__ import annotations

from pathlib import Path

from tests.triage.conftest import TriageJson
from tests.triage.triage_helpers import survived, write_log

STARTUP = """INFO 11-03 08:21:07 api_server.py:219] vLLM API server version 0.5.3.post1
INFO 11-03 08:21:07 api_server.py:220] args: Namespace(model='Qwen/Qwen2-7B-Instruct', dtype='auto')
INFO 11-03 08:21:09 llm_engine.py:176] Initializing an LLM engine (v0.5.3.post1) with config: model='Qwen/Qwen2-7B-Instruct', dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size=1
"""

QUOTE = (
    "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
    "Your Tesla T4 GPU has compute capability 7.5. You can use float16 instead by explicitly "
    "setting the`dtype` flag in CLI, for example: --dtype=half.\n"
)


def test_error_quoted_above_a_cut_log_is_the_root(tmp_path: Path, triage_json: TriageJson) -> None:
    path = write_log(tmp_path, QUOTE + "\nfull log below:\n\n" + STARTUP)
    data = triage_json(path)
    assert data["phase"] == "config"
    assert data["first_error"]["line"] == 1
    assert data["first_error"]["rule"] == "config.dtype_unsupported"
    assert survived(data) == []


def test_the_log_alone_is_still_a_hang(tmp_path: Path, triage_json: TriageJson) -> None:
    data = triage_json(write_log(tmp_path, STARTUP))
    assert data["first_error"]["category"] == "hang"


def test_a_logged_error_the_process_went_past_stays_survived(tmp_path: Path, triage_json: TriageJson) -> None:
    """With a logger prefix the line has its place in the log: the start-up lines after it are
    the same process going on, and the stop is a hang."""
    logged = "ERROR 11-03 08:21:05 api_server.py:101] " + QUOTE
    data = triage_json(write_log(tmp_path, logged + STARTUP))
    assert data["first_error"]["category"] == "hang"


def test_a_server_that_became_ready_went_past_the_quote(tmp_path: Path, triage_json: TriageJson) -> None:
    ready = STARTUP + "INFO:     Application startup complete.\n"
    data = triage_json(write_log(tmp_path, QUOTE + "\n" + ready))
    assert data["phase"] == "none"
