"""collect_env output (vLLM's and PyTorch's, flat and sectioned) → version facts, the GPU view of
the environment that ran it, pip packages, env.* knobs; each with the line it was read at."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_triage.parsers import collect_env
from vllm_triage.parsers.base import ParseResult

FIXTURES = Path(__file__).parent.parent / "fixtures" / "collect_env"


def read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def parse(name: str, scope: str = "gpu") -> ParseResult:
    return collect_env.parse(read(name), name, scope=scope)


def values(result: ParseResult) -> dict:
    return {name: sourced.value for name, sourced in {**result.knobs, **result.facts}.items()}


def line_of(result: ParseResult, name: str) -> int | None:
    found = result.facts.get(name) or result.knobs.get(name)
    assert found is not None, name
    return found.source.line


# ------------------------------------------------------------------------------ sectioned layout


def test_sectioned_vllm_0_11_reads_versions_gpus_and_env() -> None:
    result = parse("vllm-0.11.0-sectioned-h100x8.txt")
    got = values(result)
    assert result.kind == collect_env.KIND_SECTIONED
    assert got["vllm.version"] == "0.11.0"
    assert got["torch.version"] == "2.8.0+cu128"
    assert got["cuda.build"] == "12.8"
    assert got["cuda.runtime"] == "12.8.93"
    assert got["python.version"] == "3.12.11"
    assert got["os"] == "Ubuntu 22.04.5 LTS (x86_64)"
    assert got["gpu.driver_version"] == "570.158.01"
    assert got["gpu.gpu_models"] == ["NVIDIA H100 80GB HBM3"] * 8
    assert got["gpu.gpu_count"] == 8
    assert got["gpu.cuda_available"] is True
    assert result.notes == []


def test_sectioned_provenance_points_at_the_printed_lines() -> None:
    result = parse("vllm-0.11.0-sectioned-h100x8.txt")
    lines = read("vllm-0.11.0-sectioned-h100x8.txt").splitlines()
    assert lines[line_of(result, "torch.version") - 1].startswith("PyTorch version")
    assert lines[line_of(result, "gpu.driver_version") - 1].startswith("Nvidia driver version")
    assert lines[line_of(result, "gpu.gpu_models") - 1] == "GPU 0: NVIDIA H100 80GB HBM3"
    assert lines[line_of(result, "vllm.version") - 1].startswith("vLLM Version")
    assert result.facts["torch.version"].source.file == "vllm-0.11.0-sectioned-h100x8.txt"


def test_environment_section_is_deduplicated_and_kept_as_knobs() -> None:
    result = parse("vllm-0.11.0-sectioned-h100x8.txt")
    assert result.knobs["env.CUDA_VISIBLE_DEVICES"].value == "0,1,2,3,4,5,6,7"
    assert result.knobs["env.NCCL_DEBUG"].value == "INFO"
    assert result.knobs["env.VLLM_WORKER_MULTIPROC_METHOD"].value == "spawn"
    # printed twice (vLLM variable and CUDA prefix): the first line is the provenance
    first = (
        read("vllm-0.11.0-sectioned-h100x8.txt").splitlines().index("CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7")
        + 1
    )
    assert line_of(result, "env.CUDA_VISIBLE_DEVICES") == first
    # lscpu's "Key: value" lines and the topology legend never become env knobs
    assert all(name.startswith("env.") for name in result.knobs)
    assert "env.X" not in result.knobs


def test_pip_packages_nccl_and_topology() -> None:
    got = values(parse("vllm-0.11.0-sectioned-h100x8.txt"))
    assert got["nccl.version"] == "2.27.3"
    assert got["pip.torch"] == "2.8.0+cu128"
    assert got["pip.transformers"] == "4.57.1"
    assert got["pip.triton"] == "3.4.0"
    assert got["pip.flashinfer-python"] == "0.3.1.post1"
    assert got["pip.numpy"] == "2.2.6"
    # the CUDA toolkit wheels are summarised by torch's CUDA build, not listed one by one
    assert "pip.nvidia-cublas-cu12" not in got
    topology = parse("vllm-0.11.0-sectioned-h100x8.txt").facts["gpu.topology"]
    assert topology.value[1].startswith("GPU0 X NV18")
    assert topology.note == "8 GPU rows; links: NV18, PIX, SYS"


def test_dev_build_single_gpu_on_key_line_and_chinese_lscpu() -> None:
    result = parse("vllm-dev-sectioned-rtx4090-single-gpu-zh-lscpu.txt")
    got = values(result)
    assert got["vllm.version"] == "0.10.2rc2.dev41+g8c1f3e5d2.d20250903"
    assert result.facts["vllm.version"].note.endswith("(git sha: 8c1f3e5d2, date: 20250903)'")
    assert got["gpu.gpu_models"] == ["NVIDIA GeForce RTX 4090"]
    assert got["gpu.gpu_count"] == 1
    assert got["gpu.driver_version"] == "575.64.03"
    assert got["python.version"] == "3.11.13"  # "3.11.13 | packaged by conda-forge | …"
    assert got["cuda.build"] == "12.9"
    assert got["env.CUDA_HOME"] == "/usr/local/cuda-12.9"
    assert got["env.VLLM_ATTENTION_BACKEND"] == "FLASHINFER"
    # conda lines ("name version build channel") are not read as pip pins
    assert got["pip.torch"] == "2.8.0+cu129"
    # nothing from the localized lscpu dump leaks into the fingerprint
    families = ("vllm.", "torch.", "cuda.", "python.", "os", "gpu.", "nccl.", "pip.", "env.")
    assert all(name.startswith(families) for name in got)
    assert not any(value == "x86_64" or "i9-13900K" in str(value) for value in got.values())


def test_fragment_cut_in_cpu_info_keeps_what_was_shown_and_says_what_is_missing() -> None:
    result = parse("vllm-0.9.2-sectioned-h20x8-FRAGMENT.txt")
    got = values(result)
    assert got["torch.version"] == "2.7.0+cu126"
    assert got["gpu.gpu_count"] == 8
    assert got["gpu.driver_version"] == "550.144.03"
    assert "vllm.version" not in got
    assert not any(name.startswith("env.") for name in got)
    assert result.notes == [
        "output cut after the 'CPU Info' section: library versions, vLLM info, environment variables missing"
    ]


# ----------------------------------------------------------------------------------- flat layout


def test_flat_vllm_0_5_version_with_commit_and_french_lscpu() -> None:
    result = parse("vllm-0.5.4-flat-a100x2-fr-lscpu.txt")
    got = values(result)
    assert result.kind == collect_env.KIND_FLAT
    assert got["vllm.version"] == "0.5.4"
    assert got["torch.version"] == "2.4.0+cu121"
    assert got["cuda.build"] == "12.1"
    assert "cuda.runtime" not in got  # "Could not collect"
    assert got["gpu.gpu_models"] == ["NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB"]
    assert got["gpu.driver_version"] == "535.183.01"
    assert got["nccl.version"] == "2.20.5"
    assert result.facts["gpu.topology"].note == "2 GPU rows; links: NV12"
    assert not any(name.startswith("env.") for name in got)  # v0.5 printed no environment


def test_blockquoted_issue_paste_stops_env_at_the_fence() -> None:
    result = parse("vllm-0.6.3-flat-l40sx4-blockquoted-then-command.md")
    got = values(result)
    assert got["vllm.version"] == "0.6.3.post2.dev12+g1a2b3c4d"  # v0.6.x: "(git sha: …" unclosed
    assert got["gpu.gpu_count"] == 4
    assert got["os"] == "Rocky Linux 9.4 (Blue Onyx) (x86_64)"
    # the launch command after the closing fence is not part of the collected environment
    assert got["env.CUDA_VISIBLE_DEVICES"] == "0,1,2,3"
    assert got["env.NCCL_IB_DISABLE"] == "1"
    assert got["env.OMP_NUM_THREADS"] == "1"


def test_torch_collect_env_with_frozen_runpy_warning() -> None:
    result = parse("torch-collect-env-l4-frozen-runpy.txt")
    got = values(result)
    assert result.kind == collect_env.KIND_TORCH
    assert got["torch.version"] == "2.7.0+cu126"
    assert got["cuda.build"] == "12.6"
    assert got["gpu.gpu_models"] == ["NVIDIA L4"]
    assert got["gpu.gpu_count"] == 1
    assert got["gpu.driver_version"] == "560.35.05"
    assert got["python.version"] == "3.11.10"
    assert got["os"] == "Debian GNU/Linux 12 (bookworm) (x86_64)"
    assert "vllm.version" not in got
    assert any("torch.utils.collect_env" in note for note in result.notes)


def test_container_without_gpus_emits_no_gpu_view() -> None:
    got = values(parse("vllm-0.6.6-flat-container-no-cuda.txt"))
    for name in ("gpu.driver_version", "gpu.gpu_models", "gpu.gpu_count", "cuda.runtime"):
        assert name not in got
    assert got["gpu.cuda_available"] is False
    assert got["cuda.build"] == "12.4"
    assert got["vllm.version"] == "0.6.6.post1"
    assert got["env.NVIDIA_VISIBLE_DEVICES"] == "void"
    assert "gpu.topology" not in got  # "Could not collect"


def test_cpu_build_omits_cuda_build_none() -> None:
    got = values(parse("vllm-0.8.4-flat-cpu-build-arm64.txt"))
    assert "cuda.build" not in got
    assert got["torch.version"] == "2.6.0+cpu"
    assert got["vllm.version"] == "0.8.4+cpu"
    assert got["os"] == "Ubuntu 24.04.2 LTS (aarch64)"
    assert got["env.VLLM_CPU_KVCACHE_SPACE"] == "40"


def test_rocm_device_name_is_the_current_devices_model_without_a_count() -> None:
    # torch's get_gpu_info on ROCm prints device 0's name and gcnArchName once, however many
    # GPUs there are: the model is read, the count is not
    result = parse("vllm-0.7.3-flat-rocm-mi300x.txt")
    got = values(result)
    assert got["gpu.gpu_models"] == ["AMD Instinct MI300X (gfx942:sramecc+:xnack-)"]
    assert "gpu.gpu_count" not in got
    assert "count is not known" in (result.facts["gpu.gpu_models"].note or "")
    assert "gpu.driver_version" not in got
    assert "cuda.build" not in got  # N/A on a ROCm build
    assert got["vllm.version"] == "0.7.3.dev50+g6e1fc61f"
    assert got["env.PYTORCH_ROCM_ARCH"] == "gfx942"


def test_a_gpu_models_value_that_is_no_rocm_device_is_not_read() -> None:
    # must-not: a free-text value ("Could not collect", a vGPU note) is not a model
    text = "PyTorch version: 2.5.1+cu124\nGPU models and configuration: Could not collect\n"
    got = values(collect_env.parse(text, "collect_env.txt", scope="gpu"))
    assert "gpu.gpu_models" not in got


def test_scope_names_whose_view_the_gpu_facts_are() -> None:
    got = values(parse("vllm-0.11.0-sectioned-h100x8.txt", scope="container"))
    assert got["container.driver_version"] == "570.158.01"
    assert got["container.gpu_count"] == 8
    assert "container.topology" in got
    assert not any(name.startswith("gpu.") for name in got)


def test_crlf_paste_reads_the_same() -> None:
    text = read("vllm-0.5.4-flat-a100x2-fr-lscpu.txt")
    plain = values(collect_env.parse(text, "a"))
    crlf = values(collect_env.parse(text.replace("\n", "\r\n"), "a"))
    assert crlf == plain


# ---------------------------------------------------------------------------------- placeholder


def test_template_placeholder_means_the_section_is_missing() -> None:
    result = parse("issue-template-placeholder.md")
    assert result.kind == collect_env.KIND_PLACEHOLDER
    assert result.facts == {} and result.knobs == {}
    assert len(result.notes) == 1
    assert "line 7" in result.notes[0] and "missing" in result.notes[0]
    assert collect_env.looks_like(read("issue-template-placeholder.md"))


def test_placeholder_followed_by_real_output_is_read() -> None:
    text = "The output of `python collect_env.py`\n" + read("vllm-0.6.6-flat-container-no-cuda.txt")
    result = collect_env.parse(text, "issue.md")
    assert result.kind == collect_env.KIND_FLAT
    assert result.facts["vllm.version"].value == "0.6.6.post1"


@pytest.mark.parametrize(
    "printed, version",
    [
        ("0.11.1.dev12+g5ded9e9aa (git sha: 5ded9e9aa)", "0.11.1.dev12+g5ded9e9aa"),
        ("0.6.4.dev12+gabcdef1 (git sha: abcdef1", "0.6.4.dev12+gabcdef1"),
        ("0.5.4@4db5176d9758b720b05460c50ace3c01026eb158", "0.5.4"),
        ("0.9.0.1 (git sha: 1234567, date: 20250601)", "0.9.0.1"),
        ("0.17.1+8d2f.nv26.03.41", "0.17.1+8d2f.nv26.03.41"),
        ("N/A (dev)", None),
        ("N/A", None),
    ],
)
def test_vllm_version_strings(printed: str, version: str | None) -> None:
    assert collect_env.vllm_version(printed) == version


# ----------------------------------------------------------------------------------- looks_like


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir()))
def test_claims_every_collect_env_fixture(name: str) -> None:
    assert collect_env.looks_like(read(name))


VLLM_LOG = """\
INFO 05-01 10:00:01 [__init__.py:239] Automatically detected platform cuda.
INFO 05-01 10:00:03 [api_server.py:1043] vLLM API server version 0.8.5
INFO 05-01 10:00:03 [api_server.py:1044] args: Namespace(model='Qwen/Qwen2.5-7B-Instruct', tensor_parallel_size=2)
INFO 05-01 10:00:09 [config.py:717] This model supports multiple tasks: {'generate'}. Defaulting to 'generate'.
ERROR 05-01 10:01:12 [core.py:396] torch.OutOfMemoryError: CUDA out of memory.
"""
NVIDIA_SMI = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 570.133.20             Driver Version: 570.133.20     CUDA Version: 12.8     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |
+-----------------------------------------+------------------------+----------------------+
"""
LAUNCH = """\
CUDA_VISIBLE_DEVICES=0,1 vllm serve Qwen/Qwen2.5-7B-Instruct \\
    --tensor-parallel-size 2 --max-model-len 8192
"""
OPENAI_BODY = '{"model": "llama", "messages": [{"role": "user", "content": "PyTorch version: 2.1?"}]}'


@pytest.mark.parametrize("text", [VLLM_LOG, NVIDIA_SMI, LAUNCH, OPENAI_BODY, "", "hello\n"])
def test_does_not_claim_other_formats(text: str) -> None:
    assert not collect_env.looks_like(text)


def test_placeholder_inside_a_vllm_log_does_not_claim_the_log() -> None:
    text = "Your output of `python collect_env.py` here\n" + VLLM_LOG
    assert not collect_env.looks_like(text)


# ------------------------------------------------------------------------------------ fragments


def test_fragment_with_only_the_library_list_reads_the_packages() -> None:
    result = parse("fragment-libraries-only-flat.txt")
    got = values(result)
    assert got["pip.torch"] == "2.5.1" and line_of(result, "pip.torch") == 5
    assert got["nccl.version"] == "2.21.5" and got["pip.transformers"] == "4.47.1"
    assert "pip.numpy" in got and not any(name.startswith("gpu.") for name in got)
    assert result.notes == ["a piece of collect_env output: only library versions; the rest is not shown"]


def test_fragment_with_only_the_gpu_topology_counts_the_gpus() -> None:
    result = parse("fragment-gpu-topology-only.txt", scope="host")
    got = values(result)
    assert got["host.gpu_count"] == 4 and line_of(result, "host.gpu_count") == 2
    assert got["host.topology"][1] == "GPU0 X PHB SYS SYS 0-23,48-71 0 N/A"
    assert "only GPU topology" in result.notes[0]


def test_fragment_of_the_sectioned_vllm_info_section() -> None:
    result = parse("fragment-vllm-info-section-only.txt")
    got = values(result)
    assert got["vllm.version"] == "0.10.2" and line_of(result, "vllm.version") == 5
    assert got["gpu.gpu_count"] == 2
    assert result.kind == collect_env.KIND_SECTIONED
    assert "only the 'vllm info' section" in result.notes[0]
    assert not any("output cut after" in note for note in result.notes)  # nothing before it is "cut"


def test_fragment_with_the_flat_vllm_version_and_build_flags() -> None:
    result = parse("fragment-vllm-version-and-build-flags-flat.txt")
    assert values(result) == {"vllm.version": "0.6.4.post1"}
    assert "vLLM version, vLLM build flags" in result.notes[0]


def test_old_torch_only_collect_env() -> None:
    result = parse("torch-1.13-collect-env-old-layout.txt", scope="host")
    got = values(result)
    assert got["torch.version"] == "1.13.1+cu117" and got["cuda.build"] == "11.7"
    assert got["host.driver_version"] == "470.223.02"
    assert got["host.gpu_models"] == ["Tesla V100-SXM2-32GB"] * 2 and got["host.gpu_count"] == 2
    assert "vllm.version" not in got
    assert any("no vLLM section" in note for note in result.notes)


@pytest.mark.parametrize(
    "text",
    [
        "vLLM Version                 : 0.11.0\n",
        "==============================\n       PyTorch Info\n==============================\n",
        "[pip3] torch==2.8.0\n[pip3] vllm==0.11.0\n",
        "CUDA used to build PyTorch: 12.8\n",
    ],
)
def test_one_telling_line_of_collect_env_is_claimed(text: str) -> None:
    assert collect_env.looks_like(text)


@pytest.mark.parametrize(
    "text",
    [
        "[pip3] torch==2.8.0\n",  # one package line could be anything's
        "OS: Ubuntu 22.04\nPython version: 3.12\n",  # two generic keys: an issue's own prose
        "==============================\n  Results\n==============================\n",
        "pip freeze:\ntorch==2.8.0\nvllm==0.11.0\n",
    ],
)
def test_generic_lines_are_not_collect_env(text: str) -> None:
    assert not collect_env.looks_like(text)


# ------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00\x01\x02\xff\xfe binary \x00",
        bytes(range(256)).decode("latin-1"),
        "==============================\n",
        "==============================\nSystem Info\n",
        "GPU models and configuration:\n",
        "GPU Topology:",
        "vLLM Version: \nPyTorch version:",
        "x" * 100_000,
        VLLM_LOG,
    ],
)
def test_odd_input_never_raises(text: str) -> None:
    result = collect_env.parse(text, "odd.txt")
    assert isinstance(result, ParseResult)
    assert "vllm.version" not in result.facts


def test_wrong_format_is_reported_as_a_note() -> None:
    result = collect_env.parse(NVIDIA_SMI, "smi.txt")
    assert result.kind == collect_env.KIND_UNKNOWN
    assert result.facts == {} and result.knobs == {}
    assert result.notes


def test_a_long_line_of_spaces_without_a_colon_is_linear() -> None:
    # Fuzz finding: `key` (spaces allowed) then `\s*` split each run of spaces every way.
    import time

    from vllm_triage.parsers import collect_env

    started = time.process_time()
    collect_env.parse(
        "PyTorch version: 2.5.1\nIs CUDA available" + " " * 100_000 + "x: True\n", "c.txt", "host"
    )
    assert time.process_time() - started < 2.0


# --- a paste cut to its tail -----------------------------------------------------------------------

_TAIL = """\
[pip3] numpy==2.2.6
[pip3] torch==2.8.0+cu128
[pip3] transformers==4.56.1
[conda] Could not collect

==============================
         vLLM Info
==============================
ROCM Version                 : Could not collect
vLLM Version                 : 0.10.2
vLLM Build Flags:
  CUDA Archs: Not Set; ROCm: Disabled
GPU Topology:
        GPU0    GPU1    GPU2    GPU3    NIC0    CPU Affinity    NUMA Affinity   GPU NUMA ID
GPU0     X      NV12    NV12    NV12    PXB     0-23    0               N/A
GPU1    NV12     X      NV12    NV12    PXB     0-23    0               N/A
GPU2    NV12    NV1
"""


def test_tail_torch_from_the_pip_list_and_gpus_from_the_topology_header() -> None:
    result = collect_env.parse(_TAIL, "tail.txt")
    found = values(result)
    assert found["vllm.version"] == "0.10.2"
    assert found["torch.version"] == "2.8.0+cu128"
    assert result.facts["torch.version"].source.line == 2
    # the header row names every GPU; the rows below it were cut by the paste
    assert found["gpu.gpu_count"] == 4


def test_the_printed_pytorch_version_wins_over_the_pip_list() -> None:
    text = "PyTorch version: 2.8.0+cu128\n" + _TAIL.replace("torch==2.8.0+cu128", "torch==2.7.1")
    assert values(collect_env.parse(text, "x.txt"))["torch.version"] == "2.8.0+cu128"


def test_a_topology_header_cut_before_cpu_affinity_counts_only_whole_rows() -> None:
    text = "vLLM Version                 : 0.10.2\nGPU Topology:\n        GPU0    GPU1    GPU2\nGPU0     X      NV12\n"
    assert "gpu.gpu_count" not in values(collect_env.parse(text, "x.txt"))


def test_output_indented_inside_a_details_block_keeps_its_keys() -> None:
    # An issue body puts the output under <details>, every line indented by four spaces.
    text = (
        "<details>\n  <summary>Our environment</summary>\n\n"
        "    PyTorch version: 2.5.1+rocm6.2\n"
        "    Is debug build: False\n"
        "    CUDA used to build PyTorch: N/A\n"
        "    ROCM used to build PyTorch: 6.2.41133-dd7f95766\n\n"
        "    OS: Ubuntu 22.04.5 LTS (x86_64)\n"
        "    Python version: 3.12.8 (main, Dec  4 2024, 08:54:12) [GCC 11.4.0] (64-bit runtime)\n"
        "    GPU models and configuration: AMD Instinct MI250X/MI250 (gfx90a:sramecc+:xnack-)\n"
        "    Versions of relevant libraries:\n"
        "    [pip3] torch==2.5.1+rocm6.2\n"
        "    ROCM Version: 6.2.41133-dd7f95766\n"
        "    Neuron SDK Version: N/A\n"
        "    vLLM Version: 0.7.1.dev28+g0ad2ef5c\n"
        "</details>\n"
    )
    assert collect_env.looks_like(text)
    got = values(collect_env.parse(text, "env.md"))
    assert got["vllm.version"] == "0.7.1.dev28+g0ad2ef5c"
    assert got["python.version"] == "3.12.8"
    assert got["torch.version"] == "2.5.1+rocm6.2"
    assert got["os"] == "Ubuntu 22.04.5 LTS (x86_64)"
