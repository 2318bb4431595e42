"""What a vLLM log says about its own configuration: version, args, engine banner, backend."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from vllm_triage.parsers import vllm_log_config as vlc

FIXTURES = Path(__file__).parent.parent / "fixtures" / "vllm_log_config"


def read(name: str) -> str:
    # newline="" keeps the `\r\n` of multi-line records exactly as a real log has them.
    with open(FIXTURES / name, encoding="utf-8", newline="") as handle:
        return handle.read()


def parsed(name: str):
    return vlc.parse(read(name), name)


def facts(result) -> dict:
    return {name: sourced.value for name, sourced in result.facts.items()}


def knobs(result) -> dict:
    return {name: sourced.value for name, sourced in result.knobs.items()}


# ------------------------------------------------------------------------------------ looks_like


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir()))
def test_claims_every_log_fixture(name: str) -> None:
    assert vlc.looks_like(read(name))


def test_claims_a_bare_vllm_traceback() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 71, in __init__\n'
        "ValueError: No available memory for the cache blocks.\n"
    )
    assert vlc.looks_like(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00\x01\x02\xff" * 100,
        "HF_HOME=/data/hf\nVLLM_USE_V1=1\n",
        '{"model": "m", "messages": []}',
        "vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2\n",
        "Fri Mar  6 10:00:00 2026\n+-----------------------------------------------------------------------------------------+\n",
        "[rank0]:[E822 16:31:16.131931664 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout\n",
    ],
)
def test_does_not_claim_other_formats(text: str) -> None:
    assert not vlc.looks_like(text)


# -------------------------------------------------------------------------- 0.5: Namespace era


def test_v05_namespace_args_are_all_emitted_and_marked() -> None:
    result = parsed("v0.5_namespace.log")
    got = knobs(result)
    assert got["arg.model"] == "mistralai/Mistral-7B-Instruct-v0.2"
    assert got["arg.tensor_parallel_size"] == 2
    assert got["arg.gpu_memory_utilization"] == 0.92
    assert got["arg.enforce_eager"] is True
    assert got["arg.host"] is None  # defaults are there too
    assert got["arg.allowed_origins"] == ["*"]
    assert got["arg.served_model_name"] == ["mistral-7b"]
    assert len(got) > 80
    assert result.knobs["arg.model"].note == vlc.NAMESPACE_NOTE
    assert result.knobs["arg.model"].source.line == 2


def test_v05_engine_banner_closing_paren_and_old_spellings() -> None:
    result = parsed("v0.5_namespace.log")
    got = facts(result)
    assert got["engine.generation"] == "V0"
    assert got["engine.served_model_name"] == "mistral-7b"  # the banner's closing ")" is not part of it
    assert got["engine.dtype"] == "float16"  # torch.float16
    assert got["engine.load_format"] == "auto"  # LoadFormat.AUTO
    assert got["engine.tensor_parallel_size"] == 2
    assert got["engine.max_seq_len"] == 8192
    assert "engine.enable_prefix_caching" not in got  # 0.5 banners do not print it
    assert got["vllm.version"] == "0.5.0.post1"
    assert result.facts["vllm.version"].source.line == 1
    assert got["nccl.version"] == "2.20.5"
    assert result.facts["nccl.version"].source.line == 10  # first occurrence only
    assert got["attention.backend"] == "XFORMERS"
    assert "XFormers" in (result.facts["attention.backend"].note or "")


# ---------------------------------------------------------------- 0.6: V1 opt-in, `vllm serve`


def test_v06_opt_in_v1_engine_and_serve_namespace_plumbing() -> None:
    result = parsed("v0.6_v1_opt_in.log")
    got, args = facts(result), knobs(result)
    assert got["engine.generation"] == "V1"  # "an LLM engine" printed by v1/engine/core.py
    assert got["engine.enable_chunked_prefill"] is True  # despite the banner's missing comma
    assert got["engine.enable_prefix_caching"] is False
    assert args["arg.model"] == "microsoft/Phi-3.5-mini-instruct"
    assert "arg.dispatch_function" not in args and "arg.subparser" not in args and "arg.model_tag" not in args
    assert args["arg.config_format"] == "<ConfigFormat.AUTO: 'auto'>"  # non-literal repr kept as text
    assert args["arg.enable_prefix_caching"] is None


# --------------------------------------------------------------- 0.9: non-default args, docker -t


def test_v09_non_default_args_with_function_repr() -> None:
    result = parsed("v0.9_docker_timestamps.log")
    args = knobs(result)
    assert args["arg.model"] == "Qwen/Qwen3-32B-AWQ"
    assert args["arg.port"] == 8080
    assert args["arg.tensor_parallel_size"] == 2
    assert args["arg.gpu_memory_utilization"] == 0.9
    assert args["arg.enable_prefix_caching"] is False
    assert args["arg.served_model_name"] == ["qwen3-32b"]
    assert args["arg.rope_scaling"] == {
        "rope_type": "yarn",
        "factor": 4.0,
        "original_max_position_embeddings": 32768,
    }
    assert "arg.dispatch_function" not in args and "arg.model_tag" not in args
    assert result.knobs["arg.port"].note == vlc.NON_DEFAULT_NOTE
    assert result.knobs["arg.port"].source.line == 4


def test_v09_engine_banner_and_facts_through_docker_timestamps() -> None:
    result = parsed("v0.9_docker_timestamps.log")
    got = facts(result)
    assert got["vllm.version"] == "0.9.2"
    assert got["platform"] == "cuda"
    assert result.facts["platform"].source.line == 2
    assert got["engine.generation"] == "V1"
    assert got["engine.quantization"] == "awq_marlin"
    assert got["engine.dtype"] == "float16"
    assert got["engine.enable_prefix_caching"] is False
    assert got["engine.tensor_parallel_size"] == 2
    assert got["engine.served_model_name"] == "qwen3-32b"
    assert got["nccl.version"] == "2.26.2"
    assert result.facts["nccl.version"].source.line == 14
    assert got["attention.backend"] == "FLASH_ATTN"


# ----------------------------------------------------- 0.16: "serving model" line, journald, cut


def test_v016_server_version_line_under_journald_and_cut_args() -> None:
    result = parsed("v0.16_server_version_line.log")
    got, args = facts(result), knobs(result)
    assert got["vllm.version"] == "0.16.0"
    assert got["vllm.model"] == "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8"
    assert args["arg.max_num_batched_tokens"] == 8192
    assert args["arg.data_parallel_size"] == 2
    assert "arg.seed" not in args  # the last pair may be cut mid-number: not trusted
    assert any("cut" in note for note in result.notes)


# --------------------------------------------------------------- 0.17: logo, colours, compose


def test_v017_logo_through_colours_and_compose_prefix() -> None:
    result = parsed("v0.17_logo_compose_color.log")
    got = facts(result)
    assert got["vllm.version"] == "0.17.1"
    assert result.facts["vllm.version"].source.line == 3
    assert got["vllm.model"] == "meta-llama/Llama-4-Scout-17B-16E-Instruct"
    assert result.facts["vllm.model"].source.line == 4


def test_v017_non_literal_reprs_are_scanned_tolerantly() -> None:
    args = knobs(parsed("v0.17_logo_compose_color.log"))
    assert args["arg.tensor_parallel_size"] == 4
    assert args["arg.served_model_name"] == ["scout", "llama4"]
    assert args["arg.limit_mm_per_prompt"] == {"image": 4}
    assert args["arg.override_generation_config"] == {"temperature": 0.6, "top_p": 0.9}
    assert args["arg.lora_modules"].startswith("[LoRAModulePath(name='sql-adapter', path='/adapters/sql, v2'")
    assert args["arg.compilation_config"].startswith("{'mode': <CompilationMode.VLLM_COMPILE: 3>")
    assert args["arg.kv_cache_dtype"] == "fp8"


def test_v017_engine_banner_with_nested_reprs() -> None:
    result = parsed("v0.17_logo_compose_color.log")
    got = facts(result)
    assert got["engine.tensor_parallel_size"] == 4
    assert got["engine.enable_prefix_caching"] is True  # V1 default, visible only in the banner
    assert got["engine.kv_cache_dtype"] == "fp8"
    assert got["engine.max_seq_len"] == 131072
    assert got["engine.seed"] == 0
    assert got["engine.served_model_name"] == "scout"
    assert result.facts["engine.model"].source.line == 10
    assert got["nccl.version"] == "2.28.3"
    assert got["attention.backend"] == "FLASHINFER"
    assert result.facts["attention.backend"].note is None


# -------------------------------------------------------------------------- prefixes and shapes


@pytest.mark.parametrize(
    "line",
    [
        "INFO 03-02 10:11:12 [pynccl.py:70] vLLM is using nccl==2.21.5",
        "INFO 03-02 10:11:12 pynccl.py:70] vLLM is using nccl==2.21.5",
        "(VllmWorker TP0 pid=5) INFO 03-02 10:11:12 [pynccl.py:70] vLLM is using nccl==2.21.5",
        "(APIServer pid=100) (EngineCore_0 pid=200) INFO 03-02 10:11:12 [pynccl.py:70] vLLM is using nccl==2.21.5",
        "\x1b[36m(RayWorkerWrapper pid=4711, ip=10.1.2.3)\x1b[0m INFO 03-02 10:11:12 pynccl.py:63] vLLM is using nccl==2.21.5",
        "(pid=4700, ip=10.1.2.3) INFO 03-02 10:11:12 pynccl.py:63] vLLM is using nccl==2.21.5",
        "2025-03-02T17:11:12.123456789Z stdout F INFO 03-02 10:11:12 [pynccl.py:70] vLLM is using nccl==2.21.5",
        "2025-03-02T17:11:12+00:00 vllm-1  | INFO 03-02 10:11:12 [pynccl.py:70] vLLM is using nccl==2.21.5",
        "Mar 02 10:11:12 node7 vllm[991]: INFO 03-02 10:11:12 [pynccl.py:70] vLLM is using nccl==2.21.5",
        "мар 02 10:11:12 node7 vllm[991]: INFO 03-02 10:11:12 [pynccl.py:70] vLLM is using nccl==2.21.5",
    ],
)
def test_every_prefix_shape_is_stripped(line: str) -> None:
    result = vlc.parse("first line\n" + line + "\n", "x.log")
    assert facts(result)["nccl.version"] == "2.21.5"
    assert result.facts["nccl.version"].source.line == 2


def test_strip_line_returns_message_and_logger_file() -> None:
    raw = "\x1b[0;36m(EngineCore_DP0 pid=9)\x1b[0;0m \x1b[32mINFO\x1b[0m 03-02 10:11:12 [core.py:94] hello\r"
    assert vlc.strip_line(raw) == ("hello", "core.py")


@pytest.mark.parametrize(
    ("message", "backend"),
    [
        ("Using Flash Attention backend.", "FLASH_ATTN"),
        ("Using FlashInfer backend on V1 engine.", "FLASHINFER"),
        ("Using Triton backend on V1 engine.", "TRITON_ATTN"),
        (
            "Using FLASH_ATTN attention backend out of potential backends: ('FLASH_ATTN', 'FLASHINFER')",
            "FLASH_ATTN",
        ),
        ("Using TRITON_ATTN backend.", "TRITON_ATTN"),
    ],
)
def test_attention_backend_spellings(message: str, backend: str) -> None:
    noise = "INFO 03-02 10:11:12 [cuda_communicator.py:264] Using ['PYNCCL'] all-reduce backends out of potential backends: ['NCCL']\n"
    result = vlc.parse(noise + f"INFO 03-02 10:11:13 [cuda.py:378] {message}\n", "x.log")
    assert facts(result)["attention.backend"] == backend
    assert result.facts["attention.backend"].source.line == 2


def test_v0_engine_banner_and_mid_era_version_banner() -> None:
    text = (
        "INFO 04-18 14:12:51 api_server.py:840] vLLM API server version 0.7.3\n"
        "INFO 04-18 14:19:58 llm_engine.py:234] Initializing a V0 LLM engine (v0.7.3) with config: "
        "model='Qwen/Qwen2.5-14B-Instruct', tokenizer='Qwen/Qwen2.5-14B-Instruct', dtype=torch.float16, "
        "max_seq_len=32768, tensor_parallel_size=2, pipeline_parallel_size=1, quantization=None, "
        "enforce_eager=False, kv_cache_dtype=auto, seed=0, served_model_name=Qwen/Qwen2.5-14B-Instruct, "
        "enable_prefix_caching=False, use_cached_outputs=True, \n"
    )
    got = facts(vlc.parse(text, "x.log"))
    assert got["engine.generation"] == "V0"
    assert got["engine.pipeline_parallel_size"] == 1
    assert got["engine.enable_prefix_caching"] is False
    assert got["vllm.version"] == "0.7.3"


def test_version_from_engine_banner_alone() -> None:
    text = "(EngineCore pid=4054) INFO 05-02 13:34:17 [core.py:105] Initializing a V1 LLM engine (v0.19.1) with config: model='m', seed=None\n"
    result = vlc.parse(text, "x.log")
    assert facts(result)["vllm.version"] == "0.19.1"
    assert result.facts["vllm.version"].note == "engine banner"
    assert facts(result)["engine.seed"] is None


def test_cut_engine_banner_keeps_whole_pairs() -> None:
    text = 'INFO 01-01 00:00:00 [core.py:1] Initializing a V1 LLM engine (v0.10.1) with config: model=\'m\', tensor_parallel_size=8, compilation_config={"level":3,"cudagraph_capture_si\n'
    result = vlc.parse(text, "x.log")
    assert facts(result)["engine.tensor_parallel_size"] == 8
    assert any("cut" in note for note in result.notes)


# ------------------------------------------------------------------------------------- big logs


def test_big_log_only_marker_lines_are_read() -> None:
    startup = read("v0.9_docker_timestamps.log")
    serving = 'INFO:     10.0.0.5:40312 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n' * 400_000
    late = "INFO 07-09 18:00:00 [pynccl.py:70] vLLM is using nccl==9.9.9\n"
    text = startup + serving + late
    started = time.perf_counter()
    result = vlc.parse(text, "big.log")
    elapsed = time.perf_counter() - started
    assert facts(result)["nccl.version"] == "2.26.2"  # the first occurrence, not the late one
    assert facts(result)["vllm.version"] == "0.9.2"
    assert elapsed < 5.0


def test_marker_far_down_a_big_log_gets_the_right_line() -> None:
    filler = (
        "INFO 07-09 14:02:00 [loggers.py:118] Engine 000: Avg prompt throughput: 0.0 tokens/s\n" * 100_000
    )
    text = filler + "INFO 07-09 14:02:01 [api_server.py:1395] vLLM API server version 0.8.5\n"
    result = vlc.parse(text, "x.log")
    assert result.facts["vllm.version"].source.line == 100_001


# ------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00\x01\x02\xff" * 100,
        "just prose\n",
        "INFO 01-01 00:00:00 [utils.py:1] non-default args: {{{{[[[((\n",
        "INFO 01-01 00:00:00 [utils.py:1] non-default args: \n",
        "INFO 01-01 00:00:00 [api_server.py:1] args: Namespace(\n",
        "INFO 01-01 00:00:00 [core.py:1] Initializing a V1 LLM engine (v1) with config: \n",
        "INFO 01-01 00:00:00 [utils.py:1] non-default args: {'a': " + "[" * 5000 + "\n",
    ],
)
def test_bad_input_gives_no_exception(text: str) -> None:
    result = vlc.parse(text, "bad.log")
    assert "arg.model" not in result.knobs
    assert result.kind == vlc.KIND
