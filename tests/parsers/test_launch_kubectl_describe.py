"""`kubectl describe pod` of a vLLM pod: image and the digest the node pulled, the command and
arguments kubectl prints one item a line, env (a secret reference is only named), the GPU limit,
and a last run the OOM killer ended; the same text inside k9s's box."""

from __future__ import annotations

from launch_helpers import family, line, value

from vllm_triage.parsers.launch import looks_like, parse

DESCRIBE = """Name:             qwen-7b-5d9c7b8f4-x2kqp
Namespace:        llm
Node:             gpu-node-3/10.42.0.17
Status:           Running
Containers:
  vllm:
    Container ID:  containerd://9f2c1e0d7b6a5c4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e
    Image:         vllm/vllm-openai:v0.10.1.1
    Image ID:      docker.io/vllm/vllm-openai@sha256:1f6c2a7b9e3d4c5b6a7980f1e2d3c4b5a69788f0e1d2c3b4a5968778695a4b3c
    Port:          8000/TCP
    Host Port:     0/TCP
    Command:
      /bin/sh
      -c
    Args:
      vllm serve Qwen/Qwen2.5-7B-Instruct \\
        --max-model-len 16384 --gpu-memory-utilization 0.92
    State:          Running
      Started:      Tue, 02 Sep 2025 10:14:05 +0000
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
      Started:      Tue, 02 Sep 2025 10:02:11 +0000
      Finished:     Tue, 02 Sep 2025 10:13:58 +0000
    Ready:          False
    Restart Count:  3
    Limits:
      memory:          24Gi
      nvidia.com/gpu:  1
    Requests:
      cpu:             4
      nvidia.com/gpu:  1
    Environment:
      HF_TOKEN:              <set to the key 'token' in secret 'hf-token'>  Optional: false
      VLLM_LOGGING_LEVEL:    DEBUG
      POD_IP:                 (v1:status.podIP)
    Mounts:
      /dev/shm from dshm (rw)
Conditions:
  Type              Status
  Ready             False
Events:
  Type     Reason   Age                 From     Message
  ----     ------   ----                ----     -------
  Warning  BackOff  2m (x4 over 10m)    kubelet  Back-off restarting failed container vllm in pod qwen-7b
"""


def test_describe_output_is_read_as_the_pods_launch() -> None:
    assert looks_like(DESCRIBE) == "kubectl_describe"
    result = parse(DESCRIBE, "describe.txt")
    assert value(result, "launcher") == "kubernetes"
    assert value(result, "image.ref") == "vllm/vllm-openai:v0.10.1.1"
    assert value(result, "image.digest").startswith("sha256:1f6c2a7b9e3d")
    assert family(result, "arg.") == {
        "model": "Qwen/Qwen2.5-7B-Instruct",
        "max_model_len": "16384",
        "gpu_memory_utilization": "0.92",
    }
    assert value(result, "container.gpus") == "1"
    assert family(result, "env.") == {"VLLM_LOGGING_LEVEL": "DEBUG"}
    assert any("HF_TOKEN comes from 'hf-token'" in note for note in result.notes)
    assert line(result, "image.ref") == 8


def test_a_last_run_the_oom_killer_ended_is_a_finding() -> None:
    result = parse(DESCRIBE, "describe.txt")
    found = [p for p in result.problems if p.id == "container-oom-killed"]
    assert found and found[0].evidence[0].line == 21


def test_a_last_run_that_exited_with_an_error_is_only_noted() -> None:
    # must-not: an exit code alone is no OOM
    text = DESCRIBE.replace("Reason:       OOMKilled", "Reason:       Error").replace("137", "1")
    result = parse(text, "describe.txt")
    assert not [p for p in result.problems if p.id == "container-oom-killed"]
    assert any("Reason Error" in note for note in result.notes)


def test_k9s_box_borders_and_an_exec_form_command() -> None:
    body = [
        "  vllm:",
        "    Image:         registry.local/ml/vllm-openai:0.9.2",
        "    Image ID:      registry.local/ml/vllm-openai@sha256:" + "ab" * 32,
        "    Host Port:     0/TCP",
        "    Command:",
        "      python3",
        "      -m",
        "      vllm.entrypoints.openai.api_server",
        "    Args:",
        "      --model",
        "      /models/llama-3.1-8b",
        "      --tensor-parallel-size",
        "      2",
        "    Restart Count:  0",
    ]
    text = "\n".join("│ " + row.ljust(90) + " │" for row in body) + "\n"
    result = parse(text, "k9s.txt")
    assert value(result, "launcher") == "kubernetes"
    assert family(result, "arg.") == {"model": "/models/llama-3.1-8b", "tensor_parallel_size": "2"}


def test_a_yaml_manifest_is_still_a_manifest() -> None:
    # must-not: a Deployment's YAML has `image:` but none of describe's keys
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n"
        "        - name: vllm\n          image: vllm/vllm-openai:latest\n"
        '          args: ["--model", "Qwen/Qwen3-8B"]\n'
    )
    assert looks_like(text) == "kubernetes"
