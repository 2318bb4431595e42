"""Combining artefacts: provenance on every value, precedence, scope, derived facts, bad input."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fingerprint_helpers import BUNDLES, finding, ids, run

from vllm_triage.core.errors import InputError
from vllm_triage.fingerprint import combine as combine_mod
from vllm_triage.fingerprint import data
from vllm_triage.ingest.sources import Source


@pytest.mark.parametrize("bundle", sorted(p.name for p in BUNDLES.iterdir() if p.is_dir()))
def test_every_value_has_provenance(bundle: str) -> None:
    found = run(BUNDLES / bundle)
    assert found.knobs or found.facts
    for name, sourced in {**found.knobs, **found.facts}.items():
        assert Path(sourced.source.file).parent.name == bundle, name
        assert isinstance(sourced.source.line, int) and sourced.source.line >= 1, name
    for item in found.findings:
        assert item.evidence, item.id
        assert item.severity in ("error", "warning", "info") and item.id == item.id.lower()


def test_json_contract_shape() -> None:
    data = run(BUNDLES / "pinned-baseline").to_json()
    assert list(data) == ["schema", "knobs", "facts", "findings"]
    assert data["schema"] == "vllm-triage.fingerprint/1"
    knob = data["knobs"]["arg.tensor_parallel_size"]
    assert knob["value"] == "2" and set(knob["source"]) == {"file", "line"}


def test_inspect_beats_the_retyped_command_and_gpu_spellings_agree() -> None:
    found = run(BUNDLES / "pinned-baseline")
    assert Path(found.knobs["arg.model"].source.file).name == "inspect.json"
    # run.sh says --gpus '"device=0,1"', inspect says DeviceIDs ["0","1"]: one selection, no conflict.
    assert found.value("container.gpus") == "0,1"
    assert found.value("container.gpu_selection") == "device=0,1"
    assert found.value("container.gpus_requested") == 2
    assert "value-conflict" not in ids(found)


def test_a_real_disagreement_is_a_conflict(scratch: Callable[..., Path]) -> None:
    run_sh = (BUNDLES / "pinned-baseline" / "run.sh").read_text().replace("device=0,1", "device=2,3")
    found = run(scratch("pinned-baseline", {"run.sh": run_sh}))
    check = finding(found, "value-conflict")
    assert "container.gpus" in check.message and "device=2,3" in check.message
    assert found.value("container.gpus") == "0,1"  # inspect wins
    assert "run.sh" in (found.knobs["container.gpus"].note or "")


def test_manifest_decides_scope_and_run_metadata() -> None:
    found = run(BUNDLES / "pinned-baseline")  # smi-before.txt / smi-inside.txt: names say nothing
    assert found.value("host.driver_version") == "580.95.05"
    assert found.value("container.gpu_count") == 2
    assert not any(name.startswith("gpu.") for name in found.facts)
    assert "gpu-scope-unstated" not in ids(found)
    assert found.value("host.node") == "gpu-17"
    assert found.knobs["host.node"].source.line == 3


def test_file_name_decides_scope() -> None:
    found = run(BUNDLES / "driver-inside-differs")
    assert found.value("host.driver_version") == "580.95.05"
    assert found.value("container.driver_version") == "570.133.20"


def test_unknown_scope_is_said_not_guessed(scratch: Callable[..., Path]) -> None:
    table = (BUNDLES / "shared-gpu-node" / "nvidia-smi-host.txt").read_text()
    found = run(scratch(files={"smi.txt": table}))
    assert found.value("gpu.driver_version") == "580.95.05"
    assert not any(name.startswith(("host.", "container.")) for name in found.facts)
    check = finding(found, "gpu-scope-unstated")
    assert check.severity == "info" and "smi.txt" in check.message


def test_cuda_build_derivations(scratch: Callable[..., Path]) -> None:
    tagged = run(BUNDLES / "cu130-image-r575-node")
    assert tagged.facts["cuda.build"].note == "from the -cu130 tag"
    from_env = run(BUNDLES / "pinned-baseline")
    assert from_env.value("cuda.build") == "13.0" and "CUDA_VERSION" in (
        from_env.facts["cuda.build"].note or ""
    )
    from_collect_env = run(BUNDLES / "log-vs-command")
    assert from_collect_env.value("cuda.build") == "12.8"
    assert Path(from_collect_env.facts["cuda.build"].source.file).name == "collect-env.txt"
    day0 = run(scratch(files={"launch.sh": "docker run --gpus all vllm/vllm-openai:kimi-k3 --model /m\n"}))
    assert day0.value("cuda.build") == "13.0"
    unofficial = run(scratch(files={"launch.sh": "docker run --gpus all myorg/vllm:v0.10.1 --model /m\n"}))
    assert "cuda.build" not in unofficial.facts  # a private build's CUDA is not the release default


def test_log_head_only_for_huge_logs(scratch: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(combine_mod, "LOG_HEAD_BYTES", 4096)
    log = (BUNDLES / "log-vs-command" / "server.log").read_text()
    filler = "".join(
        f"(APIServer pid=1) INFO 11-30 09:21:{i % 60:02d} [loggers.py:123] Engine 000: Avg prompt "
        "throughput: 0.0 tokens/s\n"
        for i in range(200)
    )
    found = run(scratch(files={"server.log": log + filler}))
    assert found.value("arg.tensor_parallel_size") == 4
    assert any("only the first" in note for note in found.notes)


def test_lone_file_bad_input(scratch: Callable[..., Path]) -> None:
    folder = scratch(files={"empty.txt": "", "notes.txt": "remember to buy milk\nand eggs\n"})
    with pytest.raises(InputError) as empty:
        run(folder / "empty.txt")
    assert empty.value.problem_id == "empty-input"
    with pytest.raises(InputError) as prose:
        run(folder / "notes.txt")
    assert prose.value.exit_code == 4
    binary = folder / "blob.bin"
    binary.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(InputError):
        run(binary)


def test_bundle_with_nothing_usable(scratch: Callable[..., Path]) -> None:
    with pytest.raises(InputError) as error:
        run(scratch(files={"a.txt": "hello\n", "b.txt": "world\n"}))
    assert error.value.problem_id == "no-artefact"


def test_unusable_files_in_a_bundle_are_noted(scratch: Callable[..., Path]) -> None:
    found = run(scratch("shared-gpu-node", {"README.txt": "collected by ops on Monday\n", "empty.log": ""}))
    assert any("README.txt" in note for note in found.notes)
    assert "gpu-occupied" in ids(found)


def test_a_wrong_sniff_gets_a_second_opinion() -> None:
    # Sniffing stops at the first parser that claims the head of a file; when that parser then
    # reads nothing, the others that claim the text are asked.
    path = BUNDLES / "shared-gpu-node" / "nvidia-smi-host.txt"
    source = Source(name=str(path), opener=lambda: open(path, "rb"), role="request")  # noqa: SIM115
    found = combine_mod.combine([source], data.load())
    assert found.value("host.driver_version") == "580.95.05"
    assert found.inputs[0]["role"] == "nvidia_smi"
    assert any("read as nvidia_smi" in note for note in found.notes)
