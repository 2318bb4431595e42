"""Ray Serve LLM configs: Python LLMConfig(...) and serve YAML, standalone or in a RayService."""

from __future__ import annotations

from launch_helpers import family, line, read, value

from vllm_triage.parsers.launch import looks_like, parse


def test_python_llm_config_with_dict_calls_constants_and_runtime_env():
    result = read("ray-serve-llm-app.py")
    assert result.kind == "launch_command.ray_serve_llm"
    assert value(result, "launcher") == "ray_serve_llm"
    assert family(result, "arg.") == {
        "model": "Qwen/Qwen3-32B",
        "served_model_name": "qwen3-32b",
        "tensor_parallel_size": "4",
        "max_model_len": "16384",  # from the module constant MAX_LEN
        "enable_chunked_prefill": "true",
        "gpu_memory_utilisation": "0.9",
    }
    assert line(result, "arg.max_model_len") == 19
    assert value(result, "container.gpus") == "4"
    assert value(result, "container.accelerator_type") == "H100"
    assert family(result, "env.") == {"VLLM_USE_V1": "1", "NCCL_P2P_DISABLE": "1"}
    assert [p.id for p in result.problems] == ["unknown-flag"]
    assert "gpu_memory_utilization" in result.problems[0].message


def test_serve_yaml_llm_configs_first_model_read_gpus_are_tp_times_pp():
    result = read("ray-serve-llm-config.yaml")
    assert value(result, "launcher") == "ray_serve_llm"
    assert family(result, "arg.") == {
        "model": "google/gemma-3-27b-it",
        "served_model_name": "gemma",
        "tensor_parallel_size": "2",
        "pipeline_parallel_size": "2",
        "max_model_len": "8192",
        "limit_mm_per_prompt": '{"image": 2}',
    }
    assert value(result, "container.gpus") == "4"
    assert family(result, "env.") == {"HF_HUB_ENABLE_HF_TRANSFER": "1"}
    assert any("another LLMConfig (small)" in note for note in result.notes)


def test_rayservice_serve_config_string_keeps_line_numbers_of_the_outer_file():
    text = (
        "apiVersion: ray.io/v1\nkind: RayService\nmetadata:\n  name: llm\nspec:\n  serveConfigV2: |\n"
        "    applications:\n      - name: llm\n        import_path: ray.serve.llm:build_openai_app\n"
        "        args:\n          llm_configs:\n            - model_loading_config:\n"
        "                model_id: mistralai/Mistral-7B-Instruct-v0.2\n              engine_kwargs:\n"
        "                max_model_len: 4096\n  rayClusterConfig:\n    headGroupSpec:\n      template:\n"
        "        spec:\n          containers:\n            - name: ray-head\n"
        "              image: rayproject/ray-llm:2.52.0-py311-cu128\n"
    )
    assert looks_like(text) == "ray_serve_llm"
    result = parse(text, "rayservice.yaml")
    assert family(result, "arg.") == {"model": "mistralai/Mistral-7B-Instruct-v0.2", "max_model_len": "4096"}
    assert line(result, "arg.max_model_len") == 15
    assert value(result, "container.gpus") == "1"
    assert (
        value(result, "image.ref") == "rayproject/ray-llm:2.52.0-py311-cu128"
        and line(result, "image.ref") == 22
    )


def test_a_python_fragment_from_an_issue_is_read_call_by_call():
    text = (
        "Here is what I run in my notebook:\n\nllm_config = LLMConfig(\n"
        '    model_loading_config={"model_id": "llama", "model_source": "meta-llama/Llama-3.1-8B-Instruct"},\n'
        '    engine_kwargs={"max_model_len": 8192, "enforce_eager": True, "tensor_parallel_size": 2},\n'
        ")\nand then it fails with\n"
    )
    result = parse(text, "issue.md")
    assert family(result, "arg.")["enforce_eager"] == "true"
    assert value(result, "container.gpus") == "2"
    assert line(result, "arg.max_model_len") == 5


def test_a_fragment_with_prose_a_cut_call_and_comments_reads_the_whole_call():
    # An apostrophe in the prose, a call cut short before the real one, a bracket in a comment
    # and in a string: none of them may move the end of the call that is there in full.
    text = (
        "I'm on ray 2.44 (latest) and this didn't work:\n"
        "broken = LLMConfig(model_loading_config=dict(model_id='x'\n"
        "llm_config = LLMConfig(  # tuned (see below\n"
        '    model_loading_config={"model_id": "q", "model_source": "Qwen/Qwen3-8B"},\n'
        '    engine_kwargs={"max_model_len": 4096, "chat_template": "{{ x ) }}"},\n'
        ")\n"
    )
    result = parse(text, "issue.md")
    assert family(result, "arg.")["max_model_len"] == "4096"
    assert line(result, "arg.max_model_len") == 5


def test_many_unclosed_calls_are_read_in_linear_time():
    # Fuzz finding (seed 11): 9,835 `LLMConfig(` never closed in 246 KB; scanning from each of
    # them to the end of the text never finished.
    import time

    def cost(calls: int) -> float:
        started = time.process_time()
        parse("x = 1\n" + "c = LLMConfig(model_loading_config=dict(\n" * calls, "frag.py")
        return time.process_time() - started

    small, big = cost(500), cost(5_000)
    # 10 times the calls: linear is about 10 times the time, the old scan about 100.
    assert big < 25 * small + 0.5


def test_python_that_is_not_ray_serve_llm_is_no_launch():
    assert looks_like("from vllm import LLM\nllm = LLM(model='facebook/opt-125m')\n") is None


def test_ray_config_classes_are_read_like_dicts_and_computed_calls_are_not():
    text = (
        "from ray import serve\n"
        "from ray.serve.llm import LLMConfig, ModelLoadingConfig, build_openai_app\n"
        "import os\n\n"
        "cfg = LLMConfig(\n"
        "    model_loading_config=ModelLoadingConfig(\n"
        '        model_id="mistral-small",\n'
        '        model_source="mistralai/Mistral-Small-3.1-24B-Instruct-2503",\n'
        "    ),\n"
        '    engine_kwargs={"tensor_parallel_size": 2, "max_model_len": os.environ.get("LEN")},\n'
        '    runtime_env={"env_vars": {"HF_HUB_ENABLE_HF_TRANSFER": "1"}},\n'
        ")\n"
        'app = build_openai_app({"llm_configs": [cfg]})\n'
    )
    result = parse(text, "serve_app.py")
    assert value(result, "launcher") == "ray_serve_llm"
    assert value(result, "arg.model") == "mistralai/Mistral-Small-3.1-24B-Instruct-2503"
    assert value(result, "arg.served_model_name") == "mistral-small"
    assert line(result, "arg.model") == 8
    assert value(result, "arg.tensor_parallel_size") == "2"
    assert "arg.max_model_len" not in result.knobs  # computed at run time: not a literal
    assert any("computed in Python" in note for note in result.notes)
    assert family(result, "env.") == {"HF_HUB_ENABLE_HF_TRANSFER": "1"}


def test_a_call_with_positional_arguments_is_no_config_record():
    text = (
        "from ray.serve.llm import LLMConfig\n"
        "cfg = LLMConfig(model_loading_config=make_loading_config('org/model'), engine_kwargs={})\n"
    )
    assert "arg.model" not in parse(text, "app.py").knobs
