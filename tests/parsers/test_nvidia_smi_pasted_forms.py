"""nvidia-smi output as it reaches an issue or a note, with the wrapping a person's paste adds.

Each input is written here in nvidia-smi's own layout, then wrapped the way it is found in the
wild: the banner copied without its box, csv pasted as shell comments or after a transcript tag,
a csv header cut with '...', a noheader csv whose command is shown above it with other output in
between. What must not be taken for csv output stays out.
"""

from __future__ import annotations

from typing import Any

import pytest

from vllm_triage.parsers.nvidia_smi import looks_like, parse
from vllm_triage.parsers.nvidia_smi.common import lines_of

ROWS = (
    "0, NVIDIA H100 80GB HBM3, 81559 MiB, 40211 MiB, 570.133.20\n"
    "1, NVIDIA H100 80GB HBM3, 81559 MiB, 38002 MiB, 570.133.20\n"
)
HEADER = "index, name, memory.total [MiB], memory.used [MiB], driver_version\n"


def facts(text: str) -> dict[str, Any]:
    result = parse(text, "smi.txt", "host")
    return {name.split(".", 1)[1]: sourced.value for name, sourced in result.facts.items()}


def test_banner_copied_without_its_box() -> None:
    text = "NVIDIA-SMI 575.57.08              Driver Version: 575.57.08      CUDA Version: 12.9\n"
    assert looks_like(text) == "table"
    assert facts(text) == {"driver_version": "575.57.08", "cuda_version": "12.9"}


def test_banner_cut_inside_its_box_still_drops_the_cut_value() -> None:
    text = "| NVIDIA-SMI 575.57.08              Driver Version: 575.57.08      CUDA Version: 12\n"
    assert "cuda_version" not in facts(text)


@pytest.mark.parametrize(
    "wrap",
    [
        lambda line: "# " + line,  # a runbook's shell comment
        lambda line: "[tool_result] " + line if line.startswith("index") else line,  # an agent transcript
        lambda line: "    " + line,  # a markdown code block by indentation
    ],
)
def test_csv_under_a_line_prefix(wrap: Any) -> None:
    text = "".join(wrap(line) for line in (HEADER + ROWS).splitlines(keepends=True))
    found = facts(text)
    assert found["gpu_count"] == 2
    assert found["gpu_models"] == ["NVIDIA H100 80GB HBM3"] * 2
    assert found["gpu_memory_used_mib"] == [40211, 38002]
    assert found["driver_version"] == "570.133.20"


def test_a_note_after_a_row_is_not_part_of_the_value() -> None:
    text = HEADER + ROWS.replace("570.133.20\n", "570.133.20   ← checked today\n", 1)
    assert facts(text)["driver_version"] == "570.133.20"


def test_header_cut_with_dots_names_the_columns_before_it() -> None:
    text = "name, memory.total [MiB], memory.used [MiB], ...\nNVIDIA GB10, [N/A], [N/A], 41, 3.7 W\n"
    found = facts(text)
    assert found["gpu_models"] == ["NVIDIA GB10"]
    assert found["gpu_count"] == 1
    assert "gpu_memory_total_mib" not in found  # [N/A] on unified memory: no number


def test_noheader_rows_after_the_command_and_other_output() -> None:
    text = (
        "```bash\nuname -r\nnvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader\n```\n"
        "Expected output:\n```\n6.8.0-1015-nvidia\nNVIDIA GB10, [N/A], 580.95.05\n```\n"
    )
    found = facts(text)
    assert found["gpu_models"] == ["NVIDIA GB10"]
    assert found["driver_version"] == "580.95.05"


def test_prose_after_a_command_is_no_row() -> None:
    text = (
        "nvidia-smi --query-gpu=name,memory.total --format=csv,noheader\n"
        "The command prints one line per GPU.\nRun it on every node, then compare.\n"
    )
    assert "gpu_models" not in facts(text)


def test_a_comment_with_commas_is_no_csv() -> None:
    assert looks_like("# install the driver, reboot, then check\nls -l /dev/nvidia*\n") is None


TABLE = (
    "+---------------------------------------------------------------------------------------+\n"
    "| NVIDIA-SMI 535.161.08             Driver Version: 535.161.08   CUDA Version: 12.2     |\n"
    "|-----------------------------------------+----------------------+----------------------+\n"
    "| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
    "| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |\n"
    "|                                         |                      |               MIG M. |\n"
    "|=========================================+======================+======================|\n"
    "|   0  NVIDIA A10G                    On  | 00000000:00:1E.0 Off |                    0 |\n"
    "|  0%   27C    P8              16W / 300W |      4MiB / 23028MiB |      0%      Default |\n"
    "|                                         |                      |                  N/A |\n"
    "+-----------------------------------------+----------------------+----------------------+\n"
)


@pytest.mark.parametrize(
    "prefix",
    [
        "smi_1     | ",  # docker-compose v1 `up`
        "gpu-check-1  | ",  # docker compose v2
        "[pod/gpu-check-7d9f/smi] ",  # kubectl logs --prefix
        "2025-03-02T11:40:27.104519631Z ",  # docker logs -t
    ],
)
def test_output_under_a_container_transport_prefix(prefix: str) -> None:
    preamble = "$ docker compose up\nAttaching to smi_1\n"
    text = preamble + "".join(prefix + line + "\n" for line in TABLE.splitlines())
    assert looks_like(text) == "table"
    got = facts(text)
    assert got["driver_version"] == "535.161.08"
    assert got["cuda_version"] == "12.2"
    assert got["gpu_models"] == ["NVIDIA A10G"]
    assert got["gpu_memory_total_mib"] == [23028]


def test_a_gpu_list_under_a_compose_prefix() -> None:
    text = (
        "worker_1  | GPU 0: Tesla T4 (UUID: GPU-5b1c9e2a-0c4d-4f7e-9a31-8d2b6c0e1f44)\n"
        "worker_1  | GPU 1: Tesla T4 (UUID: GPU-9e0f3a7b-2d6c-41a8-b5e2-77c1d9f40a63)\n"
    )
    assert looks_like(text) == "list"
    assert facts(text)["gpu_count"] == 2


def test_one_piped_line_is_no_transport_prefix() -> None:
    # only one line of three looks prefixed (`name | rest`): it is a command, not a transport
    text = (
        "nvidia-smi -L | sort\n"
        "GPU 0: NVIDIA L4 (UUID: GPU-1f2e3d4c-5b6a-4978-8a9b-0c1d2e3f4a5b)\n"
        "GPU 1: NVIDIA L4 (UUID: GPU-6a5b4c3d-2e1f-4087-9b8a-7c6d5e4f3a2b)\n"
    )
    assert [line.text for line in lines_of(text)] == text.splitlines()
    assert facts(text)["gpu_count"] == 2


PROCESSES_HEAD = (
    "\n+---------------------------------------------------------------------------------------+\n"
    "| Processes:                                                                            |\n"
    "|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |\n"
    "|        ID   ID                                                             Usage      |\n"
    "|=======================================================================================|\n"
)
CLOSE = "+---------------------------------------------------------------------------------------+\n"


def test_an_empty_closed_processes_table_is_zero_processes() -> None:
    text = TABLE + PROCESSES_HEAD + CLOSE
    result = parse(text, "smi.txt", "host")
    assert result.facts["host.gpu_processes"].value == 0
    assert result.facts["host.gpu_process_list"].value == []
    assert result.facts["host.gpu_processes"].source.line == text.count("\n")  # the closing border


def test_a_processes_table_cut_after_its_rule_gives_no_count() -> None:
    got = facts(TABLE + PROCESSES_HEAD)
    assert "gpu_processes" not in got and "gpu_process_list" not in got


@pytest.mark.parametrize(
    "header",
    ["gpu_uuid, process_name", "gpu_name, gpu_bus_id, used_gpu_memory [MiB]", "gpu_serial, used_memory"],
)
def test_a_compute_apps_header_without_pid_is_a_process_list(header: str) -> None:
    # two processes, one on each of two GPUs
    values = {
        "gpu_uuid": ("GPU-3c1a9f0e-7b2d-4e65-a8c1-5f0d2e9b7a14", "GPU-8e2b0d4f-1a3c-4b79-9d5e-c6f7a8b9c0d1"),
        "process_name": ("/usr/bin/python3", "VLLM::EngineCore"),
        "gpu_name": ("NVIDIA L40S", "NVIDIA L40S"),
        "gpu_bus_id": ("00000000:17:00.0", "00000000:31:00.0"),
        "used_gpu_memory": ("40960 MiB", "38012 MiB"),
        "gpu_serial": ("1652023001234", "1652023005678"),
        "used_memory": ("40960 MiB", "38012 MiB"),
    }
    names = [name.split(" [")[0] for name in header.split(", ")]
    rows = "".join(", ".join(values[name][i] for name in names) + "\n" for i in (0, 1))
    text = f"{header}\n{rows}"
    got = facts(text)
    assert got["gpu_processes"] == 2
    assert "gpu_count" not in got and "gpu_models" not in got


def test_a_query_gpu_header_of_the_same_columns_is_a_gpu_list() -> None:
    text = (
        "uuid, name, pci.bus_id\n"
        "GPU-3c1a9f0e-7b2d-4e65-a8c1-5f0d2e9b7a14, NVIDIA L40S, 00000000:17:00.0\n"
        "GPU-8e2b0d4f-1a3c-4b79-9d5e-c6f7a8b9c0d1, NVIDIA L40S, 00000000:31:00.0\n"
    )
    got = facts(text)
    assert got["gpu_count"] == 2
    assert "gpu_processes" not in got


def test_a_name_cut_by_the_end_of_the_paste_is_no_model() -> None:
    cut_inside_name = TABLE + "|   1  NVID"
    got = facts(cut_inside_name)
    assert got["gpu_models"] == ["NVIDIA A10G", None]
    assert "gpu_count" not in got
    # cut after the name cell: the name is whole
    cut_after_name = TABLE + "|   1  NVIDIA A10G                    On  |   00000000:00:1F"
    assert facts(cut_after_name)["gpu_models"] == ["NVIDIA A10G", "NVIDIA A10G"]


def test_an_error_captured_in_a_ci_xtrace_line_is_read() -> None:
    # `set -x` shows the captured output inside `+ VAR='…'`; `+ ` is no table border
    text = (
        "- run: nvidia-smi --query-gpu=name --format=csv,noheader\n\nlog:\n"
        "+ GPU_NAME='No devices were found'\n++ echo 'No devices were found'\n+ exit 6\n"
    )
    assert looks_like(text) == "error"
    result = parse(text, "ci.log", "host")
    assert [problem.id for problem in result.problems] == ["nvidia-smi-no-devices"]


def test_a_table_border_is_still_a_table_row() -> None:
    assert (
        looks_like(
            "+-----------------------------------------------------------------------------+\n"
            "| NVIDIA-SMI 470.63.01    Driver Version: 470.63.01    CUDA Version: 11.4     |\n"
        )
        == "table"
    )


def test_a_vgpu_hook_line_before_an_nvml_error_is_no_json() -> None:
    # HAMi's hook library prints `[4pdvGPU Warn(…)]` lines before nvidia-smi's own message.
    text = (
        "> root@gpu-pod-2:/# nvidia-smi\n"
        "> [4pdvGPU Warn(28:140476096096064:util.c:135)]: NVML error at line 135: 1\n"
        "> Failed to initialize NVML: Unknown Error\n"
    )
    assert looks_like(text) == "error"
    ids = [f.id for f in parse(text, "smi.txt", "gpu").problems]
    assert "nvidia-smi-nvml-unknown-error" in ids


def test_a_json_array_of_numbers_is_still_json() -> None:
    assert looks_like("[4, 5]\nNVIDIA H100, 00000000:17:00.0\n") is None


@pytest.mark.parametrize(
    ("row", "model"),
    [
        ("NVIDIA L4, 00000000:00:03.0", "NVIDIA L4"),  # --query-gpu=name,pci.bus_id
        ("NVIDIA H100 NVL, 0x232110DE", "NVIDIA H100 NVL"),  # --query-gpu=name,pci.device_id
    ],
)
def test_headerless_name_and_pci_identity_rows_are_a_gpu_list(row: str, model: str) -> None:
    found = facts(row + "\n")
    assert found["gpu_models"] == [model]
    assert found["gpu_count"] == 1


def test_a_name_beside_a_pci_like_word_of_another_program_is_no_gpu() -> None:
    # must-not: a bus id beside something that is not a GPU name proves no nvidia-smi output
    assert looks_like("eth0, 00000000:00:03.0\n") is None


JETSON = """\
    +---------------------------------------------------------------------------------------+
    | NVIDIA-SMI 540.4.0                Driver Version: 540.4.0      CUDA Version: 12.6     |
    |-----------------------------------------+----------------------+----------------------+
    | GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
    | Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
    |=========================================+======================+======================|
    |   0  Orin (nvgpu)                  N/A  | N/A              N/A |                  N/A |
    | N/A   N/A  N/A               N/A /  N/A | Not Supported        |     N/A          N/A |
    +-----------------------------------------+----------------------+----------------------+
"""


def test_a_jetson_gpu_row_without_a_bus_id_is_a_gpu() -> None:
    found = facts(JETSON)
    assert found["gpu_models"] == ["Orin (nvgpu)"] and found["gpu_count"] == 1
    assert "gpu_memory_total_mib" not in found  # Not Supported is never guessed
    # must-not: a row of N/A cells with no GPU name is no GPU
    assert "gpu_count" not in facts(JETSON.replace("Orin (nvgpu)", "Unknown dev "))
