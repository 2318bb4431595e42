"""Secrets in the launch shapes the tool learned to read (systemd units, Helm values, Ray Serve
configs, sbatch scripts, compose, Kubernetes `sh -c`, wrappers, vLLM's JSON logging, pre-signed
URLs, login commands, key files). Each case was a leak: the planted value came out of `redact` in
clear. Every secret is assembled at run time and fake."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vllm_triage.bundle.redact.leakscan import scan_text
from vllm_triage.bundle.redact.redactor import redact_text
from vllm_triage.cli import cli


def fake(seed: str, length: int = 20) -> str:
    """Mixed case and digits, `length` characters: no known token shape."""
    body = "".join(c.upper() if i % 3 == 0 else c for i, c in enumerate(seed * 64))
    return body[:length]


A, B, C = fake("zq8lm3np9rt2vb6"), fake("kp2lm9qr7st4vw1"), fake("mx4nb7vc1zl9qw3")

SHAPES = {
    "systemd single-quoted assignment": f"Environment='OPENAI_API_KEY={A}'\n",
    "systemd assignment after a name": f"Environment=VLLM_API_KEY={A}\n",
    "json logging: python repr in message": json.dumps(
        {"level": "INFO", "message": f"non-default args: {{'model': 'Qwen/Qwen3-8B', 'api_key': ['{A}']}}"}
    ),
    "json logging: escaped json in message": json.dumps({"message": f'args: {{"api_key": "{A}"}}'}),
    "json logging: escaped quotes around a flag value": json.dumps({"message": f'serve --api-key "{A}"'}),
    "sh -c inside pod json": json.dumps(
        {"command": ["sh", "-c", f'vllm serve m --api-key "{A}" --port 8000']}
    ),
    "compose folded command": f"    command: >\n      --model Qwen/Qwen3-8B\n      --api-key\n      {A}\n",
    "backslash continuation": f"vllm serve m --hf-token \\\n    {A} --port 8000\n",
    "web-flattened escaped space": f"vllm serve m --api-key\\ {A} --port 8000\n",
    "os.environ.setdefault": f'os.environ.setdefault("OPENAI_API_KEY", "{A}")\n',
    "os.environ subscript": f"os.environ['VLLM_API_KEY'] = '{A}'\n",
    "s3 pre-signed url": f"https://b.s3.amazonaws.com/w?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature={A}{B}",
    "gcs signed url": f"https://storage.googleapis.com/b/o?X-Goog-Signature={A}{B}&x=1",
    "ngrok login": f"ngrok config add-authtoken 2{A}_{B}\n",
    "wandb login": f"wandb login {A}{B}\n",
    "npm token": f"token: npm_{A}{B[:16]}\n",
    "pypi token": f"pypi-AgEIcHlwaS5vcmc{A}{B}{C}\n",
    "pgp private key": f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{A}{B}{C}\n-----END PGP PRIVATE KEY BLOCK-----\n",
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shape_is_redacted_and_seen_by_the_leak_scan(name: str) -> None:
    text = SHAPES[name]
    secret = A
    clean, redactions = redact_text(text)
    assert secret not in clean, clean
    assert redactions
    assert scan_text(text), "the leak scan must see it in clear"
    assert not scan_text(clean), scan_text(clean)


def test_every_value_of_a_multi_key_api_key() -> None:
    # vLLM's --api-key takes several keys; so does the arg dump's list.
    for text in (
        f"vllm serve Qwen/Qwen3-8B --api-key {A} {B} --port 8000\n",
        f"non-default args: {{'model': 'Qwen/Qwen3-8B', 'api_key': ['{A}', '{B}']}}\n",
        json.dumps({"api_key": [A, B], "model": "m"}, indent=2),
        f"engine_kwargs:\n  api_key:\n    - {A}\n    - {B}\n  port: 8000\n",
    ):
        clean, redactions = redact_text(text)
        assert A not in clean and B not in clean, clean
        assert len({r.placeholder for r in redactions}) == 2
        # Only the two keys changed: the rest of the line is as it was.
        assert clean.replace("<redacted:key:1>", A).replace("<redacted:key:2>", B) == text


def test_a_list_under_a_secret_key_is_followed_past_the_hinted_lines() -> None:
    keys = [fake(f"k{i}x9Qz", 16) for i in range(6)]
    text = json.dumps({"api_key": keys, "port": 8000}, indent=2)
    clean, _ = redact_text(text)
    assert not any(k in clean for k in keys), clean
    assert '"port": 8000' in clean


def test_a_name_that_holds_no_secret_does_not_hide_one_in_its_value() -> None:
    # The pattern's match for `message` (not secret) used to swallow the pairs inside its value.
    text = f'{{"message": "x", "detail": "token={A} and password: {B}"}}'
    clean, _ = redact_text(text)
    assert A not in clean and B not in clean, clean
    assert '"message": "x"' in clean


def test_rescans_stay_linear_on_a_line_of_unsecret_names() -> None:
    import time

    def seconds(n: int) -> float:
        text = "token_path=" * n + "\n"
        started = time.perf_counter()
        redact_text(text)
        return time.perf_counter() - started

    small, big = seconds(2_000), seconds(16_000)
    assert big < max(0.5, small * 20), (small, big)


@pytest.mark.parametrize(
    "text",
    [
        "vllm serve Qwen/Qwen3-8B --api-key \\\n    --port 8000\n",
        "vllm serve m --enforce-eager \\\n    Qwen/Qwen3-8B\n",
        "vllm serve Qwen/Qwen3-8B --api-key $VLLM_API_KEY --port 8000 | tee serve.log\n",
        json.dumps({"stop": ["Zq8Lm3Np9Rt2"], "model": "Qwen/Qwen3-8B"}, indent=2),
        "image: vllm/vllm-openai@sha256:" + "0123456789abcdef" * 4 + "\n",
        "X-Amz-SignedHeaders=host&X-Amz-Date=20250101T000000Z\n",
        'os.environ.setdefault("VLLM_PORT", "8000")\n',
        "HF_TOKEN_PATH=/run/secrets/hf_token\n",
        # (Helm's `secretKey: token` is redacted: MinIO's charts put the secret itself there.)
        "    hf_token:\n      secretName: hf\n",
    ],
)
def test_legitimate_text_is_left_alone(text: str) -> None:
    clean, redactions = redact_text(text)
    assert clean == text, [r.rule for r in redactions]
    assert not scan_text(text)


def test_helm_values_and_ray_config_in_a_bundle(tmp_path: Path) -> None:
    hf = "hf_" + fake("q7lm3np9rt2zb", 34)
    files = {
        "helm/values.yaml": (
            "servingEngineSpec:\n  modelSpec:\n  - name: llama\n"
            f"    hf_token: {hf}\n"
            "    vllmConfig:\n"
            f'      extraArgs: ["--api-key", "{A}", "--disable-log-requests"]\n'
            f'    env:\n      - name: OPENAI_API_KEY\n        value: "{B}"\n'
        ),
        "ray/serve_llm.py": (
            "llm_config = LLMConfig(\n"
            "    model_loading_config=dict(model_id='q'),\n"
            f'    runtime_env={{"env_vars": {{"HF_TOKEN": "{hf}", "VLLM_API_KEY": \'{C}\'}}}},\n'
            ")\n"
        ),
        "logs/vllm.log": f"INFO 01-02 03:04:05 [api_server.py:1] args: {{'api_key': ['{A}', '{C}']}}\n",
    }
    bundle = tmp_path / "b"
    for name, text in files.items():
        (bundle / name).parent.mkdir(parents=True, exist_ok=True)
        (bundle / name).write_text(text)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["redact", str(bundle), "--out", str(out)])
    assert result.exit_code == 0, result.output
    written = {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*") if p.is_file()}
    everything = "\n".join(written.values())
    for secret in (hf, A, B, C):
        assert secret not in everything
    # The same secret, the same placeholder in every file.
    values = written["helm/values.yaml"]
    log = written["logs/vllm.log"]
    placeholder_a = values.split('"--api-key", "')[1].split('"')[0]
    assert placeholder_a.startswith("<redacted:") and placeholder_a in log
    assert written["ray/serve_llm.py"].count("<redacted:hf-token:1>") == 1
    assert "<redacted:hf-token:1>" in values
