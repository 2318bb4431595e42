"""Helm values: vLLM's production-stack chart and a generic chart with an args list."""

from __future__ import annotations

from launch_helpers import family, line, read, value

from vllm_triage.parsers.launch import looks_like, parse


def test_production_stack_model_spec_as_the_chart_renders_it():
    result = read("helm-production-stack-values.yaml")
    assert result.kind == "launch_command.helm"
    assert value(result, "launcher") == "helm"
    assert value(result, "image.ref") == "vllm/vllm-openai:v0.9.2"
    # the enabled: false entry is skipped; the second model is the one deployed
    assert family(result, "arg.") == {
        "model": "meta-llama/Llama-3.3-70B-Instruct",
        "enable_chunked_prefill": "true",
        "enable_prefix_caching": "false",  # the chart writes --no-enable-prefix-caching
        "max_model_len": "65536",
        "dtype": "bfloat16",
        "tensor_parallel_size": "4",
        "gpu_memory_utilization": "0.92",
        "max_num_batched_tokens": "8192",
        "disable_log_requests": "true",
    }
    assert line(result, "arg.max_model_len") == 23
    assert value(result, "container.gpus") == "4"
    assert value(result, "container.shm_size") == "32Gi"
    # hf_token names a Secret: the chart sets HF_TOKEN from it, so the server has the variable
    assert family(result, "env.") == {
        "NCCL_DEBUG": "WARN",
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1",
        "HF_TOKEN": "<secret hf-secret>",
    }
    assert any("pipelineParallelSize is not among the keys" in note for note in result.notes)
    assert any("qwen-coder: enabled: false" in note for note in result.notes)


def test_production_stack_v0_switch_and_extra_args_win_over_vllm_config():
    text = (
        "servingEngineSpec:\n  modelSpec:\n  - name: opt\n    repository: lmcache/vllm-openai\n"
        "    tag: latest\n    modelURL: facebook/opt-125m\n    requestGPU: 1\n    vllmConfig:\n"
        '      v0: "1"\n      enablePrefixCaching: true\n      maxModelLen: 2048\n'
        '      extraArgs: ["--max-model-len", "1024"]\n'
    )
    result = parse(text, "values.yaml")
    assert family(result, "arg.") == {
        "model": "facebook/opt-125m",
        "enable_prefix_caching": "true",
        "max_model_len": "1024",
    }
    assert family(result, "env.") == {"VLLM_USE_V1": "0"}
    assert value(result, "container.gpus") == "1"


def test_generic_chart_with_extra_args_image_and_gpu_limits():
    result = read("helm-generic-extraargs.yaml")
    assert value(result, "launcher") == "helm"
    assert value(result, "image.ref") == "registry.example.com/ml/vllm-openai:v0.8.5.post1"
    assert family(result, "arg.") == {
        "model": "mistralai/Mistral-Small-24B-Instruct-2501",
        "tensor_parallel_size": "2",
        "max_model_len": "32768",  # one list item holding a flag and its value
        "tokenizer_mode": "mistral",
        "enable_prefix_cashing": "true",
    }
    assert [p.id for p in result.problems] == ["unknown-flag"]
    assert "did you mean --enable-prefix-caching" in result.problems[0].message
    assert value(result, "container.gpus") == "2"
    assert family(result, "env.") == {"HF_HUB_OFFLINE": "1"}


def test_generic_chart_with_top_level_args_and_model_flag():
    text = (
        "image:\n  repository: vllm/vllm-openai\n  tag: v0.11.0\nargs:\n  - --model\n  - Qwen/Qwen3-4B\n"
        "  - --max-model-len\n  - '4096'\ngpu: 1\nenv:\n  VLLM_LOGGING_LEVEL: DEBUG\n"
    )
    assert looks_like(text) == "helm"
    result = parse(text, "values.yaml")
    assert family(result, "arg.") == {"model": "Qwen/Qwen3-4B", "max_model_len": "4096"}
    assert value(result, "container.gpus") == "1"
    assert family(result, "env.") == {"VLLM_LOGGING_LEVEL": "DEBUG"}


def test_values_without_vllm_arguments_are_no_launch():
    text = "image:\n  repository: nginx\n  tag: '1.27'\nargs:\n  - --worker-processes\n  - '4'\n"
    assert "launcher" not in parse(text, "values.yaml").knobs


def test_a_fragment_of_production_stack_values_is_read_for_what_it_holds():
    entries = (
        '  - name: "llama3"\n    repository: "vllm/vllm-openai"\n    tag: "v0.8.4"\n'
        '    modelURL: "meta-llama/Llama-3.1-8B-Instruct"\n    requestGPU: 1\n    vllmConfig:\n      maxModelLen: 4096\n'
    )
    result = parse(entries, "paste.yaml")
    assert value(result, "launcher") == "helm"
    assert family(result, "arg.")["max_model_len"] == "4096"
    assert value(result, "container.gpus") == "1"
    lone = "modelURL: facebook/opt-125m\nvllmConfig:\n  tensorParallelSize: 2\n"
    assert family(parse(lone, "paste.yaml"), "arg.")["tensor_parallel_size"] == "2"


# Values with the image split into repository / tag, seen in public charts: the `helm create`
# scaffold edited for vLLM (a llama-serve chart), CAST AI's vllm child chart (image.repository
# us-docker.pkg.dev/castai-hub/library/vllm-openai, image.tag v0.9.2) and vLLM's own
# examples/online_serving/chart-helm (image.command holds the whole `vllm serve …` list).
def test_values_with_only_an_image_repository_and_tag_are_a_helm_launch():
    text = (
        "replicaCount: 2\n\nimage:\n  repository: vllm/vllm-openai\n  pullPolicy: Always\n"
        '  # Overrides the image tag.\n  tag: "v0.10.1"\n\nimagePullSecrets: []\n'
        "podSecurityContext: {}\nsecurityContext: {}\n\nservice:\n  type: ClusterIP\n  port: 8000\n\n"
        'resources:\n  limits:\n    nvidia.com/gpu: "2"\n'
    )
    assert looks_like(text) == "helm"
    result = parse(text, "values.yaml")
    assert value(result, "launcher") == "helm"
    assert value(result, "image.ref") == "vllm/vllm-openai:v0.10.1"
    assert value(result, "container.gpus") == "2"


def test_an_image_command_list_in_chart_values_is_the_launch():
    text = (
        "image:\n  repository: registry.local/vllm-openai\n  tag: v0.9.2\n"
        '  command: ["vllm", "serve", "/models/opt", "--dtype", "bfloat16", "--port", "8000"]\n'
        "containerPort: 8000\nreplicaCount: 1\n"
    )
    result = parse(text, "values.yaml")
    assert value(result, "launcher") == "helm"
    assert value(result, "image.ref") == "registry.local/vllm-openai:v0.9.2"
    assert family(result, "arg.") == {"model": "/models/opt", "dtype": "bfloat16", "port": "8000"}


def test_chart_values_for_another_image_are_no_launch():
    text = "image:\n  repository: nginx\n  tag: '1.27'\nreplicaCount: 1\nservice:\n  port: 80\n"
    assert "launcher" not in parse(text, "values.yaml").knobs


def test_values_pasted_inside_a_markdown_code_span_are_read():
    # An issue comment wraps the values in single backticks across lines; its end is cut mid-key.
    text = (
        '`servingEngineSpec:\n  modelSpec:\n    - name: "gemma3"\n      repository: "vllm/vllm-openai"\n'
        '      tag: "nightly"\n      modelURL: "/data/gemma-3-12b-it-q4_0.gguf"\n      requestGPU: 1\n'
        "      vllmConfig:\n        maxModelLen: 8192\n`"
    )
    result = parse(text, "values.yaml")
    assert value(result, "launcher") == "helm"
    assert value(result, "image.ref") == "vllm/vllm-openai:nightly"
    assert value(result, "arg.model") == "/data/gemma-3-12b-it-q4_0.gguf"
    assert family(result, "arg.")["max_model_len"] == "8192"
