"""nvidia-smi forms users paste from newer drivers and odd machines: the 610 banner, unified memory,
headerless csv, -q and -q -x fragments, and what must not be taken for nvidia-smi at all.

Fixtures are in tests/fixtures/nvidia_smi/, written for these tests with nvidia-smi's own spacing.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from vllm_triage.parsers.base import ParseResult
from vllm_triage.parsers.nvidia_smi import looks_like, parse

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nvidia_smi"


def run(name: str, scope: str = "host") -> ParseResult:
    return parse((FIXTURES / name).read_text(encoding="utf-8"), name, scope)


def facts(result: ParseResult) -> dict[str, Any]:
    return {name.split(".", 1)[1]: sourced.value for name, sourced in result.facts.items()}


def line(result: ParseResult, name: str) -> int | None:
    return result.facts[f"host.{name}"].source.line


def notes(result: ParseResult) -> str:
    return "\n".join(result.notes)


# --- table ----------------------------------------------------------------------------------------


def test_610_banner_kmd_and_cuda_umd_versions_are_the_driver_and_cuda_versions() -> None:
    result = run("table-610-kmd-umd-banner-rtx-pro-6000x2.txt")
    got = facts(result)
    assert got["driver_version"] == "610.43.02" and line(result, "driver_version") == 4
    assert got["cuda_version"] == "13.3"
    assert got["gpu_count"] == 2 and got["gpu_memory_total_mib"] == [97887, 97887]
    assert got["gpu_processes"] == 2
    assert "banner" not in notes(result)  # nothing said missing from a banner that holds both


@pytest.mark.parametrize(
    ("banner", "driver", "cuda"),
    [
        # 470-era 79-column banner
        (
            "| NVIDIA-SMI 470.256.02   Driver Version: 470.256.02   CUDA Version: 11.4     |",
            "470.256.02",
            "11.4",
        ),
        # 535 87-column banner
        (
            "| NVIDIA-SMI 535.183.01             Driver Version: 535.183.01   CUDA Version: 12.2     |",
            "535.183.01",
            "12.2",
        ),
        # 610+: KMD Version / CUDA UMD Version
        (
            "| NVIDIA-SMI 610.43.02              KMD Version: 610.43.02     CUDA UMD Version: 13.3     |",
            "610.43.02",
            "13.3",
        ),
    ],
)
def test_banner_of_every_driver_generation(banner: str, driver: str, cuda: str) -> None:
    got = facts(parse(banner + "\n", "banner.txt", "host"))
    assert got["driver_version"] == driver and got["cuda_version"] == cuda


def test_unified_memory_not_supported_is_said_not_guessed() -> None:
    result = run("table-580-gb10-memory-not-supported.txt")
    got = facts(result)
    assert got["gpu_count"] == 1 and got["gpu_models"] == ["NVIDIA GB10"]
    assert "gpu_memory_used_mib" not in got and "gpu_memory_total_mib" not in got
    assert "Not Supported" in notes(result) and "unified memory" in notes(result)
    assert got["gpu_processes"] == 1  # the Xorg row is graphics-only
    assert got["gpu_process_list"][1]["used_mib"] == 71264


def test_gpu_rows_pasted_alone_are_read_but_not_counted() -> None:
    result = run("table-580-gpu-rows-only-fragment.txt")
    got = facts(result)
    assert result.kind == "nvidia_smi.table"
    # the lists are by GPU index: GPUs 0-3 are not in the paste
    assert got["gpu_models"] == [None] * 4 + ["NVIDIA H100 80GB HBM3"] * 2 and line(result, "gpu_models") == 1
    assert got["gpu_memory_used_mib"] == [None] * 4 + [70214, 70214] and got["mig_enabled"] is False
    assert "GPUs 0-3 are not in the paste" in (result.facts["host.gpu_models"].note or "")
    assert "gpu_count" not in got  # rows of GPUs 4 and 5: the machine has more
    assert "without the table's header (first GPU 4)" in notes(result)


def test_process_rows_pasted_alone_give_a_lower_bound() -> None:
    text = (
        "|    0   N/A  N/A         1192044      C   VLLM::EngineCore                      70210MiB |\n"
        "|    1   N/A  N/A         1192301      C   VLLM::Worker_TP1                      70188MiB |\n"
    )
    result = parse(text, "procs.txt", "host")
    got = facts(result)
    assert looks_like(text) == "table"
    assert got["gpu_processes"] == 2 and [p["pid"] for p in got["gpu_process_list"]] == [1192044, 1192301]
    assert "more may be missing" in notes(result)


def test_a_process_row_padded_with_a_long_run_of_spaces_is_read_in_linear_time() -> None:
    # Fuzz finding (seed 11): one process row whose padding ran to 56 KB took 18 s, the lazy
    # process name backtracking over every space before the memory cell.
    header = (
        "| Processes:                                                                              |\n"
        "|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |\n"
        "|=========================================================================================|\n"
    )

    def read(padding: int) -> tuple[dict[str, Any], float]:
        row = "|    0   N/A  N/A     48811      C   python3" + " " * padding + "22390MiB |" + " " * padding
        started = time.process_time()
        got = facts(parse(header + row + "\n", "procs.txt", "host"))
        return got, time.process_time() - started

    (small, small_cost), (big, big_cost) = read(2_000), read(20_000)
    for got in (small, big):
        [process] = got["gpu_process_list"]
        assert process["pid"] == 48811 and process["name"] == "python3" and process["used_mib"] == 22390
    # 10 times the padding: linear is about 10 times the time, the old pattern about 100.
    assert big_cost < 25 * small_cost + 0.5


# --- -q -------------------------------------------------------------------------------------------


def test_query_610_prefers_kmd_and_umd_over_deprecated_names() -> None:
    result = run("query-q-610-kmd-umd-gb10-memory-na.txt")
    got = facts(result)
    assert got["driver_version"] == "610.43.02" and line(result, "driver_version") == 7
    assert got["cuda_version"] == "13.3" and line(result, "cuda_version") == 9
    assert got["gpu_count"] == 1 and got["gpu_models"] == ["NVIDIA GB10"]
    assert "gpu_memory_total_mib" not in got  # FB Memory Usage: N/A on unified memory
    assert "FB Memory Usage shows no figure (GPU 0: N/A)" in notes(result)
    assert got["gpu_processes"] == 1 and got["gpu_process_list"][0]["pid"] == 40917


def test_query_fragment_from_the_middle_is_read_for_what_it_holds() -> None:
    result = run("query-q-fragment-from-the-middle.txt")
    got = facts(result)
    assert result.kind == "nvidia_smi.query"
    assert got["gpu_models"] == ["NVIDIA H100 80GB HBM3"] and line(result, "gpu_models") == 1
    assert got["gpu_uuids"] == ["GPU-2b9c04e1-7a6f-4c3d-b5e2-91d8f0a7c346"]
    assert got["mig_enabled"] is False
    assert got["gpu_memory_used_mib"] == [73412] and got["gpu_memory_total_mib"] == [81559]
    assert "gpu_count" not in got  # a fragment does not say how many GPUs the machine has
    assert "GPU indexes are not in the paste" in (result.facts["host.gpu_memory_used_mib"].note or "")
    assert "fragment" in notes(result)


def test_query_memory_sections_alone_are_a_fragment_too() -> None:
    result = run("query-q-d-memory-fragment-no-header.txt")
    assert facts(result) == {"gpu_memory_used_mib": [22871], "gpu_memory_total_mib": [24564]}
    assert line(result, "gpu_memory_total_mib") == 2  # BAR1 Total (line 7) is another memory


def test_query_fragment_of_two_gpus_without_headers_starts_a_gpu_on_each_product_name() -> None:
    text = (
        "    Product Name                          : NVIDIA A10\n"
        "    GPU UUID                              : GPU-11111111-2222-4333-8444-555555555555\n"
        "    FB Memory Usage\n"
        "        Total                             : 23028 MiB\n"
        "        Used                              : 20010 MiB\n"
        "    Product Name                          : NVIDIA A10\n"
        "    GPU UUID                              : GPU-66666666-7777-4888-9999-aaaaaaaaaaaa\n"
        "    FB Memory Usage\n"
        "        Total                             : 23028 MiB\n"
        "        Used                              : 4 MiB\n"
    )
    got = facts(parse(text, "q.txt", "host"))
    assert got["gpu_models"] == ["NVIDIA A10", "NVIDIA A10"]
    assert got["gpu_memory_used_mib"] == [20010, 4]


def test_query_processes_section_alone() -> None:
    text = (
        "    Processes\n"
        "        GPU instance ID                   : N/A\n"
        "        Compute instance ID               : N/A\n"
        "        Process ID                        : 40917\n"
        "            Type                          : C\n"
        "            Name                          : python3\n"
        "            Used GPU Memory               : 71264 MiB\n"
    )
    got = facts(parse(text, "q.txt", "host"))
    assert got["gpu_processes"] == 1
    assert got["gpu_process_list"] == [
        {"gpu": None, "pid": 40917, "name": "python3", "used_mib": 71264, "type": "C"}
    ]


def test_one_aligned_query_line_is_enough_but_an_unaligned_one_is_not() -> None:
    assert looks_like("    Product Name                          : NVIDIA L40S\n") == "query"
    assert looks_like("Product Name: Widget 3000\n") is None  # a colon right after a word: any form


# --- -q -x ----------------------------------------------------------------------------------------


def test_xml_fragment_cut_mid_element_keeps_what_was_read() -> None:
    result = run("query-xml-fragment-gpu-element-cut.xml")
    got = facts(result)
    assert got["gpu_models"] == ["NVIDIA L4"] and line(result, "gpu_models") == 1  # the <gpu> element
    assert got["gpu_uuids"] == ["GPU-c41a7e02-93bd-4f6e-8a21-5d07b3e9f1c8"]
    assert got["gpu_memory_used_mib"] == [20713] and line(result, "gpu_memory_used_mib") == 12
    assert "stops being well-formed" in notes(result)


def test_xml_610_tag_names() -> None:
    text = (
        '<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v14.dtd">\n<nvidia_smi_log>\n'
        "\t<kmd_version>610.43.02</kmd_version>\n\t<cuda_umd_version>13.3</cuda_umd_version>\n"
        "\t<attached_gpus>1</attached_gpus>\n"
        '\t<gpu id="00000000:17:00.0">\n\t\t<product_name>NVIDIA B200</product_name>\n\t</gpu>\n'
        "</nvidia_smi_log>\n"
    )
    got = facts(parse(text, "q.xml", "host"))
    assert got["driver_version"] == "610.43.02" and got["cuda_version"] == "13.3"
    assert got["gpu_count"] == 1 and got["gpu_models"] == ["NVIDIA B200"]


def test_xml_after_other_commands_in_one_capture() -> None:
    text = (
        "$ nvidia-smi -L\n"
        "GPU 0: NVIDIA L4 (UUID: GPU-c41a7e02-93bd-4f6e-8a21-5d07b3e9f1c8)\n"
        "$ nvidia-smi -q -x\n"
        '<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n<nvidia_smi_log>\n'
        "\t<driver_version>550.90.07</driver_version>\n\t<attached_gpus>1</attached_gpus>\n"
        '\t<gpu id="00000000:41:00.0">\n\t\t<product_name>NVIDIA L4</product_name>\n'
        "\t\t<fb_memory_usage>\n\t\t\t<total>23034 MiB</total>\n\t\t\t<used>3 MiB</used>\n"
        "\t\t</fb_memory_usage>\n\t</gpu>\n</nvidia_smi_log>\n"
    )
    result = parse(text, "capture.txt", "host")
    got = facts(result)
    assert got["driver_version"] == "550.90.07" and line(result, "driver_version") == 7
    assert got["gpu_memory_total_mib"] == [23034] and got["gpu_count"] == 1
    assert "stops being well-formed" not in notes(result)


def test_xml_declaring_entities_is_refused_before_any_expansion() -> None:
    laughs = "".join(f'<!ENTITY l{n} "{f"&l{n - 1};" * 10}">' for n in range(1, 10))
    bomb = (
        '<?xml version="1.0"?>\n<!DOCTYPE nvidia_smi_log [<!ENTITY l0 "lol">' + laughs + "]>\n"
        "<nvidia_smi_log><driver_version>&l9;</driver_version>"
        "<gpu id='0'><product_name>NVIDIA H100</product_name><uuid>x</uuid></gpu></nvidia_smi_log>\n"
    )
    started = time.monotonic()
    result = parse(bomb, "bomb.xml", "host")
    assert time.monotonic() - started < 2
    assert result.facts == {}
    assert "declares entities" in notes(result)


# --- csv ------------------------------------------------------------------------------------------


def test_headerless_csv_with_na_memory_reads_what_the_values_prove() -> None:
    result = run("csv-query-gpu-noheader-gb10-na-no-command.txt")
    got = facts(result)
    assert got["gpu_models"] == ["NVIDIA GB10"] and got["driver_version"] == "580.95.05"
    assert got["gpu_uuids"] == ["GPU-7d3e91a0-52c4-4b18-9e0f-a4c2d6b18e53"] and got["gpu_count"] == 1
    assert "gpu_memory_used_mib" not in got and "gpu_compute_caps" not in got  # 12.1 could be anything
    assert "only index, name, uuid, driver_version recognised" in notes(result)


def test_csv_header_with_na_memory_leaves_memory_out_and_says_why() -> None:
    result = run("csv-query-gpu-header-not-supported.csv")
    got = facts(result)
    assert got == {"gpu_count": 1, "gpu_models": ["NVIDIA GB10"]}
    assert "memory.used shows N/A" in notes(result)


def test_headerless_compute_apps_without_units_keeps_pid_and_memory_unnamed() -> None:
    result = run("csv-compute-apps-noheader-nounits-no-command.txt")
    got = facts(result)
    assert got["gpu_processes"] == 1
    only = got["gpu_process_list"][0]
    assert only["name"] == "/usr/bin/python3" and only["gpu_uuid"].startswith("GPU-7d3e91a0")
    assert only["pid"] is None and only["used_mib"] is None  # two bare integers: which is which is unknown
    assert "gpu_models" not in got  # process rows are never GPUs


def test_headerless_compute_apps_with_units_names_pid_and_memory() -> None:
    got = facts(run("csv-compute-apps-noheader-units-no-command.txt"))
    assert got["gpu_processes"] == 2
    assert [(p["pid"], p["used_mib"]) for p in got["gpu_process_list"]] == [(2210, 70112), (2211, 70098)]


def test_csv_field_with_a_quoted_comma_is_one_field() -> None:
    text = (
        "name, memory.total [MiB], driver_version\n"
        '"NVIDIA A100-SXM4-80GB, MIG 1g.10gb", 81920 MiB, 550.54.15\n'
    )
    got = facts(parse(text, "q.csv", "host"))
    assert got["gpu_models"] == ["NVIDIA A100-SXM4-80GB, MIG 1g.10gb"]
    assert got["gpu_memory_total_mib"] == [81920]


def test_headerless_jetson_row_with_na_memory() -> None:
    got = facts(parse("Orin (nvgpu), [N/A], [N/A]\n", "q.csv", "host"))
    assert got == {"gpu_count": 1, "gpu_models": ["Orin (nvgpu)"]}


@pytest.mark.parametrize(
    "text",
    [
        "[N/A], [N/A], 0\n",  # GB10 memory.used, memory.total, utilization.memory: nothing certain
        "12, 4096, 2048\n8, 1024, 512\n",
        "GPU-11111111-2222-4333-8444-555555555555, yes\n",  # one identity and no second sign
    ],
)
def test_headerless_rows_without_two_signs_are_not_claimed(text: str) -> None:
    assert looks_like(text) is None


# --- --version ------------------------------------------------------------------------------------


def test_version_610_kmd_and_cuda_umd() -> None:
    result = run("version-610-kmd-umd.txt")
    assert facts(result) == {"nvml_version": "610.43", "driver_version": "610.43.02", "cuda_version": "13.3"}
    assert line(result, "driver_version") == 4


# --- must not -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["not-psql-table.txt", "not-inventory-csv.txt", "not-xml-pom.xml"])
def test_other_tables_csv_and_xml_are_not_nvidia_smi(name: str) -> None:
    result = run(name)
    assert looks_like((FIXTURES / name).read_text(encoding="utf-8")) is None
    assert result.kind == "nvidia_smi.unknown" and result.facts == {}


def test_markdown_table_with_gpu_words_is_not_a_table() -> None:
    text = "| GPU | Memory | Driver |\n|-----|--------|--------|\n| A100 | 80 GB | 550 |\n"
    assert looks_like(text) is None


# --- pasted shapes that hid a table ---------------------------------------------------------------


def test_a_bracketed_shell_prompt_is_no_json_and_the_table_after_it_is_read() -> None:
    # RHEL/CentOS put the prompt in brackets: `[user@host ~]$`; only '[' + a value opens JSON
    text = (FIXTURES / "table-418-centos-bracket-prompt-k80x2.txt").read_text(encoding="utf-8")
    assert looks_like(text) == "table"
    got = facts(run("table-418-centos-bracket-prompt-k80x2.txt"))
    assert got["driver_version"] == "418.87.01" and got["cuda_version"] == "10.1"
    assert got["gpu_count"] == 2 and got["gpu_models"] == ["Tesla K80", "Tesla K80"]
    assert got["gpu_memory_total_mib"] == [11441, 11441]


@pytest.mark.parametrize("head", ['[{"Id": "abc"}]', "[\n  {", '["nvidia-smi"]', "[]", "{", "[ 1, 2 ]"])
def test_text_that_opens_as_json_is_still_refused(head: str) -> None:
    text = head + "\n| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |\n"
    assert looks_like(text) is None


def test_a_mig_devices_table_pasted_alone_gives_the_mig_devices_and_mig_on() -> None:
    result = run("table-mig-devices-section-alone-a100x2.txt")
    got = facts(result)
    assert got["mig_enabled"] is True
    assert [(d["gpu"], d["gi"], d["used_mib"]) for d in got["mig_devices"]] == [
        (0, 1, 9431),
        (0, 2, 11),
        (1, 1, 38712),
    ]
    # the MIG table says nothing of the physical GPUs, their count or the driver
    assert "gpu_count" not in got and "driver_version" not in got and "gpu_models" not in got


def test_a_mig_devices_header_with_no_rows_is_no_mig_fact() -> None:
    text = "\n".join(
        (FIXTURES / "table-mig-devices-section-alone-a100x2.txt").read_text(encoding="utf-8").splitlines()[:6]
    )
    got = facts(parse(text, "cut.txt", "host"))
    assert "mig_enabled" not in got and "mig_devices" not in got
