"""Each compatibility and hygiene check, firing and not firing, on bundles written for these tests
(tests/fixtures/bundles/; variations are copies with one file changed)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fingerprint_helpers import BUNDLES, finding, ids, run

# --- short artefacts for the variations ------------------------------------------------------------

L40S_550_CSV = """
    $ nvidia-smi --query-gpu=index,name,driver_version,memory.used,memory.total --format=csv
    index, name, driver_version, memory.used [MiB], memory.total [MiB]
    0, NVIDIA L40S, 550.127.05, 1 MiB, 46068 MiB
    1, NVIDIA L40S, 550.127.05, 1 MiB, 46068 MiB
    """
H200_X4_LIST = """
    root@5e1a7c9b3d2f:/vllm-workspace# nvidia-smi -L
    GPU 0: NVIDIA H200 (UUID: GPU-5b0c3e1f-7a2d-4c9e-8f1b-2d3e4f5a6b7c)
    GPU 1: NVIDIA H200 (UUID: GPU-6c1d4f2a-8b3e-4dae-9a2c-3e4f5a6b7c8d)
    GPU 2: NVIDIA H200 (UUID: GPU-7d2e5a3b-9c4f-4ebf-8b3d-4f5a6b7c8d9e)
    GPU 3: NVIDIA H200 (UUID: GPU-8e3f6b4c-ad5a-4fc0-9c4e-5a6b7c8d9eaf)
    """


def serve(*args: str, image: str = "vllm/vllm-openai:v0.10.1.1", gpus: str = "all") -> str:
    return f"docker run -d --gpus {gpus} --ipc=host {image} \\\n    " + " ".join(args) + "\n"


# --- driver vs the image's CUDA build ----------------------------------------------------------------


def test_cu130_image_on_r575_host_is_not_a_base() -> None:
    found = run(BUNDLES / "cu130-image-r575-node")
    check = finding(found, "driver-too-old-for-cuda")
    assert check.severity == "error"
    assert "CUDA 13.0" in check.message and "r580" in check.message and "575.57.08" in check.message
    assert "-cu129" in check.advice
    files = {(Path(e.file).name, e.line) for e in check.evidence}
    assert ("nvidia-smi-host.txt", 4) in files  # the driver banner
    assert ("launch.sh", 5) in files  # the image reference
    assert found.value("cuda.build") == "13.0"
    assert found.value("image.min_driver") == "580.65.06"


def test_default_cu129_image_runs_on_r575(scratch: Callable[..., Path]) -> None:
    launch = (BUNDLES / "cu130-image-r575-node" / "launch.sh").read_text().replace("v0.17.1-cu130", "v0.17.1")
    found = run(scratch("cu130-image-r575-node", {"launch.sh": launch}))
    assert "driver-too-old-for-cuda" not in ids(found)
    assert found.value("cuda.build") == "12.9"
    assert "default CUDA" in (found.facts["cuda.build"].note or "")


def test_cu128_image_on_r550_fires_through_minor_version_compat(scratch: Callable[..., Path]) -> None:
    found = run(scratch(files={"nvidia-smi-host.csv": L40S_550_CSV, "launch.sh": serve("--model /models/m")}))
    check = finding(found, "driver-too-old-for-cuda")
    assert "minor-version compatibility" in check.message
    assert found.value("cuda.build") == "12.8"  # v0.10.1.1's default image


def test_pinned_r580_baseline_has_no_finding() -> None:
    assert run(BUNDLES / "pinned-baseline").findings == []


# --- the container's view vs the host's ---------------------------------------------------------------


def test_driver_inside_differs_from_host() -> None:
    check = finding(run(BUNDLES / "driver-inside-differs"), "container-driver-differs")
    assert "570.133.20" in check.message and "580.95.05" in check.message
    assert len(check.evidence) == 2


def test_no_gpu_in_container() -> None:
    found = run(BUNDLES / "gpus-not-passed")
    check = finding(found, "no-gpu-in-container")
    assert check.severity == "error"
    assert "NVIDIA_VISIBLE_DEVICES" in check.advice and "--gpus" in check.advice
    assert "before any memory setting" in check.advice
    parallel = finding(found, "fewer-gpus-than-parallel")
    assert "needs 4 GPUs but only 0" in parallel.message


def test_fewer_gpus_in_container_than_on_host(scratch: Callable[..., Path]) -> None:
    host = (BUNDLES / "kimi-k3-off-recipe" / "nvidia-smi-host.txt").read_text()  # 8 GPUs
    bundle = {
        "nvidia-smi-host.txt": host,
        "nvidia-smi-container.txt": H200_X4_LIST,
        "launch.sh": serve("--model /models/m"),
    }
    check = finding(run(scratch(files=bundle)), "fewer-gpus-in-container")
    assert "sees 4 GPU(s), the host has 8" in check.message
    # Four GPUs selected on purpose: no finding.
    bundle["launch.sh"] = serve("--model /models/m", gpus="'\"device=0,1,2,3\"'")
    assert "fewer-gpus-in-container" not in ids(run(scratch(files=bundle)))


def test_fewer_gpus_than_tensor_times_pipeline(scratch: Callable[..., Path]) -> None:
    two = "'\"device=0,1\"'"
    found = run(scratch(files={"launch.sh": serve("--model /models/m -tp 2 -pp 2", gpus=two)}))
    check = finding(found, "fewer-gpus-than-parallel")
    assert check.severity == "error"
    assert "tensor parallel 2 × pipeline parallel 2 needs 4 GPUs but only 2" in check.message
    assert all(Path(e.file).name == "launch.sh" and e.line for e in check.evidence)
    ok = run(scratch(files={"launch.sh": serve("--model /models/m -tp 2", gpus=two)}))
    assert "fewer-gpus-than-parallel" not in ids(ok)
    ray = run(
        scratch(
            files={
                "launch.sh": serve(
                    "--model /models/m -tp 2 -pp 2 --distributed-executor-backend ray", gpus=two
                )
            }
        )
    )
    assert finding(ray, "fewer-gpus-than-parallel").severity == "info"  # the rest may be on other nodes


def test_cuda_visible_devices_limits_the_gpus(scratch: Callable[..., Path]) -> None:
    found = run(
        scratch(files={"run.sh": "CUDA_VISIBLE_DEVICES=3 vllm serve /models/m --tensor-parallel-size 2\n"})
    )
    assert "CUDA_VISIBLE_DEVICES=3" in finding(found, "fewer-gpus-than-parallel").message


# --- a shared node -------------------------------------------------------------------------------------


def test_gpu_occupied_names_gpu_and_mib() -> None:
    check = finding(run(BUNDLES / "shared-gpu-node"), "gpu-occupied")
    assert check.severity == "warning"
    assert "GPU 1: 61234 MiB of 143771 MiB" in check.message and "pid 2211" in check.message
    assert "GPU 0" not in check.message


def test_idle_gpus_are_not_occupied() -> None:
    assert not {"gpu-occupied", "gpu-occupied-by-vllm"} & set(ids(run(BUNDLES / "pinned-baseline")))


def test_gpus_held_by_vllm_itself(scratch: Callable[..., Path]) -> None:
    table = (BUNDLES / "shared-gpu-node" / "nvidia-smi-host.txt").read_text()
    table = table.replace("python                               ", "VLLM::Worker_TP1                     ")
    found = run(scratch("shared-gpu-node", {"nvidia-smi-host.txt": table}))
    assert "gpu-occupied" not in ids(found)
    assert "while the server ran" in finding(found, "gpu-occupied-by-vllm").message


# --- model recipes -------------------------------------------------------------------------------------


def test_kimi_k3_off_recipe() -> None:
    check = finding(run(BUNDLES / "kimi-k3-off-recipe"), "recipe-not-met")
    for expected in ("Kimi K3", "GB300", "kimi-k3", "r580", "--load-format"):
        assert expected in check.message
    assert "tensor-parallel-size" not in check.message  # that one is met
    assert "--trust-remote-code" not in check.message


def test_kimi_k3_by_the_recipe() -> None:
    assert run(BUNDLES / "kimi-k3-recipe").findings == []


def test_deepseek_r1_on_too_few_gpus(scratch: Callable[..., Path]) -> None:
    host = (BUNDLES / "cu130-image-r575-node" / "nvidia-smi-host.txt").read_text()  # 4x H100 80GB
    launch = "vllm serve deepseek-ai/DeepSeek-R1-0528 --tensor-parallel-size 4 --revision abc123\n"
    check = finding(run(scratch(files={"nvidia-smi-host.txt": host, "launch.sh": launch})), "recipe-not-met")
    assert "spread over 4 GPU(s)" in check.message and "--trust-remote-code is not given" in check.message
    assert "GiB" in check.message  # 4 x 80 GB is far below the FP8 weights


def test_distilled_deepseek_is_not_the_big_recipe(scratch: Callable[..., Path]) -> None:
    launch = "vllm serve deepseek-ai/DeepSeek-R1-Distill-Llama-70B --tensor-parallel-size 4 --revision abc\n"
    assert "recipe-not-met" not in ids(run(scratch(files={"launch.sh": launch})))


# --- hygiene of a baseline -----------------------------------------------------------------------------


def test_debug_variables_left_in_the_command() -> None:
    found = run(BUNDLES / "debug-left-on")
    flagged = {f.message.split("=", 1)[0] for f in found.findings if f.id == "debug-variable-set"}
    assert {"NCCL_DEBUG", "CUDA_LAUNCH_BLOCKING", "VLLM_LOGGING_LEVEL", "TORCH_NCCL_BLOCKING_WAIT"} <= flagged
    assert "NCCL_VERSION" not in flagged and "HF_HOME" not in flagged
    debug = next(f for f in found.findings if f.message.startswith("VLLM_LOGGING_LEVEL="))
    assert debug.severity == "warning" and Path(debug.evidence[0].file).name == "launch.sh"


def test_more_debug_variables(scratch: Callable[..., Path]) -> None:
    launch = (
        "VLLM_TRACE_FUNCTION=1 TORCH_USE_CUDA_DSA=1 NCCL_P2P_DISABLE=1 VLLM_LOGGING_LEVEL=INFO "
        "vllm serve /models/m --no-enable-prefix-caching\n"
    )
    found = run(scratch(files={"launch.sh": launch}))
    flagged = {f.message.split("=", 1)[0] for f in found.findings if f.id == "debug-variable-set"}
    assert flagged == {
        "VLLM_TRACE_FUNCTION",
        "TORCH_USE_CUDA_DSA",
        "NCCL_P2P_DISABLE",
    }  # INFO is no debug level


def test_clean_command_has_no_debug_variable() -> None:
    assert "debug-variable-set" not in ids(run(BUNDLES / "kimi-k3-recipe"))


def test_vllm_own_nccl_cumem_setting_is_not_flagged(scratch: Callable[..., Path]) -> None:
    # collect_env inside vLLM 0.10.1.1 shows NCCL_CUMEM_ENABLE=0: vLLM set it itself at import.
    assert "debug-variable-set" not in ids(run(BUNDLES / "log-vs-command"))
    found = run(scratch(files={"launch.sh": "NCCL_CUMEM_ENABLE=0 vllm serve /models/m\n"}))
    assert "NCCL_CUMEM_ENABLE=0" in finding(found, "debug-variable-set").message


def test_prefix_caching_switched_on() -> None:
    check = finding(run(BUNDLES / "debug-left-on"), "prefix-caching-on")
    assert check.severity == "warning" and Path(check.evidence[0].file).name == "launch.sh"


def test_prefix_caching_on_by_default_in_v1(scratch: Callable[..., Path]) -> None:
    found = run(BUNDLES / "gpus-not-passed")  # v0.9.2 image, no flag
    assert "V1" in finding(found, "prefix-caching-on-by-default").message
    old = run(scratch(files={"launch.sh": serve("--model /models/m", image="vllm/vllm-openai:v0.6.3")}))
    assert not any(i.startswith("prefix-caching") for i in ids(old))
    v0_forced = "docker run -d --gpus all -e VLLM_USE_V1=0 vllm/vllm-openai:v0.8.5 --model /models/m\n"
    v0 = run(scratch(files={"launch.sh": v0_forced}))
    assert not any(i.startswith("prefix-caching") for i in ids(v0))
    assert not any(i.startswith("prefix-caching") for i in ids(run(BUNDLES / "pinned-baseline")))


def test_nccl_inherited_from_the_cluster() -> None:
    check = finding(run(BUNDLES / "debug-left-on"), "nccl-inherited")
    assert "NCCL_IB_DISABLE=1" in check.message and "NCCL_SOCKET_IFNAME=ib0" in check.message
    assert "NCCL_VERSION" not in check.message  # the image's version label, no setting
    assert "NCCL_DEBUG" not in check.message  # the launch command sets that one
    assert check.severity == "warning"


def test_nccl_set_by_the_launch_is_not_inherited(scratch: Callable[..., Path]) -> None:
    launch = "NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=ib0 vllm serve /models/m --no-enable-prefix-caching\n"
    assert "nccl-inherited" not in ids(run(scratch("debug-left-on", {"launch.sh": launch})))


def test_nccl_from_the_env_file_passed_with_env_file(scratch: Callable[..., Path]) -> None:
    launch = "docker run --gpus all --env-file env.txt vllm/vllm-openai:v0.10.1.1 --model /models/m\n"
    assert "nccl-inherited" not in ids(run(scratch("debug-left-on", {"launch.sh": launch})))


def test_image_by_mutable_tag(scratch: Callable[..., Path]) -> None:
    latest = finding(
        run(scratch(files={"launch.sh": serve("--model /m", image="vllm/vllm-openai:latest")})),
        "image-mutable-tag",
    )
    assert latest.severity == "warning" and "'latest'" in latest.message
    nightly = run(scratch(files={"launch.sh": serve("--model /m", image="vllm/vllm-openai:nightly")}))
    assert finding(nightly, "image-mutable-tag").severity == "warning"
    untagged = run(scratch(files={"launch.sh": serve("--model /m", image="vllm-dolphin")}))
    assert finding(untagged, "image-mutable-tag").severity == "warning"
    release = finding(run(BUNDLES / "gpus-not-passed"), "image-mutable-tag")
    assert release.severity == "info"


def test_image_pinned_by_digest() -> None:
    assert "image-mutable-tag" not in ids(run(BUNDLES / "pinned-baseline"))
    assert "image-mutable-tag" not in ids(run(BUNDLES / "kimi-k3-recipe"))


def test_model_without_revision() -> None:
    check = finding(run(BUNDLES / "debug-left-on"), "model-mutable-reference")
    assert "meta-llama/Llama-3.1-8B-Instruct" in check.message and "--revision" in check.advice


def test_model_pinned_or_local(scratch: Callable[..., Path]) -> None:
    assert "model-mutable-reference" not in ids(run(BUNDLES / "cu130-image-r575-node"))  # --revision
    assert "model-mutable-reference" not in ids(run(BUNDLES / "pinned-baseline"))  # /models/…
    for model in ("./Qwen3-8B", "models/Qwen3-8B", "~/weights/qwen"):
        found = run(scratch(files={"launch.sh": f"vllm serve {model}\n"}))
        assert "model-mutable-reference" not in ids(found), model


# --- the log is what ran ---------------------------------------------------------------------------------


def test_args_differ_from_log() -> None:
    found = run(BUNDLES / "log-vs-command")
    check = finding(found, "args-differ-from-log")
    assert "tensor_parallel_size: log 4 vs launch command 2" in check.message
    assert "max_model_len" not in check.message  # 32768 (int) and "32768" (text) agree
    tp = found.knobs["arg.tensor_parallel_size"]
    assert tp.value == 4 and Path(tp.source.file).name == "server.log"
    assert "command.txt" in (tp.note or "")


COLLECT_ENV_NO_CUDA = """
    Collecting environment information...
    PyTorch version: 2.4.0+cu121
    Is debug build: False
    CUDA used to build PyTorch: 12.1
    ROCM used to build PyTorch: N/A

    OS: Ubuntu 22.04.4 LTS (x86_64)
    Python version: 3.10.14 (main, Apr  6 2024, 18:45:05) [GCC 11.4.0] (64-bit runtime)
    Is CUDA available: False
    CUDA runtime version: 12.1.105
    GPU models and configuration: No CUDA
    Nvidia driver version: No CUDA
    """


def test_collect_env_in_the_container_without_cuda(scratch: Callable[..., Path]) -> None:
    found = run(scratch(files={"collect-env-container.txt": COLLECT_ENV_NO_CUDA}))
    check = finding(found, "no-gpu-in-container")
    assert Path(check.evidence[0].file).name == "collect-env-container.txt" and check.evidence[0].line == 9
    # The same output with no scope says nothing about the container.
    unscoped = run(scratch(files={"collect-env.txt": COLLECT_ENV_NO_CUDA}))
    assert "no-gpu-in-container" not in ids(unscoped)
