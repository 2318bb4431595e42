"""`fingerprint` never prints a credential, in any input shape that can carry one.

Each input is one a person pastes (docker run, compose, Helm values, a Kubernetes manifest, an env
file, a systemd unit, an sbatch script); the credential is made up, with the shape of a real one.
The output (text and JSON) must say the credential is there and never show it; a placeholder the
user wrote instead of a secret is shown as written, since it holds none. The fingerprint keeps the
values as read; what it prints is redacted at the command's output boundary by the bundle
redaction (bundle/redact/payload.py), whose rules say what a placeholder is (names.toml).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from vllm_triage.bundle.redact.payload import redact_payload
from vllm_triage.bundle.redact.rules import builtin
from vllm_triage.cli import cli

HF = "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"  # 37 chars, the shape of a user access token
KEY = "s3cr3t-k3y-for-the-server"


def _both(path: Path) -> tuple[str, dict[str, object]]:
    runner = CliRunner()
    text = runner.invoke(cli, ["fingerprint", str(path)])
    as_json = runner.invoke(cli, ["fingerprint", str(path), "--format", "json"])
    assert text.exit_code == 0, text.stderr
    assert as_json.exit_code == 0, as_json.stderr
    return text.stdout, json.loads(as_json.stdout)


SHAPES = {
    "run.sh": f"""
        docker run --gpus all -e HF_TOKEN={HF} -p 8000:8000 vllm/vllm-openai:v0.9.2 \\
          --model org/model --api-key {KEY}
        """,
    "compose.yaml": f"""
        services:
          vllm:
            image: vllm/vllm-openai:latest
            environment:
              - HUGGING_FACE_HUB_TOKEN={HF}
            command: ["--model", "org/model", "--api-key", "{KEY}"]
        """,
    "values.yaml": f"""
        servingEngineSpec:
          modelSpec:
          - name: m
            repository: vllm/vllm-openai
            tag: v0.8.5
            modelURL: org/model
            hf_token: {HF}
            env:
              - name: VLLM_API_KEY
                value: {KEY}
        """,
    "deploy.yaml": f"""
        apiVersion: apps/v1
        kind: Deployment
        spec:
          template:
            spec:
              containers:
              - name: vllm
                image: vllm/vllm-openai:latest
                args: ["--model", "org/model", "--api-key", "{KEY}"]
                env:
                - name: HF_TOKEN
                  value: {HF}
        """,
    "vllm.env": f"""
        HF_TOKEN={HF}
        VLLM_API_KEY={KEY}
        VLLM_LOGGING_LEVEL=DEBUG
        """,
    "vllm.service": f"""
        [Service]
        Environment="HF_TOKEN={HF}"
        ExecStart=/opt/venv/bin/vllm serve org/model --api-key {KEY}
        """,
    "job.sbatch": f"""
        #!/bin/bash
        #SBATCH --gres=gpu:2
        export HF_TOKEN={HF}
        srun vllm serve org/model --tensor-parallel-size 2 --api-key {KEY}
        """,
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_no_credential_is_printed(name: str, scratch: Callable[..., Path]) -> None:
    folder = scratch(None, {name: SHAPES[name]})
    text, data = _both(folder / name)
    dumped = json.dumps(data)
    for secret in (HF, KEY):
        assert secret not in text
        assert secret not in dumped
    # the fingerprint still says that a credential was given, and of what kind
    assert "<redacted:hf-token:1>" in dumped
    assert "<redacted:" in text  # the text may cut it to its column


def test_an_unnamed_token_is_caught_by_its_shape(scratch: Callable[..., Path]) -> None:
    folder = scratch(None, {"run.sh": f"vllm serve org/model --served-model-name {HF}\n"})
    text, data = _both(folder / "run.sh")
    assert HF not in text and HF not in json.dumps(data)


def test_placeholders_are_shown_as_written(scratch: Callable[..., Path]) -> None:
    folder = scratch(
        None,
        {
            "run.sh": """
            docker run --gpus all -e HF_TOKEN=$HF_TOKEN -e HUGGING_FACE_HUB_TOKEN="<your token>" \\
              vllm/vllm-openai:latest --model org/model --api-key EMPTY
            """
        },
    )
    _, data = _both(folder / "run.sh")
    knobs = data["knobs"]
    assert knobs["env.HF_TOKEN"]["value"] == "$HF_TOKEN"
    assert knobs["env.HUGGING_FACE_HUB_TOKEN"]["value"] == "<your token>"
    assert knobs["arg.api_key"]["value"] == "EMPTY"


@pytest.mark.parametrize(
    "value",
    [
        "<token>",
        "<...>",
        "$HF_TOKEN",
        "${HF_TOKEN}",
        "YOUR_TOKEN",
        "your_hf_token_here",
        "hf_xxxxx",
        "hf_Ke....",
        "",
    ],
)
def test_placeholder_shapes(value: str) -> None:
    assert builtin().is_trivial(value)
    shown = redact_payload({"knobs": {"env.HF_TOKEN": {"value": value, "source": "run.sh:1"}}})
    assert shown["knobs"]["env.HF_TOKEN"]["value"] == value


@pytest.mark.parametrize("value", [HF, KEY, "hoailb-vllm", "test_api_key", "abcXxXdefghijklmnopqrstu1234"])
def test_credential_shapes(value: str) -> None:
    assert not builtin().is_trivial(value)
    shown = redact_payload({"knobs": {"arg.api_key": {"value": value, "source": "run.sh:1"}}})
    assert shown["knobs"]["arg.api_key"]["value"].startswith("<redacted:")


def test_token_like_counters_are_not_secrets(scratch: Callable[..., Path]) -> None:
    folder = scratch(None, {"run.sh": "vllm serve org/model --max-num-batched-tokens 8192\n"})
    _, data = _both(folder / "run.sh")
    assert data["knobs"]["arg.max_num_batched_tokens"]["value"] == "8192"
