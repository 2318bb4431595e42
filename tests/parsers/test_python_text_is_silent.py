"""Python text in a log or a launch file is parsed without a warning: CPython warns on stderr (a
SyntaxWarning from 3.12, a DeprecationWarning before) about `1if`, `0x1for` or `"\\d"`, and a
parser never prints. Found by the fuzz campaign on the config repr of a vLLM log."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

from vllm_triage.parsers import vllm_log_config

LOG = (
    "INFO 05-01 10:00:00 api_server.py:12] non-default args: {'model': 'org/m', "
    "'max_model_len': 4096, 'seed': 0x1for, 'swap_space': 1if}\n"
    "INFO 05-01 10:00:02 launcher.py:29] Route: /v1/models, Methods: GET\n"
)
SERVE = (
    "from ray.serve.llm import LLMConfig, build_openai_app\n"
    'pattern = "\\d+"\n'
    "llm_config = LLMConfig(model_loading_config=dict(model_id='org/m'), "
    "engine_kwargs=dict(tensor_parallel_size=2, max_model_len=8192))\n"
    "app = build_openai_app({'llm_configs': [llm_config]})\n"
)


def test_config_repr_with_invalid_literals_warns_nothing() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = vllm_log_config.parse(LOG, "server.log")
    assert [str(w.message) for w in caught] == []
    assert result.knobs["arg.max_model_len"].value == 4096


def test_fingerprint_of_such_files_writes_nothing_to_stderr(tmp_path: Path) -> None:
    (tmp_path / "server.log").write_text(LOG, encoding="utf-8")
    (tmp_path / "serve_app.py").write_text(SERVE, encoding="utf-8")
    # -W always: every warning shown, as on a 3.12+ interpreter parsing these literals.
    command = [sys.executable, "-W", "always", "-m", "vllm_triage", "fingerprint", str(tmp_path)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode in (0, 1), result.stderr
    assert result.stderr == ""
    assert "max_model_len" in result.stdout
