"""nvidia-smi parser: every output form, on samples written for these tests (tests/fixtures/nvidia_smi/)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from vllm_triage.parsers.base import ParseResult
from vllm_triage.parsers.nvidia_smi import looks_like, parse

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nvidia_smi"


def read(name: str) -> str:
    with (FIXTURES / name).open(encoding="utf-8", newline="") as handle:  # keep CRLF where a sample has it
        return handle.read()


def run(name: str, scope: str = "host") -> ParseResult:
    return parse(read(name), name, scope)


def facts(result: ParseResult) -> dict[str, Any]:
    """Fact values without the scope prefix."""
    return {name.split(".", 1)[1]: sourced.value for name, sourced in result.facts.items()}


def line(result: ParseResult, name: str, scope: str = "host") -> int | None:
    return result.facts[f"{scope}.{name}"].source.line


def problem_ids(result: ParseResult) -> list[str]:
    return [problem.id for problem in result.problems]


# --- recognition ---------------------------------------------------------------------------------

KINDS = {
    "table-418-v100-no-mig-row-old-processes.txt": "table",
    "table-470-79col-a100x2-busy.txt": "table",
    "table-470-gpu-lost-err.txt": "table",
    "table-470-wrapped-at-60-columns.txt": "table",
    "table-530-a100-87col.txt": "table",
    "table-530-blockquoted-with-prompt.txt": "table",
    "table-535-l40s-x2-vllm.txt": "table",
    "table-535-mig-a100-devices-and-processes.txt": "table",
    "table-535-mig-enabled-no-mig-devices-h100.txt": "table",
    "table-550-rtx3090-desktop-graphics-and-compute.txt": "table",
    "table-580-cut-at-60-columns.txt": "table",
    "table-580-cut-at-80-columns.txt": "table",
    "table-580-gb200x4-idle.txt": "table",
    "table-580-head-cut-inside-gpu1.txt": "table",
    "table-580-processes-cut-after-first-row.txt": "table",
    "table-loop-three-screens-last-cut.txt": "table",
    "table-windows-tcc-472-t4.txt": "table",
    "table-windows-wddm-546-rtx4090-cg-processes.txt": "table",
    "list-L-l4x4.txt": "list",
    "list-L-mig-h100-children.txt": "list",
    "list-L-mig-old-format-a100.txt": "list",
    "query-q-two-gpus-one-process.txt": "query",
    "query-q-d-memory-subset.txt": "query",
    "query-q-mig-enabled-indent-lost.txt": "query",
    "query-q-cut-two-of-four-gpus.txt": "query",
    "query-xml-one-gpu-one-process.xml": "xml",
    "csv-query-gpu-units.csv": "csv",
    "csv-query-gpu-noheader-nounits.txt": "csv",
    "csv-query-gpu-nounits-with-header.csv": "csv",
    "csv-query-gpu-loop-last-sample-cut.txt": "csv",
    "csv-query-gpu-noheader-loop.txt": "csv",
    "csv-query-gpu-noheader-no-command.txt": "csv",
    "csv-compute-apps-two.csv": "csv",
    "csv-compute-apps-none.csv": "csv",
    "topo-m-pcie-4gpu-tabs-ansi.txt": "topo",
    "topo-m-nvlink-8gpu-tabs-lost.txt": "topo",
    "topo-m-mixed-cut-after-gpu1.txt": "topo",
    "version-580.txt": "version",
    "proc-version-proprietary-535.txt": "proc_version",
    "proc-version-open-aarch64-560.txt": "proc_version",
    "error-no-devices-in-container.txt": "error",
    "error-driver-unreachable.txt": "error",
    "error-nvml-mismatch-with-library-crlf.txt": "error",
    "error-nvml-mismatch-no-library-quoted.txt": "error",
    "error-nvml-unknown-error-in-container.txt": "error",
    "error-command-not-found.txt": "error",
    "capture-several-commands.txt": "csv",
    "not-vllm-log.txt": None,
    "not-collect-env-fragment.txt": None,
    "not-docker-inspect.json": None,
    # newer drivers, unified memory, fragments and headerless output (test_nvidia_smi_forms.py)
    "table-610-kmd-umd-banner-rtx-pro-6000x2.txt": "table",
    "table-580-gb10-memory-not-supported.txt": "table",
    "query-q-610-kmd-umd-gb10-memory-na.txt": "query",
    "query-q-fragment-from-the-middle.txt": "query",
    "query-q-d-memory-fragment-no-header.txt": "query",
    "query-xml-fragment-gpu-element-cut.xml": "xml",
    "csv-query-gpu-noheader-gb10-na-no-command.txt": "csv",
    "csv-query-gpu-header-not-supported.csv": "csv",
    "csv-compute-apps-noheader-nounits-no-command.txt": "csv",
    "csv-compute-apps-noheader-units-no-command.txt": "csv",
    "version-610-kmd-umd.txt": "version",
    "table-580-gpu-rows-only-fragment.txt": "table",
    "table-418-centos-bracket-prompt-k80x2.txt": "table",
    "table-mig-devices-section-alone-a100x2.txt": "table",
    "not-psql-table.txt": None,
    "not-inventory-csv.txt": None,
    "not-xml-pom.xml": None,
}


@pytest.mark.parametrize(("name", "kind"), sorted(KINDS.items()))
def test_looks_like_names_the_form(name: str, kind: str | None) -> None:
    assert looks_like(read(name)) == kind


def test_every_fixture_has_an_expected_kind() -> None:
    assert sorted(path.name for path in FIXTURES.iterdir()) == sorted(KINDS)


@pytest.mark.parametrize(("name", "kind"), sorted((n, k) for n, k in KINDS.items() if k))
def test_parse_kind_matches_looks_like(name: str, kind: str) -> None:
    assert run(name).kind == f"nvidia_smi.{kind}"


# --- the default table, every generation -----------------------------------------------------------


def test_580_table_idle_reads_every_fact_with_its_line() -> None:
    result = run("table-580-gb200x4-idle.txt")
    assert facts(result) == {
        "driver_version": "580.82.07",
        "cuda_version": "13.0",
        "gpu_count": 4,
        "gpu_models": ["NVIDIA GB200"] * 4,
        "gpu_memory_used_mib": [0, 0, 0, 0],
        "gpu_memory_total_mib": [189471] * 4,
        "mig_enabled": False,
        "gpu_processes": 0,
        "gpu_process_list": [],
    }
    assert line(result, "driver_version") == 4  # the banner, after `$ nvidia-smi` and the date
    assert line(result, "cuda_version") == 4
    assert line(result, "gpu_memory_used_mib") == 11
    assert line(result, "mig_enabled") == 12
    assert line(result, "gpu_processes") == 32  # "No running processes found"
    assert result.notes == [] and result.problems == []


def test_pre_530_79_column_table_with_a_process_holding_memory() -> None:
    result = run("table-470-79col-a100x2-busy.txt")
    got = facts(result)
    assert got["driver_version"] == "470.103.01" and got["cuda_version"] == "11.4"
    assert got["gpu_count"] == 2
    assert got["gpu_memory_used_mib"] == [38561, 3]
    assert got["gpu_memory_total_mib"] == [81251, 81251]
    assert got["mig_enabled"] is False
    assert got["gpu_processes"] == 1
    assert got["gpu_process_list"] == [
        {"gpu": 0, "pid": 21873, "name": "/usr/bin/python3", "used_mib": 38557, "type": "C"}
    ]
    assert line(result, "gpu_processes") == 23
    # the 79-column layout shortens long names itself; kept as printed, said in a note
    assert got["gpu_models"] == ["NVIDIA A100-SXM...", "NVIDIA A100-SXM..."]
    assert any("shortened" in note for note in result.notes)


def test_pre_450_table_without_mig_row_and_old_processes_layout() -> None:
    result = run("table-418-v100-no-mig-row-old-processes.txt")
    got = facts(result)
    assert got["driver_version"] == "418.67" and got["cuda_version"] == "10.1"
    assert got["gpu_count"] == 1
    assert got["gpu_memory_used_mib"] == [15723]
    assert "mig_enabled" not in got  # no MIG M. row in this generation: unknown, not False
    assert got["gpu_processes"] == 1
    assert got["gpu_process_list"][0]["pid"] == 4521
    assert got["gpu_process_list"][0]["used_mib"] == 15719


def test_530_layout_with_pwr_cell_touching_the_border() -> None:
    got = facts(run("table-530-a100-87col.txt"))
    assert got["driver_version"] == "530.30.02" and got["cuda_version"] == "12.1"
    assert got["gpu_models"] == ["NVIDIA A100-SXM4-80GB"]
    assert got["gpu_memory_used_mib"] == [4] and got["gpu_memory_total_mib"] == [81920]
    assert got["mig_enabled"] is False and got["gpu_processes"] == 0


def test_535_layout_two_vllm_workers() -> None:
    got = facts(run("table-535-l40s-x2-vllm.txt"))
    assert got["driver_version"] == "535.154.05" and got["cuda_version"] == "12.2"
    assert got["gpu_count"] == 2
    assert got["gpu_memory_used_mib"] == [41214, 41214]
    assert got["gpu_processes"] == 2
    assert [proc["gpu"] for proc in got["gpu_process_list"]] == [0, 1]
    assert "mig_enabled" not in got  # MIG M. is N/A on an L40S


def test_550_desktop_counts_compute_processes_only_but_lists_all() -> None:
    result = run("table-550-rtx3090-desktop-graphics-and-compute.txt")
    got = facts(result)
    assert got["gpu_models"] == ["NVIDIA GeForce RTX 3090"]
    assert got["gpu_memory_used_mib"] == [22871] and got["gpu_memory_total_mib"] == [24576]
    assert got["gpu_processes"] == 1  # Xorg and gnome-shell are graphics (G) processes
    assert [proc["type"] for proc in got["gpu_process_list"]] == ["G", "G", "C"]
    assert "graphics-only" in (result.facts["host.gpu_processes"].note or "")
    assert line(result, "gpu_processes") == 21  # the python3 row


def test_windows_tcc_79_column_table() -> None:
    got = facts(run("table-windows-tcc-472-t4.txt"))
    assert got["driver_version"] == "472.98" and got["cuda_version"] == "11.4"
    assert got["gpu_models"] == ["Tesla T4"]
    assert got["gpu_memory_total_mib"] == [15360]
    assert got["gpu_processes"] == 0
    assert "mig_enabled" not in got


def test_windows_wddm_processes_without_memory() -> None:
    got = facts(run("table-windows-wddm-546-rtx4090-cg-processes.txt"))
    assert got["gpu_models"] == ["NVIDIA GeForce RTX 4090"]
    assert got["gpu_memory_used_mib"] == [2114]
    assert got["gpu_processes"] == 3  # C+G contexts are compute contexts too
    assert got["gpu_process_list"][0] == {
        "gpu": 0,
        "pid": 1580,
        "name": "C:\\Windows\\explorer.exe",
        "used_mib": None,  # WDDM does not report per-process memory
        "type": "C+G",
    }
    assert got["gpu_process_list"][1]["name"] == "...Programs\\Microsoft VS Code\\Code.exe"


def test_mig_devices_table_and_processes_with_instance_ids() -> None:
    result = run("table-535-mig-a100-devices-and-processes.txt")
    got = facts(result)
    assert got["gpu_count"] == 2
    assert got["mig_enabled"] is True
    assert line(result, "mig_enabled") == 10  # GPU 0's MIG M. "Enabled"
    assert got["mig_devices"] == [
        {"gpu": 0, "gi": 1, "ci": 0, "mig_dev": 0, "used_mib": 35592, "total_mib": 40192},
        {"gpu": 0, "gi": 2, "ci": 0, "mig_dev": 1, "used_mib": 25, "total_mib": 40192},
    ]
    assert got["gpu_processes"] == 1
    assert got["gpu_process_list"][0]["used_mib"] == 35560


def test_mig_enabled_with_no_mig_devices_found() -> None:
    got = facts(run("table-535-mig-enabled-no-mig-devices-h100.txt"))
    assert got["mig_enabled"] is True
    assert got["mig_devices"] == []
    assert got["gpu_processes"] == 0


def test_blockquoted_paste_keeps_original_line_numbers() -> None:
    plain, quoted = run("table-530-a100-87col.txt"), run("table-530-blockquoted-with-prompt.txt")
    assert facts(quoted) == facts(plain)
    assert line(quoted, "driver_version") == 3 == line(plain, "driver_version") + 1


def test_terminal_wrapped_rows_are_joined() -> None:
    assert facts(run("table-470-wrapped-at-60-columns.txt")) == facts(run("table-470-79col-a100x2-busy.txt"))


# --- cut output: read what is there, say what is missing ------------------------------------------------


def test_table_cut_at_60_columns_keeps_used_memory_and_says_what_is_missing() -> None:
    result = run("table-580-cut-at-60-columns.txt")
    got = facts(result)
    assert "driver_version" not in got  # '580.82.0' at the cut could be a shortened version
    assert "cuda_version" not in got
    assert got["gpu_count"] == 4
    assert got["gpu_memory_used_mib"] == [171023, 171023, 0, 0]
    assert "gpu_memory_total_mib" not in got  # '/ 189' is not a total
    assert "mig_enabled" not in got  # the MIG M. column is gone
    assert got["gpu_processes"] == 2
    assert [proc["used_mib"] for proc in got["gpu_process_list"]] == [None, None]
    joined = " ".join(result.notes)
    assert "Driver Version" in joined and "gpu_memory_total_mib left out" in joined


def test_table_cut_at_80_columns_loses_only_the_cuda_version() -> None:
    result = run("table-580-cut-at-80-columns.txt")
    got = facts(result)
    assert got["driver_version"] == "580.82.07"
    assert "cuda_version" not in got
    assert any("CUDA Version" in note for note in result.notes)
    assert got["gpu_memory_total_mib"] == [189471] * 4


def test_head_cut_inside_a_gpu_leaves_the_count_out() -> None:
    result = run("table-580-head-cut-inside-gpu1.txt")
    got = facts(result)
    assert "gpu_count" not in got
    assert got["gpu_models"] == ["NVIDIA GB200", "NVIDIA GB200"]
    assert "gpu_processes" not in got  # the Processes section is absent, not empty
    assert any("gpu_count left out" in note for note in result.notes)


def test_processes_table_cut_gives_a_lower_bound_with_a_note() -> None:
    result = run("table-580-processes-cut-after-first-row.txt")
    assert facts(result)["gpu_processes"] == 1
    assert "at least" in (result.facts["host.gpu_processes"].note or "")
    assert any("Processes table is cut" in note for note in result.notes)


def test_loop_output_uses_the_last_complete_screen() -> None:
    result = run("table-loop-three-screens-last-cut.txt")
    got = facts(result)
    assert got["gpu_count"] == 2
    assert got["gpu_memory_used_mib"] == [41214, 41214]  # second screen, not the idle first one
    assert got["gpu_processes"] == 2
    assert line(result, "driver_version") == 27
    assert any("3 nvidia-smi screens" in note for note in result.notes)


def test_gpu_in_error_is_a_problem_and_its_values_are_none() -> None:
    result = run("table-470-gpu-lost-err.txt")
    got = facts(result)
    assert got["gpu_count"] == 2
    assert got["gpu_models"] == ["NVIDIA A40", None]
    assert got["gpu_memory_used_mib"] == [0, None]
    assert problem_ids(result) == ["nvidia-smi-gpu-error", "nvidia-smi-gpu-unreachable"]
    assert result.problems[0].evidence[0].line == 14


def test_processes_only_fragment() -> None:
    text = """\
+-----------------------------------------------------------------------------+
| Processes:                                                                  |
|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |
|        ID   ID                                                   Usage      |
|=============================================================================|
|    0   N/A  N/A     41002      C   python3                         70211MiB |
|    1    2    0      41003      C   python3                         19811MiB |
+-----------------------------------------------------------------------------+
"""
    result = parse(text, "procs.txt")
    got = facts(result)
    assert looks_like(text) == "table"
    assert got["gpu_processes"] == 2
    assert got["mig_enabled"] is True  # a GI id exists only on a MIG-enabled GPU
    assert "gpu_count" not in got and "driver_version" not in got


# --- -L ----------------------------------------------------------------------------------------------


def test_list_plain() -> None:
    result = run("list-L-l4x4.txt")
    got = facts(result)
    assert got["gpu_count"] == 4
    assert got["gpu_models"] == ["NVIDIA L4"] * 4
    assert got["gpu_uuids"][0] == "GPU-0e3f6f1c-2b7d-4a5e-9c1d-7f2a3b4c5d6e"
    assert "mig_enabled" not in got  # -L without MIG children says nothing about MIG mode
    assert line(result, "gpu_count") == 2


def test_list_with_indented_mig_children() -> None:
    result = run("list-L-mig-h100-children.txt")
    got = facts(result)
    assert got["gpu_count"] == 2  # physical GPUs only
    assert got["mig_enabled"] is True
    assert line(result, "mig_enabled") == 3
    assert [device["profile"] for device in got["mig_devices"]] == ["3g.40gb", "2g.20gb", "1g.10gb"]
    assert {device["gpu"] for device in got["mig_devices"]} == {0}


def test_list_with_old_style_mig_uuids() -> None:
    got = facts(run("list-L-mig-old-format-a100.txt"))
    assert got["gpu_models"] == ["A100-SXM4-40GB"]
    assert got["mig_devices"][1]["uuid"] == "MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/2/0"


# --- -q and -q -x ------------------------------------------------------------------------------------


def test_query_reads_versions_models_and_processes() -> None:
    result = run("query-q-two-gpus-one-process.txt")
    got = facts(result)
    assert got["driver_version"] == "535.154.05" and got["cuda_version"] == "12.2"
    assert got["gpu_count"] == 2 and line(result, "gpu_count") == 9
    assert got["gpu_models"] == ["NVIDIA L40S", "NVIDIA L40S"]
    assert got["gpu_uuids"][1] == "GPU-5cf7a6b2-ad3e-4f80-9b2c-3d4e5f6a7b8c"
    assert got["gpu_processes"] == 1 and line(result, "gpu_processes") == 41
    assert got["gpu_process_list"] == [
        {"gpu": 0, "pid": 3384101, "name": "/usr/bin/python3", "used_mib": 41206, "type": "C"}
    ]
    assert "mig_enabled" not in got  # MIG Mode Current is N/A
    # FB Memory Usage is the same NVML reading the table's Memory-Usage column shows
    assert got["gpu_memory_used_mib"] == [41214, 0] and got["gpu_memory_total_mib"] == [46068, 46068]


def test_query_memory_subset_reads_only_what_it_shows() -> None:
    got = facts(run("query-q-d-memory-subset.txt"))
    assert got == {
        "driver_version": "550.54.15",
        "cuda_version": "12.4",
        "gpu_count": 1,
        "gpu_memory_used_mib": [0],
        "gpu_memory_total_mib": [15360],
    }


def test_query_with_indentation_lost_still_finds_mig_mode() -> None:
    got = facts(run("query-q-mig-enabled-indent-lost.txt"))
    assert got["mig_enabled"] is True
    assert got["gpu_models"] == ["NVIDIA A100-SXM4-80GB"]
    assert got["gpu_processes"] == 0


def test_query_cut_keeps_attached_count_and_notes_the_rest() -> None:
    result = run("query-q-cut-two-of-four-gpus.txt")
    got = facts(result)
    assert got["gpu_count"] == 4
    assert got["gpu_models"] == ["NVIDIA A10", "NVIDIA A10"]
    assert any("2 of 4 attached GPUs" in note for note in result.notes)


def test_xml_query() -> None:
    result = run("query-xml-one-gpu-one-process.xml")
    got = facts(result)
    assert got["driver_version"] == "535.154.05" and line(result, "driver_version") == 5
    assert got["cuda_version"] == "12.2" and got["gpu_count"] == 1
    assert got["gpu_models"] == ["NVIDIA L40S"]
    assert got["gpu_processes"] == 1
    assert got["gpu_process_list"][0]["pid"] == 3384101
    assert "mig_enabled" not in got


# --- csv ---------------------------------------------------------------------------------------------


def test_query_gpu_csv_with_units() -> None:
    result = run("csv-query-gpu-units.csv")
    got = facts(result)
    assert got["gpu_count"] == 2
    assert got["driver_version"] == "550.127.05"
    assert "cuda_version" not in got
    assert got["gpu_models"] == ["NVIDIA A100-SXM4-40GB"] * 2
    assert got["gpu_memory_used_mib"] == [38211, 1]
    assert got["gpu_memory_total_mib"] == [40960, 40960]
    assert got["mig_enabled"] is False
    assert got["gpu_compute_caps"] == ["8.0", "8.0"]
    assert line(result, "gpu_models") == 3


def test_query_gpu_csv_noheader_nounits_takes_columns_from_the_command() -> None:
    got = facts(run("csv-query-gpu-noheader-nounits.txt"))
    assert got["gpu_memory_used_mib"] == [23110, 18]
    assert got["gpu_memory_total_mib"] == [24564, 24564]
    assert got["driver_version"] == "555.42.06"


def test_query_gpu_csv_nounits_with_header_and_na_mig() -> None:
    got = facts(run("csv-query-gpu-nounits-with-header.csv"))
    assert got["gpu_memory_total_mib"] == [15360] and got["gpu_memory_used_mib"] == [0]
    assert "mig_enabled" not in got  # [N/A]


def test_query_gpu_loop_takes_the_last_complete_sample() -> None:
    result = run("csv-query-gpu-loop-last-sample-cut.txt")
    got = facts(result)
    assert got["gpu_count"] == 2
    assert got["gpu_memory_used_mib"] == [60417, 60417]  # the third sample is cut
    assert line(result, "gpu_memory_used_mib") == 6
    assert any("3 samples" in note for note in result.notes)


def test_query_gpu_noheader_loop_splits_samples_on_the_index() -> None:
    got = facts(run("csv-query-gpu-noheader-loop.txt"))
    assert got["gpu_count"] == 2
    assert got["gpu_memory_used_mib"] == [20514, 20514]


def test_query_gpu_noheader_without_command_names_only_telling_columns() -> None:
    result = run("csv-query-gpu-noheader-no-command.txt")
    got = facts(result)
    assert got["gpu_models"] == ["NVIDIA A10G"]
    assert got["driver_version"] == "535.183.01"
    assert "gpu_memory_used_mib" not in got and "gpu_memory_total_mib" not in got  # used? total? unknown
    assert any("without a header or command" in note for note in result.notes)


def test_compute_apps_csv_counts_processes_only() -> None:
    result = run("csv-compute-apps-two.csv")
    got = facts(result)
    assert got["gpu_processes"] == 2
    assert got["gpu_process_list"][0]["used_mib"] == 41206
    assert got["gpu_process_list"][0]["gpu_uuid"] == "GPU-4be6f5a1-9c2d-4e7f-8a1b-2c3d4e5f6a7b"
    # rows are processes, not GPUs: no GPU facts may be read from them
    assert set(got) == {"gpu_processes", "gpu_process_list"}


def test_compute_apps_csv_with_header_only_means_no_process() -> None:
    got = facts(run("csv-compute-apps-none.csv"))
    assert got["gpu_processes"] == 0


# --- topo -m -----------------------------------------------------------------------------------------


def test_topo_with_tab_and_ansi_underlined_header() -> None:
    result = run("topo-m-pcie-4gpu-tabs-ansi.txt")
    got = facts(result)
    assert got["gpu_count"] == 4
    topology = got["topology"]
    assert topology["interconnect"] == "pcie"
    assert topology["nics"] == 1
    assert topology["links"]["GPU0"]["GPU1"] == "PIX"
    assert topology["links"]["GPU0"]["NIC0"] == "PIX"
    assert line(result, "gpu_count") == 1


def test_topo_with_tabs_lost_in_the_paste() -> None:
    got = facts(run("topo-m-nvlink-8gpu-tabs-lost.txt"))
    assert got["gpu_count"] == 8
    assert got["topology"]["interconnect"] == "nvlink"
    assert got["topology"]["links"]["GPU7"]["GPU0"] == "NV12"


def test_topo_cut_keeps_the_header_count() -> None:
    result = run("topo-m-mixed-cut-after-gpu1.txt")
    got = facts(result)
    assert got["gpu_count"] == 4
    assert got["topology"]["interconnect"] == "mixed"
    assert any("GPU2, GPU3" in note for note in result.notes)


def test_topo_glued_names_and_links() -> None:
    text = (
        "\tGPU0\tGPU1\tNIC0NIC1\tCPU Affinity\nGPU0\t X \tNV8\tPXBSYS\t0-7\nGPU1\tNV8\t X \tSYS\tPXB\t0-7\n"
    )
    got = facts(parse(text, "t.txt"))
    assert got["topology"]["devices"] == ["GPU0", "GPU1", "NIC0", "NIC1"]
    assert got["topology"]["links"]["GPU0"] == {"GPU1": "NV8", "NIC0": "PXB", "NIC1": "SYS"}


# --- versions ----------------------------------------------------------------------------------------


def test_version_output() -> None:
    result = run("version-580.txt")
    assert facts(result) == {"driver_version": "580.82.07", "cuda_version": "13.0", "nvml_version": "580.82"}
    assert line(result, "driver_version") == 4


@pytest.mark.parametrize(
    ("name", "version", "module"),
    [
        ("proc-version-proprietary-535.txt", "535.104.05", "proprietary"),
        ("proc-version-open-aarch64-560.txt", "560.35.03", "open"),
    ],
)
def test_proc_driver_version(name: str, version: str, module: str) -> None:
    got = facts(run(name))
    assert got == {"driver_version": version, "driver_kernel_module": module}


# --- error outputs -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "word", "in_message", "at"),
    [
        ("error-no-devices-in-container.txt", "no-devices", "no devices", 2),
        ("error-driver-unreachable.txt", "driver-unreachable", "communicate", 2),
        ("error-nvml-mismatch-with-library-crlf.txt", "nvml-mismatch", "mismatch", 1),
        ("error-nvml-mismatch-no-library-quoted.txt", "nvml-mismatch", "mismatch", 2),
        ("error-nvml-unknown-error-in-container.txt", "nvml-unknown-error", "unknown", 2),
        ("error-command-not-found.txt", "not-found", "not installed", 2),
    ],
)
def test_error_outputs_become_problems(name: str, word: str, in_message: str, at: int) -> None:
    result = run(name)
    assert len(result.problems) == 1
    problem = result.problems[0]
    assert word in problem.id
    assert in_message in problem.message.lower()
    assert problem.advice
    assert problem.evidence[0].line == at
    got = facts(result)
    assert "driver_version" not in got and "gpu_count" not in got


def test_mismatch_library_version_is_nvml_not_driver() -> None:
    result = run("error-nvml-mismatch-with-library-crlf.txt")
    assert facts(result) == {"nvml_version": "550.127"}
    assert "550.127" in result.problems[0].message


def test_ci_banner_is_no_cuda_version() -> None:
    text = (
        "**********CUDA Version**********\n"
        "Failed to initialize NVML: Driver/library version mismatch\n"
        "NVML library version: 550.144\n"
    )
    result = parse(text, "ci.log")
    assert "gpu.cuda_version" not in result.facts
    assert problem_ids(result) == ["nvidia-smi-nvml-mismatch"]


@pytest.mark.parametrize(
    "text",
    [
        # nvidia-smi run against a hooked or rebuilt libnvidia-ml.so.1
        "Mismatch in versions between nvidia-smi and NVML.\n"
        "Are you sure you are using nvidia-smi provided with the driver?\n",
        '$ ./nvidia-smi\n"Mismatch in versions between nvidia-smi and NVML.\n'
        'Are you sure you are using nvidia-smi provided with the driver?"\n',
        "Mismatch in versions between nvidia-smi and NVML.\n"
        "Are you sure you are using nvidia-smi provided with the driver?\n"
        "Failed to properly shut down NVML: Function Not Found\n",
    ],
)
def test_nvidia_smi_and_nvml_version_mismatch(text: str) -> None:
    assert looks_like(text) == "error"
    result = parse(text, "smi.txt", "container")
    assert problem_ids(result) == ["nvidia-smi-nvml-mismatch"]
    assert "nvidia-smi and the nvml library" in result.problems[0].message.lower()
    assert "LD_LIBRARY_PATH" in result.problems[0].advice
    assert "container.driver_version" not in result.facts


def test_a_failed_nvml_shutdown_alone_is_no_mismatch() -> None:
    result = parse("Failed to properly shut down NVML: Function Not Found\n", "smi.txt", "host")
    assert "nvidia-smi-nvml-mismatch" not in problem_ids(result)


# --- several forms in one file, scope ----------------------------------------------------------------


def test_capture_with_several_commands_merges_the_forms() -> None:
    got = facts(run("capture-several-commands.txt"))
    assert got["driver_version"] == "550.127.05"
    assert got["driver_kernel_module"] == "proprietary"
    assert got["gpu_count"] == 2
    assert got["gpu_models"] == ["NVIDIA L40S", "NVIDIA L40S"]
    assert got["gpu_memory_used_mib"] == [1, 1]
    assert got["gpu_memory_total_mib"] == [46068, 46068]
    assert got["topology"]["interconnect"] == "pcie"


@pytest.mark.parametrize("scope", ["host", "container", "gpu"])
def test_scope_prefixes_every_name(scope: str) -> None:
    result = run("table-535-l40s-x2-vllm.txt", scope)
    assert result.facts and all(name.startswith(f"{scope}.") for name in result.facts)
    assert result.facts[f"{scope}.driver_version"].source.file == "table-535-l40s-x2-vllm.txt"


def test_default_scope_is_gpu() -> None:
    assert "gpu.gpu_count" in parse(read("list-L-l4x4.txt"), "l.txt").facts


# --- what is not nvidia-smi --------------------------------------------------------------------------


def _garbage() -> str:
    rng = random.Random(7)
    return bytes(rng.randrange(256) for _ in range(4096)).decode("latin-1")


NOT_NVIDIA_SMI = {
    "empty": "",
    "blank": " \n\n\t\n",
    "garbage": _garbage(),
    "json-object": '{"model": "Qwen/Qwen3-8B", "messages": [{"role": "user", "content": "nvidia-smi"}]}',
    "prose": "NVIDIA drivers, CUDA, and the container toolkit were installed.\nThen we ran the server.\n",
    "csv-of-something-else": "name, count\nfoo, 3\nbar, 4\n",
}


@pytest.mark.parametrize("name", sorted(NOT_NVIDIA_SMI))
def test_other_text_is_not_claimed_and_parses_to_nothing(name: str) -> None:
    text = NOT_NVIDIA_SMI[name]
    assert looks_like(text) is None
    result = parse(text, name)
    assert result.kind == "nvidia_smi.unknown"
    assert result.facts == {} and result.problems == []
    assert result.notes


@pytest.mark.parametrize("name", ["not-vllm-log.txt", "not-docker-inspect.json"])
def test_logs_and_json_parse_to_nothing(name: str) -> None:
    result = run(name)
    assert result.kind == "nvidia_smi.unknown" and result.facts == {}


def test_collect_env_topology_is_not_claimed() -> None:
    # collect_env embeds a topo matrix and "Nvidia driver version:"; the collect_env parser owns it
    assert looks_like(read("not-collect-env-fragment.txt")) is None


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_prefix_of_every_fixture_parses_without_raising(name: str) -> None:
    lines = read(name).splitlines(keepends=True)
    for end in range(len(lines) + 1):
        text = "".join(lines[:end])
        looks_like(text)
        result = parse(text, name)
        assert not any(note.startswith("nvidia-smi parser could not read") for note in result.notes)


def test_pre_410_banner_has_no_cuda_and_list_gives_the_full_names() -> None:
    text = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 384.111                Driver Version: 384.111                   |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  GeForce GTX 108...  Off  | 00000000:01:00.0  On |                  N/A |
| 23%   38C    P8    10W / 250W |    351MiB / 11171MiB |      0%      Default |
+-------------------------------+----------------------+----------------------+
$ nvidia-smi -L
GPU 0: GeForce GTX 1080 Ti (UUID: GPU-6b1f4c2e-0a3d-4e5f-9a8b-7c6d5e4f3a2b)
"""
    result = parse(text, "old.txt")
    got = facts(result)
    assert got["driver_version"] == "384.111"
    assert "cuda_version" not in got
    assert any("shows no CUDA Version" in note for note in result.notes)
    assert got["gpu_models"] == ["GeForce GTX 1080 Ti"]  # -L's whole name beats the table's '108...'
    assert got["gpu_memory_used_mib"] == [351]


def test_table_indented_as_a_markdown_code_block() -> None:
    indented = "".join("    " + row for row in read("table-535-l40s-x2-vllm.txt").splitlines(keepends=True))
    assert looks_like(indented) == "table"
    assert facts(parse(indented, "x")) == facts(run("table-535-l40s-x2-vllm.txt"))
