"""Values read the same way whichever parser wrote them."""

from __future__ import annotations

import pytest

from vllm_triage.fingerprint.values import (
    canonical,
    cuda_major_minor,
    driver_tuple,
    gpu_selection,
    image_name,
    opaque,
    same,
    version_tuple,
    visible_devices_count,
)


@pytest.mark.parametrize(
    ("given", "ids", "expected", "size"),
    [
        ('"device=0,1"', False, "device=0,1", 2),  # docker run --gpus '"device=0,1"' after shell unquoting
        ("device=0,1", False, "device=0,1", 2),  # the launch parser's spelling
        ("0,1", False, "device=0,1", 2),  # inspect's DeviceIDs joined
        ("all", False, "all", None),
        ("-1", False, "all", None),  # inspect Count -1
        ("2", False, "count=2", 2),  # docker --gpus 2 is a count
        ("2", True, "device=2", 1),  # NVIDIA_VISIBLE_DEVICES=2 is a device
        ("count=4", False, "count=4", 4),
        ("nvidia.com/gpu=all", False, "all", None),  # CDI
        ("capabilities=compute,utility,device=1,2", False, "device=1,2", 2),
        ("device=GPU-1a52814d-8bff", False, "device=gpu-1a52814d-8bff", 1),
        ("none", True, "count=0", 0),
    ],
)
def test_gpu_selection_spellings(given: str, ids: bool, expected: str, size: int | None) -> None:
    selection = gpu_selection(given, ids_not_count=ids)
    assert selection is not None
    assert str(selection) == expected
    assert selection.size == size


def test_gpu_selection_unreadable_is_none() -> None:
    assert gpu_selection("") is None
    assert gpu_selection("whatever=1") is None


def test_canonical_compares_by_meaning() -> None:
    assert same("true", True) and same("2", 2) and same("0.90", 0.9)
    assert same('{"level": 3}', {"level": 3})  # launch command JSON text vs the log's dict repr
    assert same(["scout"], "scout")  # served_model_name is a list in the log
    assert not same("2", 4)
    assert canonical("Qwen/Qwen3-8B") == "Qwen/Qwen3-8B"


def test_opaque_reprs_are_not_compared() -> None:
    assert opaque("<function ServeSubcommand.cmd at 0x7f>")
    assert opaque("{'mode': <CompilationMode.VLLM_COMPILE: 3>}")
    assert not opaque("a<b")
    assert not opaque("cuda>=12.8 brand=tesla,driver>=535,driver<536 brand=tesla,driver>=550,driver<551")


def test_image_name() -> None:
    assert image_name("docker.io/library/ubuntu:22.04") == image_name("ubuntu:22.04")
    assert image_name("docker.io/vllm/vllm-openai:v0.9.2") == "vllm/vllm-openai:v0.9.2"


def test_versions() -> None:
    assert version_tuple("v0.11.1.dev12+g5ded9e9aa") == (0, 11, 1)
    assert version_tuple("0.6.6.post1") == (0, 6, 6)
    assert version_tuple("latest") is None
    assert driver_tuple("580.159.04") == (580, 159, 4)
    assert driver_tuple("r575") == (575,)
    assert cuda_major_minor("12.8.1") == "12.8"
    assert cuda_major_minor("2.8.0+cu128") == "12.8"
    assert cuda_major_minor("v0.15.0-cu130") == "13.0"
    assert cuda_major_minor("cuda>=12.4 brand=tesla,driver>=470,driver<471") == "12.4"


def test_visible_devices_count() -> None:
    assert visible_devices_count("0,1,2,3,4,5,6,7") == 8
    assert visible_devices_count("5") == 1
    assert visible_devices_count("all") is None
