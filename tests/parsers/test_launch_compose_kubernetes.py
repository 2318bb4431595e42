"""Compose with an entrypoint override plus a command list; Kubernetes command/args as a list or
as one `sh -c` string whose script is lexed like a shell session."""

from __future__ import annotations

from launch_helpers import family, line, read, value

from vllm_triage.parsers.launch import looks_like, parse


def test_compose_entrypoint_override_and_command_list():
    result = read("compose-entrypoint-override.yaml")
    assert value(result, "launcher") == "compose"
    assert family(result, "arg.") == {
        "model": "Qwen/Qwen3-8B",
        "tensor_parallel_size": "2",
        "max_model_len": "16384",
    }
    assert line(result, "arg.tensor_parallel_size") == 11
    assert value(result, "container.gpus") == "device=0,1"
    assert family(result, "env.") == {"HF_TOKEN": "${HF_TOKEN}", "VLLM_LOGGING_LEVEL": "DEBUG"}
    assert any("the container runs python -m vllm.entrypoints.openai.api_server" in n for n in result.notes)


def test_compose_entrypoint_vllm_serve_with_the_model_in_command():
    text = (
        "services:\n  llm:\n    image: vllm/vllm-openai:v0.11.0\n    entrypoint: [vllm, serve]\n"
        '    command: ["google/gemma-3-12b-it", "--max-model-len", "4096", "-tp", "2"]\n    gpus: all\n'
    )
    result = parse(text, "compose.yaml")
    assert family(result, "arg.") == {
        "model": "google/gemma-3-12b-it",
        "max_model_len": "4096",
        "tensor_parallel_size": "2",
    }
    assert value(result, "container.gpus") == "all"


def test_compose_shell_entrypoint_expands_the_container_env():
    text = (
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.10.2\n    environment:\n      MODEL: Qwen/Qwen3-8B\n"
        '    entrypoint: ["/bin/sh", "-c", "vllm serve $$MODEL --max-model-len 8192"]\n'
    )
    assert family(parse(text, "compose.yaml"), "arg.") == {"model": "Qwen/Qwen3-8B", "max_model_len": "8192"}


def test_kubernetes_bash_dash_c_double_dash_block_script():
    result = read("k8s-sh-c-string.yaml")
    assert value(result, "launcher") == "kubernetes"
    assert family(result, "arg.") == {
        "model": "/models/llama",
        "served_model_name": "llama-8b",
        "max_model_len": "8192",
        "tensor_parallel_size": "2",
    }
    assert line(result, "arg.max_model_len") == 20
    assert value(result, "container.gpus") == "2"
    assert family(result, "env.") == {"MODEL": "meta-llama/Llama-3.1-8B-Instruct", "VLLM_USE_V1": "1"}


def test_kubernetes_command_as_one_sh_c_string_and_as_a_list_item():
    one_string = (
        "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n    - name: vllm\n      image: vllm/vllm-openai:v0.9.0\n"
        '      command: sh -c "vllm serve Qwen/Qwen3-4B --max-model-len 4096"\n'
    )
    assert family(parse(one_string, "pod.yaml"), "arg.") == {
        "model": "Qwen/Qwen3-4B",
        "max_model_len": "4096",
    }
    listed = (
        "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n    - name: vllm\n      image: vllm/vllm-openai:v0.9.0\n"
        '      command: ["/bin/sh", "-c"]\n'
        '      args: ["pip list | grep vllm && vllm serve Qwen/Qwen3-8B -tp 2 --max-model-len 32768"]\n'
        "      resources:\n        limits:\n          nvidia.com/gpu: 2\n"
    )
    result = parse(listed, "pod.yaml")
    assert family(result, "arg.") == {
        "model": "Qwen/Qwen3-8B",
        "tensor_parallel_size": "2",
        "max_model_len": "32768",
    }
    assert value(result, "container.gpus") == "2"


def test_kubernetes_folded_args_to_the_image_entrypoint():
    text = (
        "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n    - name: vllm\n      image: vllm/vllm-openai:v0.9.0\n"
        "      args: >\n        --model Qwen/Qwen3-8B\n        --max-model-len 8192\n"
    )
    result = parse(text, "pod.yaml")
    assert family(result, "arg.") == {"model": "Qwen/Qwen3-8B", "max_model_len": "8192"}
    assert line(result, "arg.max_model_len") == 9


def test_a_string_where_a_mapping_belongs_does_not_stop_the_reading():
    compose = (
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.10.2\n    deploy: replicated\n"
        "    command: [--model, Qwen/Qwen3-8B]\n"
    )
    result = parse(compose, "compose.yaml")
    assert family(result, "arg.") == {"model": "Qwen/Qwen3-8B"} and "container.gpus" not in result.knobs
    pod = (
        "apiVersion: v1\nkind: Pod\nspec:\n  volumes: none\n  containers:\n    - name: vllm\n"
        "      image: vllm/vllm-openai:v0.9.0\n      resources:\n        limits: two-gpus\n      env: HF_HOME\n"
        "      args: [--model, Qwen/Qwen3-8B]\n"
    )
    result = parse(pod, "pod.yaml")
    assert family(result, "arg.") == {"model": "Qwen/Qwen3-8B"}
    assert not any("could not be read" in note for note in result.notes)


def test_compose_built_locally_with_a_block_list_entrypoint():
    text = (
        "services:\n  api:\n    build: .\n    entrypoint:\n      - python3\n      - -m\n"
        "      - vllm.entrypoints.openai.api_server\n    command:\n      - --model\n      - /models/qwen\n"
        "      - --tensor-parallel-size\n      - '2'\n"
    )
    result = parse(text, "compose.yaml")
    assert value(result, "launcher") == "compose"
    assert family(result, "arg.") == {"model": "/models/qwen", "tensor_parallel_size": "2"}


def test_fragments_of_a_pod_spec_are_read_for_what_they_hold():
    listed = (
        "- name: vllm\n  image: vllm/vllm-openai:v0.8.5\n  args:\n    - --model\n    - Qwen/Qwen2.5-7B-Instruct\n"
        '  resources:\n    limits:\n      nvidia.com/gpu: "1"\n'
    )
    result = parse(listed, "paste.yaml")
    assert value(result, "launcher") == "kubernetes" and value(result, "container.gpus") == "1"
    assert family(result, "arg.") == {"model": "Qwen/Qwen2.5-7B-Instruct"}
    lone = (
        "name: vllm\nimage: vllm/vllm-openai:v0.8.5\n"
        'args: ["--model", "Qwen/Qwen2.5-7B-Instruct", "-tp", "2"]\nenv:\n  - name: HF_HOME\n    value: /data\n'
    )
    result = parse(lone, "paste.yaml")
    assert value(result, "launcher") == "kubernetes"
    assert family(result, "arg.") == {"model": "Qwen/Qwen2.5-7B-Instruct", "tensor_parallel_size": "2"}
    assert family(result, "env.") == {"HF_HOME": "/data"}


def test_compose_reads_the_service_that_starts_vllm_not_a_client_that_names_it() -> None:
    result = read("compose-webui-before-vllm-entrypoint-python.yaml")
    assert value(result, "launcher") == "compose"
    assert value(result, "image.ref") == "registry.internal/ml/serving-runtime:2.4"
    assert value(result, "arg.model") == "Qwen/Qwen2.5-14B-Instruct"
    assert value(result, "container.gpus") == "device=1"
    assert family(result, "env.") == {"VLLM_ATTENTION_BACKEND": "FLASHINFER"}
    assert any("webui" in note and "also runs vLLM" in note for note in result.notes)


def test_compose_prefers_a_vllm_image_over_a_service_that_only_names_vllm() -> None:
    text = (
        "services:\n"
        "  proxy:\n    image: nginx:1.27\n    command: [nginx, -g, 'daemon off;', -c, /etc/vllm-proxy.conf]\n"
        "  engine:\n    image: vllm/vllm-openai:v0.10.2\n    command: [--model, google/gemma-3-4b-it]\n"
    )
    result = parse(text, "docker-compose.yml")
    assert value(result, "image.ref") == "vllm/vllm-openai:v0.10.2"
    assert value(result, "arg.model") == "google/gemma-3-4b-it"


def test_compose_with_one_vllm_service_is_read_as_before() -> None:
    text = "services:\n  api:\n    image: vllm/vllm-openai:latest\n    command: --model facebook/opt-125m\n"
    result = parse(text, "compose.yaml")
    assert value(result, "arg.model") == "facebook/opt-125m"
    assert not any("also runs vLLM" in note for note in result.notes)


def test_a_container_cut_out_of_a_deployment_keeps_its_indent_and_is_read_as_kubernetes() -> None:
    result = read("k8s-container-cut-from-deployment-indented.yaml")
    assert value(result, "launcher") == "kubernetes"
    assert value(result, "image.ref") == "vllm/vllm-openai:v0.11.0"
    assert value(result, "arg.model") == "/models/Llama-3.3-70B-Instruct-FP8"
    assert value(result, "arg.tensor_parallel_size") == "4"
    assert family(result, "env.") == {"HF_HUB_OFFLINE": "1", "VLLM_LOGGING_LEVEL": "DEBUG"}


def test_an_indented_compose_service_body_is_still_compose() -> None:
    text = (
        "  llm:\n    image: vllm/vllm-openai:latest\n    environment:\n      - HF_TOKEN=x\n"
        "    command: --model Qwen/Qwen3-4B\n    healthcheck:\n      test: [CMD, curl, -f, http://localhost:8000/health]\n"
    )
    result = parse(text, "snippet.yaml")
    assert value(result, "launcher") == "compose"
    assert value(result, "arg.model") == "Qwen/Qwen3-4B"


_POD = "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n    - name: vllm\n      image: vllm/vllm-openai:v0.7.3\n"


def test_sh_c_entrypoint_takes_the_first_args_item_as_its_script() -> None:
    # The script starts with the program itself: it must not be split into words (then `sh -c`
    # would run `vllm` alone), whatever form the item is written in.
    for args in (
        '      args: ["vllm serve mistralai/Mistral-7B-v0.3 --enable-chunked-prefill --max-num-seqs 32"]\n',
        "      args:\n        - >\n          vllm serve mistralai/Mistral-7B-v0.3\n"
        "          --enable-chunked-prefill --max-num-seqs 32\n",
        "      args:\n        - |\n          export VLLM_LOGGING_LEVEL=DEBUG\n"
        "          vllm serve mistralai/Mistral-7B-v0.3 \\\n            --enable-chunked-prefill --max-num-seqs 32\n",
    ):
        for command in (
            '      command: ["/bin/sh", "-c"]\n',
            "      command:\n        - bash\n        - -lc\n",
        ):
            result = parse(_POD + command + args, "pod.yaml")
            assert family(result, "arg.") == {
                "model": "mistralai/Mistral-7B-v0.3",
                "enable_chunked_prefill": "true",
                "max_num_seqs": "32",
            }, command + args


def test_sh_c_double_dash_folded_script_of_the_api_server_module() -> None:
    text = (
        _POD + '      command: ["sh", "-c", "--"]\n'
        "      args:\n        - >\n          python3 -m vllm.entrypoints.openai.api_server --model /mnt/models\n"
        "          --port 8080\n"
    )
    result = parse(text, "runtime.yaml")
    assert value(result, "launcher") == "kubernetes"
    assert family(result, "arg.") == {"model": "/mnt/models", "port": "8080"}


def test_a_literal_block_script_keeps_the_line_of_each_flag() -> None:
    text = (
        _POD + '      command: ["/bin/sh", "-c"]\n'
        "      args:\n        - |\n          vllm serve org/m-7b \\\n            --max-model-len 8192\n"
    )
    assert line(parse(text, "pod.yaml"), "arg.max_model_len") == 11


def test_compose_shell_entrypoint_with_the_script_in_command() -> None:
    text = (
        "services:\n  llm:\n    image: vllm/vllm-openai:v0.8.4\n"
        '    entrypoint: ["/bin/sh", "-c"]\n'
        '    command: ["vllm serve Qwen/Qwen2.5-3B-Instruct --max-model-len 4096"]\n'
    )
    assert family(parse(text, "compose.yaml"), "arg.") == {
        "model": "Qwen/Qwen2.5-3B-Instruct",
        "max_model_len": "4096",
    }


def test_without_a_shell_entrypoint_a_whole_command_item_is_still_split_with_a_note() -> None:
    for command in ("", '      command: ["bash", "--norc"]\n'):
        text = _POD + command + '      args: ["vllm serve org/m --max-model-len 2048"]\n'
        result = parse(text, "pod.yaml")
        assert any("holds a whole command line" in note for note in result.notes), command


def test_a_deployment_patch_with_only_an_args_list_is_read_for_what_it_holds():
    # a kustomize-style patch: no image, the program is the image's entrypoint
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: llm\nspec:\n  template:\n    spec:\n"
        '      containers:\n      - name: llm\n        args:\n        - "--model"\n        - Qwen/Qwen3-8B\n'
        "        - '--max-num-seqs'\n        - '64'\n        - --enable-prefix-caching\n"
    )
    assert looks_like(text) == "kubernetes"
    result = parse(text, "patch.yaml")
    assert value(result, "launcher") == "kubernetes"
    assert family(result, "arg.") == {
        "model": "Qwen/Qwen3-8B",
        "max_num_seqs": "64",
        "enable_prefix_caching": "true",
    }


def test_a_lone_command_list_is_a_compose_service_fragment():
    text = "command:\n  - mistralai/Mistral-7B-v0.3\n  - --kv-cache-dtype\n  - fp8\n  - '--hf-overrides'\n  - '{\"a\": 1}'\n"
    assert looks_like(text) == "compose"
    result = parse(text, "fragment.yaml")
    assert value(result, "launcher") == "compose"
    assert family(result, "arg.") == {
        "model": "mistralai/Mistral-7B-v0.3",
        "kv_cache_dtype": "fp8",
        "hf_overrides": '{"a": 1}',
    }


def test_an_args_list_of_options_every_server_has_is_no_vllm_launch():
    # llama.cpp's server takes --model / --host / --port too
    text = "args:\n  - --model\n  - /models/q4.gguf\n  - --port\n  - '8080'\n"
    assert looks_like(text) is None


def test_a_lone_args_list_with_equals_items_and_comments_is_a_container_fragment():
    text = (
        "args:\n  - '--port=8080'                 # Index 0\n  - '--model=/mnt/models'         # Index 1\n"
        "  - '--max-model-len'\n  - '32768'\n  - '--gpu-memory-utilization=0.85'\n"
    )
    assert looks_like(text) == "kubernetes"
    result = parse(text, "servingruntime.md")
    assert family(result, "arg.") == {
        "port": "8080",
        "model": "/mnt/models",
        "max_model_len": "32768",
        "gpu_memory_utilization": "0.85",
    }


HEREDOC_SCRIPT = """#!/bin/bash
# writes the manifests, then applies them
cat <<EOF > vllm-deploy.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm-cpu
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: ${REGISTRY}/vllm-cpu:arm64
        command: ["/bin/sh", "-c"]
        args: ["vllm serve Qwen/Qwen2.5-1.5B-Instruct --max_model_len 4096 --dtype bfloat16"]
EOF
kubectl apply -f vllm-deploy.yaml
"""


def test_a_manifest_written_by_a_shell_heredoc_is_read():
    result = parse(HEREDOC_SCRIPT, "install.sh")
    assert value(result, "launcher") == "kubernetes"
    assert value(result, "image.ref") == "${REGISTRY}/vllm-cpu:arm64"
    assert value(result, "arg.model") == "Qwen/Qwen2.5-1.5B-Instruct"
    assert family(result, "arg.")["max_model_len"] == "4096"
    assert line(result, "image.ref") == 13  # numbered as in the script


def test_a_quoted_heredoc_word_and_two_bodies_are_two_documents():
    script = (
        "kubectl apply -f - <<'YAML'\napiVersion: v1\nkind: Service\nmetadata:\n  name: vllm\nYAML\n"
        + HEREDOC_SCRIPT.split("\n", 2)[2]
    )
    result = parse(script, "install.sh")
    assert value(result, "arg.model") == "Qwen/Qwen2.5-1.5B-Instruct"


def test_a_heredoc_inside_a_block_scalar_leaves_the_manifest_alone():
    # must-not: an indented heredoc is the container's script, not the file's shell
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: v\nspec:\n  template:\n    spec:\n"
        "      containers:\n      - name: vllm\n        image: vllm/vllm-openai:v0.11.0\n"
        "        command: [bash, -c]\n        args:\n        - |\n          cat <<EOF > /tmp/chat.jinja\n"
        "          {{ messages }}\n          EOF\n          vllm serve Qwen/Qwen3-8B --chat-template /tmp/chat.jinja\n"
    )
    result = parse(text, "deploy.yaml")
    assert value(result, "image.ref") == "vllm/vllm-openai:v0.11.0"
    assert value(result, "arg.model") == "Qwen/Qwen3-8B"
