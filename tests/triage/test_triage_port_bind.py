"""Port already in use: where the bind happened decides the phase. vLLM <= 0.6.1 let uvicorn bind
the API port after the engine and the app were built (uvicorn logs its lifespan's `Application
startup complete.` and then fails to bind): API-server initialisation, engine_reserve, and the
server never listened. Newer vLLM binds the socket itself before building any engine: the OSError
comes before every engine step."""

from __future__ import annotations

from pathlib import Path

from tests.triage.conftest import TriageJson
from tests.triage.triage_helpers import write_log

V0_UVICORN_BIND = """INFO 08-21 14:02:11 api_server.py:339] vLLM API server version 0.5.4
INFO 08-21 14:02:11 llm_engine.py:174] Initializing an LLM engine (v0.5.4) with config: model='microsoft/Phi-3-mini-4k-instruct', dtype=torch.float16, max_seq_len=4096
INFO 08-21 14:02:14 model_runner.py:732] Loading model weights took 7.1183 GB
INFO 08-21 14:02:16 gpu_executor.py:102] # GPU blocks: 5120, # CPU blocks: 682
INFO 08-21 14:02:30 model_runner.py:1225] Graph capturing finished in 13 secs.
INFO 08-21 14:02:31 launcher.py:28] Route: /v1/completions, Methods: POST
INFO:     Started server process [4187]
INFO:     Waiting for application startup.
INFO:     Application startup complete.
ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8080): address already in use
INFO:     Waiting for application shutdown.
INFO:     Application shutdown complete.
"""

V1_SOCKET_BIND = """INFO 05-12 09:40:02 [api_server.py:1043] vLLM API server version 0.8.5
INFO 05-12 09:40:02 [api_server.py:1044] args: Namespace(model='Qwen/Qwen2.5-1.5B-Instruct', port=8080)
Traceback (most recent call last):
  File "/usr/local/bin/vllm", line 8, in <module>
    sys.exit(main())
  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/api_server.py", line 1078, in run_server
    sock = create_server_socket(sock_addr)
  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/api_server.py", line 1007, in create_server_socket
    sock.bind(addr)
OSError: [Errno 98] Address already in use
"""


def test_uvicorn_bind_after_the_engine_is_engine_reserve(tmp_path: Path, triage_json: TriageJson) -> None:
    data = triage_json(write_log(tmp_path, V0_UVICORN_BIND))
    assert data["phase"] == "engine_reserve"
    assert data["first_error"]["line"] == 10
    assert data["first_error"]["rule"] == "api.uvicorn_bind_in_use"


def test_vllm_own_socket_bind_before_the_engine_is_config(tmp_path: Path, triage_json: TriageJson) -> None:
    data = triage_json(write_log(tmp_path, V1_SOCKET_BIND))
    assert data["phase"] == "config"
    assert data["first_error"]["rule"] == "config.port_in_use"
