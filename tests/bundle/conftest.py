"""A bundle with secrets planted in every kind of file a failed deployment leaves behind.

The secrets are assembled at run time from pieces, so no scanner takes this source file for a
leak; every one of them is fake.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest


def _fake(prefix: str, body: str, length: int) -> str:
    return prefix + (body * length)[:length]


@dataclass
class Planted:
    root: Path
    secrets: dict[str, str]  # label → value
    keep: list[str]  # look-alikes that must come out unchanged


HF = _fake("hf_", "Zq7Lm3Np9Rt2", 34)
OPENAI = _fake("sk-" + "proj-", "Ab3De6Gh9Jk2", 40)
API_KEY = "vllm-local-" + "7f3a9c2e1b"
API_KEY_FLAG = "flag-" + "key-5e8d2c1a9f"
DB_PASSWORD = "s3cr3t " + "horse battery"
PROXY_PASSWORD = "Pr0xy" + "P4ss!"
AWS_ID = "AKIA" + "QX7Z3M5N8P2R4T6V"
AWS_SECRET = _fake("", "wJalrXUtnFEMIK7MDENGbPxRfiCY", 40)
GITHUB = _fake("gh" + "p_", "R4nd0mT0k3n", 36)
SLACK = "xox" + "b-" + _fake("", "1029384756-", 30)
NGC = _fake("nv" + "api-", "Qw3Er5Ty7Ui9", 40)
JWT = "eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiJ2bGxtLXRyaWFnZSJ9" + "." + "S1gn4tur3V4lu3Xy"
BASIC = "dXNlcjpodW50ZXIy" + "aHVudGVyMg=="
K8S_TOKEN = "k8s-" + "only-9a8b7c6d5e"
URL_PASSWORD = "gl" + "pat-" + "Xy9Wv8Ut7Sr6Qp5On4Ml"
KEY_BODY = _fake("MIIEv", "QIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7", 64)

SHA_DIGEST = "sha256:" + "e5f6a7b8c9d0e1f2" * 4
GIT_VERSION = "0.11.1.dev12+g1a2b3c4d5"
GPU_UUID = "GPU-5f2a9c1e-8b3d-4e6f-a1b2-c3d4e5f6a7b8"
REQUEST_ID = "chatcmpl-" + "9c1e8b3d4e6fa1b2c3d4e5f6a7b8c9d0"


def _files() -> dict[str, str]:
    inspect = [
        {
            "Id": "7c4e9b1f2a3d" * 5 + "abcd",
            "Image": SHA_DIGEST,
            "Name": "/qwen3",
            "State": {"Status": "exited", "ExitCode": 1, "StartedAt": "2025-10-20T08:14:02.694018331Z"},
            "Config": {
                "Hostname": "gpu-node-17",
                "Image": "vllm/vllm-openai@" + SHA_DIGEST,
                "Env": [
                    f"HF_TOKEN={HF}",
                    f"OPENAI_API_KEY={OPENAI}",
                    f"DB_PASSWORD={DB_PASSWORD}",
                    "TOKENIZERS_PARALLELISM=false",
                    f"NVIDIA_VISIBLE_DEVICES={GPU_UUID}",
                    "PATH=/usr/local/bin:/usr/bin",
                ],
                "Cmd": ["--model", "Qwen/Qwen3-8B", "--api-key", API_KEY_FLAG],
            },
        }
    ]
    return {
        "env/vllm.env": (
            f"HF_TOKEN={HF}\n"
            f'VLLM_API_KEY="{API_KEY}"\n'
            f"DB_PASSWORD='{DB_PASSWORD}'\n"
            f"AWS_ACCESS_KEY_ID={AWS_ID}\n"
            f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n"
            f"HTTPS_PROXY=http://svc-proxy:{PROXY_PASSWORD}@proxy.corp:3128\n"
            f"export GITHUB_TOKEN={GITHUB}\n"
            f"SLACK_BOT_TOKEN={SLACK}\n"
            "TOKENIZERS_PARALLELISM=false\n"
            "HF_HUB_ENABLE_HF_TRANSFER=1\n"
            "HF_TOKEN_PATH=/run/secrets/hf_token\n"
            f"NVIDIA_VISIBLE_DEVICES={GPU_UUID}\n"
            "HOME=/home/alice\n"
        ),
        "container/inspect.json": json.dumps(inspect, indent=4) + "\n",
        "launch.sh": (
            "#!/bin/sh\n"
            f"export NGC_API_KEY={NGC}\n"
            "docker run --gpus all -e HF_TOKEN=$HF_TOKEN \\\n"
            f"  -e VLLM_API_KEY={API_KEY} --env-file env/vllm.env \\\n"
            "  vllm/vllm-openai@" + SHA_DIGEST + " \\\n"
            f"  --model Qwen/Qwen3-8B --api-key {API_KEY_FLAG} --max-num-batched-tokens 8192\n"
        ),
        "container/collect_env.txt": (
            "==============================\n"
            "        System Info\n"
            "==============================\n"
            "OS                           : Ubuntu 22.04.5 LTS (x86_64)\n"
            "==============================\n"
            "       vLLM Info\n"
            "==============================\n"
            f"vLLM Version                 : {GIT_VERSION}\n"
            f"GPU 0: NVIDIA L4 (UUID: {GPU_UUID})\n"
            "==============================\n"
            "     Environment Variables\n"
            "==============================\n"
            f"HF_TOKEN={HF}\n"
            "NCCL_DEBUG=INFO\n"
            "TOKENIZERS_PARALLELISM=false\n"
        ),
        "vllm.log": (
            "INFO 10-20 08:14:02 [api_server.py:1] vLLM API server version " + GIT_VERSION + "\n"
            "INFO 10-20 08:14:02 [utils.py:328] non-default args: {'model': 'Qwen/Qwen3-8B', "
            f"'api_key': ['{API_KEY_FLAG}'], 'max_num_batched_tokens': 8192}}\n"
            f"DEBUG 10-20 08:15:11 [logger.py:41] Received request {REQUEST_ID}: headers "
            f"{{'authorization': 'Bearer {OPENAI}', 'content-type': 'application/json'}}\n"
            f"DEBUG 10-20 08:15:11 [auth.py:9] Authorization: Basic {BASIC}\n"
            f"DEBUG 10-20 08:15:12 [hub.py:77] login with token {HF} succeeded\n"
            f"DEBUG 10-20 08:15:12 [oauth.py:3] session={JWT}\n"
            "gpu-node-17:1234:1290 [0] NCCL INFO Bootstrap : Using eth0:10.0.3.17<0>\n"
            'INFO:     10.0.3.5:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
            "ERROR 10-20 08:16:00 [engine.py:1] CUDA out of memory.\n"
        ),
        "request.sh": (
            "alice@gpu-node-17:~/repro$ curl -sS http://10.0.3.17:8000/v1/chat/completions \\\n"
            f'  -H "Authorization: Bearer {API_KEY}" \\\n'
            "  -H 'Content-Type: application/json' \\\n"
            '  -d \'{"model": "Qwen/Qwen3-8B", "messages": [{"role": "user", "content": "hi"}], '
            '"max_tokens": 16}\'\n'
            f"pip install --index-url https://ci:{URL_PASSWORD}@gitlab.corp.internal/simple x\n"
        ),
        "k8s/deployment.yaml": (
            "env:\n"
            "  - name: HF_TOKEN\n"
            f"    value: {HF}\n"
            "  - name: VLLM_K8S_TOKEN\n"
            f'    value: "{K8S_TOKEN}"\n'
            "  - name: HUGGING_FACE_HUB_TOKEN\n"
            "    valueFrom:\n"
            "      secretKeyRef:\n"
            "        name: hf-token\n"
            "        key: token\n"
            "  - name: VLLM_PORT\n"
            '    value: "8000"\n'
        ),
        "gcp/service-account.json": json.dumps(
            {
                "type": "service_account",
                "private_key_id": "0123456789abcdef" * 2 + "01234567",
                "private_key": "-----BEGIN PRIVATE KEY-----\n" + KEY_BODY + "\n-----END PRIVATE KEY-----\n",
                "client_email": "vllm@proj.iam.gserviceaccount.com",
            },
            indent=2,
        )
        + "\n",
        "bundle.toml": (
            '[run]\nlabel = "trial-3"\nnode = "gpu-node-17"\nstarted = "2025-10-20T08:14:02Z"\n\n'
            '[[file]]\npath = "vllm.log"\nrole = "vllm_log"\n\n'
            '[[file]]\npath = "container/inspect.json"\nrole = "container_inspect"\n'
        ),
    }


@pytest.fixture
def planted(tmp_path: Path) -> Planted:
    root = tmp_path / "bundle"
    for name, text in _files().items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "blob.bin").write_bytes(bytes(range(256)) * 8)
    secrets = {
        "hf": HF,
        "openai": OPENAI,
        "api_key": API_KEY,
        "api_key_flag": API_KEY_FLAG,
        "db_password": DB_PASSWORD,
        "proxy_password": PROXY_PASSWORD,
        "aws_id": AWS_ID,
        "aws_secret": AWS_SECRET,
        "github": GITHUB,
        "slack": SLACK,
        "ngc": NGC,
        "jwt": JWT,
        "basic": BASIC,
        "k8s": K8S_TOKEN,
        "url_password": URL_PASSWORD,
        "private_key": KEY_BODY,
    }
    keep = [
        SHA_DIGEST,
        GIT_VERSION,
        GPU_UUID,
        REQUEST_ID,
        "TOKENIZERS_PARALLELISM=false",
        "HF_HUB_ENABLE_HF_TRANSFER=1",
        "--max-num-batched-tokens 8192",
        "'max_num_batched_tokens': 8192",
        "HF_TOKEN_PATH=/run/secrets/hf_token",
        "key: token",
        "name: hf-token",
        'value: "8000"',
        "-e HF_TOKEN=$HF_TOKEN",
        "10.0.3.17",
        "gpu-node-17",
        "/home/alice",
        '"max_tokens": 16',
    ]
    return Planted(root, secrets, keep)
