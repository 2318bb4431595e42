"""Every way a log reaches the tool: a file, a folder (bundle), .tar.gz/.tgz/.zip bundles, a .gz
log, several paths, and `-` on stdin. The verdict and the line numbers must not depend on it."""

from __future__ import annotations

import gzip
import io
import shutil
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
SAMPLES = Path(__file__).resolve().parents[2] / "samples"
TriageJson = Callable[..., dict[str, Any]]

NCCL = "v1-0.9.2-tp4-worker-nccl.log"  # root at line 58, cuda_init


def _bundle_folder(tmp_path: Path) -> Path:
    """A bundle as a person collects it: the log, nvidia-smi from the host, the command."""
    folder = tmp_path / "run-0714"
    folder.mkdir()
    shutil.copy(LOGS / NCCL, folder / "vllm.log")
    shutil.copy(SAMPLES / "kv-cache-too-small" / "nvidia-smi-host.txt", folder / "nvidia-smi-host.txt")
    (folder / "command.sh").write_text(
        "docker run --gpus all --ipc=host vllm/vllm-openai:v0.9.2 \\\n"
        "  --model mistralai/Mistral-Small-24B-Instruct-2501 --tensor-parallel-size 4 --max-model-len 16384\n"
    )
    return folder


def _assert_nccl_verdict(result: dict[str, Any], file_suffix: str) -> None:
    fe = result["first_error"]
    assert result["phase"] == "cuda_init"
    assert fe["rule"] == "cuda.nccl_error"
    assert fe["line"] == 58
    assert fe["file"].endswith(file_suffix)
    assert fe["text"] == (LOGS / NCCL).read_text().splitlines()[57]


def test_a_log_file(triage_json: TriageJson) -> None:
    result = triage_json(LOGS / NCCL)
    _assert_nccl_verdict(result, NCCL)
    lines = len((LOGS / NCCL).read_text().splitlines())
    assert result["inputs"] == [{"path": str(LOGS / NCCL), "role": "vllm_log", "lines": lines}]


def test_a_bundle_folder_without_manifest_sniffs_roles(tmp_path: Path, triage_json: TriageJson) -> None:
    folder = _bundle_folder(tmp_path)
    result = triage_json(folder)
    _assert_nccl_verdict(result, "run-0714/vllm.log")
    roles = {Path(i["path"]).name: i["role"] for i in result["inputs"]}
    assert roles["vllm.log"] == "vllm_log"
    assert roles["nvidia-smi-host.txt"] == "nvidia_smi"
    assert roles["command.sh"] == "launch_command"


def test_a_bundle_manifest_names_roles(tmp_path: Path, triage_json: TriageJson) -> None:
    folder = _bundle_folder(tmp_path)
    # A log under a name no sniffer would guess, declared in the manifest.
    (folder / "vllm.log").rename(folder / "output-0.txt")
    (folder / "bundle.toml").write_text(
        '[run]\nlabel = "tp4 on pcie box"\nnode = "gpu-07"\nstarted = "2025-07-14T03:21:38Z"\n\n'
        '[[file]]\npath = "output-0.txt"\nrole = "vllm_log"\n\n'
        '[[file]]\npath = "nvidia-smi-host.txt"\nrole = "nvidia_smi.host"\n'
    )
    result = triage_json(folder)
    _assert_nccl_verdict(result, "run-0714/output-0.txt")
    roles = {Path(i["path"]).name: i["role"] for i in result["inputs"]}
    assert roles["output-0.txt"] == "vllm_log"
    assert roles["bundle.toml"] == "manifest"


@pytest.mark.parametrize("suffix", [".tar.gz", ".tgz"])
def test_a_tar_gz_bundle(suffix: str, tmp_path: Path, triage_json: TriageJson) -> None:
    folder = _bundle_folder(tmp_path)
    archive = tmp_path / f"bundle{suffix}"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname="run-0714")
    result = triage_json(archive)
    _assert_nccl_verdict(result, "!run-0714/vllm.log")
    assert result["first_error"]["file"] == f"{archive}!run-0714/vllm.log"


def test_a_zip_bundle(tmp_path: Path, triage_json: TriageJson) -> None:
    folder = _bundle_folder(tmp_path)
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.iterdir()):
            zf.write(path, f"run-0714/{path.name}")
    result = triage_json(archive)
    _assert_nccl_verdict(result, "!run-0714/vllm.log")


def test_a_tar_gz_of_the_sample_bundle_with_its_manifest(tmp_path: Path, triage_json: TriageJson) -> None:
    """The README's sample, shipped as an archive: the manifest inside still names the roles."""
    archive = tmp_path / "kv-cache-too-small.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(SAMPLES / "kv-cache-too-small", arcname="kv-cache-too-small")
    result = triage_json(archive)
    assert result["phase"] == "engine_reserve"
    assert result["first_error"]["rule"] == "kv.max_seq_len_exceeds_cache"
    roles = {i["path"].split("!", 1)[1]: i["role"] for i in result["inputs"]}
    assert roles["kv-cache-too-small/vllm.log"] == "vllm_log"
    assert roles["kv-cache-too-small/nvidia-smi-host.txt"] == "nvidia_smi"


def test_a_gz_log(tmp_path: Path, triage_json: TriageJson) -> None:
    gz = tmp_path / "vllm.log.gz"
    gz.write_bytes(gzip.compress((LOGS / NCCL).read_bytes()))
    _assert_nccl_verdict(triage_json(gz), "vllm.log.gz")


def test_a_gz_log_inside_a_tar_bundle(tmp_path: Path, triage_json: TriageJson) -> None:
    """Rotated logs are often gzipped inside the bundle (vllm.log.1.gz)."""
    archive = tmp_path / "bundle.tar"
    data = gzip.compress((LOGS / NCCL).read_bytes())
    with tarfile.open(archive, "w") as tar:
        info = tarfile.TarInfo("logs/vllm.log.1.gz")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    _assert_nccl_verdict(triage_json(archive), "!logs/vllm.log.1.gz")


def test_stdin(triage_json: TriageJson) -> None:
    result = triage_json("-", input=(LOGS / NCCL).read_bytes())
    _assert_nccl_verdict(result, "<stdin>")


def test_stdin_gzip(triage_json: TriageJson) -> None:
    """`kubectl logs … | gzip | ssh host vllm-triage triage -`."""
    result = triage_json("-", input=gzip.compress((LOGS / NCCL).read_bytes()))
    _assert_nccl_verdict(result, "<stdin>")


def test_stdin_utf16_paste(triage_json: TriageJson) -> None:
    text = (LOGS / NCCL).read_text().replace("\n", "\r\n")
    result = triage_json("-", input=text.encode("utf-16"))
    _assert_nccl_verdict(result, "<stdin>")


def test_several_logs_the_earliest_phase_root_wins(triage_json: TriageJson) -> None:
    """Two logs of one run (API server + a separately captured worker): a root beats a stand-in,
    then the earlier phase."""
    result = triage_json(LOGS / "only-consequences-paste.txt", LOGS / NCCL)
    _assert_nccl_verdict(result, NCCL)
    assert {entry["file"] for entry in result["logs"]} == {
        str(LOGS / "only-consequences-paste.txt"),
        str(LOGS / NCCL),
    }
