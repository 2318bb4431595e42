"""`vllm-triage collect` against stand-in executables on PATH (shell scripts printing what the real
tools print, one failing, one hanging past --timeout, some absent): every step lands in
bundle.toml with its status and why, and the folder it writes is a bundle the rest of the tool reads."""

from __future__ import annotations

import json
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
import tomllib
from click.testing import CliRunner

from vllm_triage.bundle.collect.run import Host
from vllm_triage.bundle.collect.scene import Request, collect
from vllm_triage.cli import cli
from vllm_triage.ingest.sources import collect as collect_sources
from vllm_triage.parsers.roles import assign_roles

FIXTURES = Path(__file__).parent.parent / "fixtures"
CAT = shutil.which("cat")
SLEEP = shutil.which("sleep")
HF = "hf_" + "Kt5Lp8Qw2Er4" * 3


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def _stage(tmp_path: Path) -> Path:
    """Outputs the stand-ins print, copied from the parsers' fixtures."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(FIXTURES / "nvidia_smi/table-535-l40s-x2-vllm.txt", data / "nvidia-smi.txt")
    shutil.copy(FIXTURES / "nvidia_smi/list-L-l4x4.txt", data / "nvidia-smi-L.txt")
    shutil.copy(FIXTURES / "inspect/docker-inspect-vllm-serve-oom-killed.json", data / "inspect.json")
    shutil.copy(FIXTURES / "inspect/docker-image-inspect-repodigests.json", data / "image.json")
    shutil.copy(FIXTURES / "collect_env/vllm-0.11.0-sectioned-h100x8.txt", data / "collect_env.txt")
    lines = (FIXTURES / "logs/v1-0.10.2-tp1-profile-oom.log").read_text().splitlines()
    stamped = [f"2025-09-21T11:03:{i % 60:02d}.000000000Z {line}" for i, line in enumerate(lines)]
    half = len(stamped) // 2
    (data / "log-stdout.txt").write_text("\n".join(stamped[:half]) + "\n")
    (data / "log-stderr.txt").write_text("\n".join(stamped[half:]) + "\n")
    (data / "version").write_text(
        (FIXTURES / "nvidia_smi/proc-version-proprietary-535.txt").read_text().split("\n", 1)[1]
    )
    return data


def _nvidia_smi(bin_dir: Path, data: Path) -> None:
    _script(
        bin_dir / "nvidia-smi",
        f"""
case "$1" in
  -L) {CAT} {data}/nvidia-smi-L.txt ;;
  topo) echo "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system." ; echo "topo: unsupported" >&2; exit 12 ;;
  -q) echo "==============NVSMI LOG=============="; echo $$ > {data}/hung.pid
      {SLEEP} 30 & echo $! > {data}/hung-child.pid; wait ;;
  *) {CAT} {data}/nvidia-smi.txt ;;
esac
""",
    )


def _docker(bin_dir: Path, data: Path, name: str = "docker") -> None:
    image_id = json.loads((data / "inspect.json").read_text())[0]["Image"]
    _script(
        bin_dir / name,
        f"""
echo "$@" >> {data}/{name}.calls
case "$1" in
  inspect) [ "$2" = "qwen3-32b" ] || {{ echo "Error: No such object: $2" >&2; exit 1; }}; {CAT} {data}/inspect.json ;;
  image) [ "$3" = "{image_id}" ] || {{ echo "Error: No such image: $3" >&2; exit 1; }}; {CAT} {data}/image.json ;;
  exec) shift 2
    case "$1" in
      nvidia-smi) {CAT} {data}/nvidia-smi.txt ;;
      vllm) echo 'OCI runtime exec failed: exec failed: unable to start container process: exec: "vllm": executable file not found in $PATH: unknown' >&2; exit 127 ;;
      python3) {CAT} {data}/collect_env.txt ;;
    esac ;;
  logs) {CAT} {data}/log-stdout.txt; {CAT} {data}/log-stderr.txt >&2 ;;
esac
""",
    )


def _kubectl(bin_dir: Path, data: Path) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "vllm-0", "namespace": "ml"},
        "spec": {
            "nodeName": "gpu-node-9",
            "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.10.2"}],
        },
        "status": {
            "startTime": "2025-09-21T11:03:00Z",
            "containerStatuses": [
                {
                    "name": "vllm",
                    "restartCount": 3,
                    "imageID": "docker.io/vllm/vllm-openai@sha256:" + "ab" * 32,
                }
            ],
        },
    }
    (data / "pod.json").write_text(json.dumps(pod, indent=4))
    _script(
        bin_dir / "kubectl",
        f"""
echo "$@" >> {data}/kubectl.calls
case "$1" in
  get) {CAT} {data}/pod.json ;;
  describe) echo "Name:         vllm-0"; echo "Last State:   Terminated"; echo "  Reason:     OOMKilled" ;;
  logs) case "$*" in
      *--previous*) echo 'Error from server (BadRequest): previous terminated container "vllm" in pod "vllm-0" not found' >&2; exit 1 ;;
      *) {CAT} {data}/log-stdout.txt ;;
    esac ;;
  exec) case "$*" in
      *nvidia-smi*) {SLEEP} 30 ;;
      *collect-env*) {CAT} {data}/collect_env.txt ;;
    esac ;;
esac
""",
    )


def _host(bin_dir: Path, data: Path, **extra: str) -> Host:
    return Host(
        environ={"PATH": str(bin_dir), "HOME": "/home/alice", "HF_TOKEN": HF, "NCCL_DEBUG": "INFO", **extra},
        proc_driver_version=data / "version",
        hostname=lambda: "gpu-node-17",
        now=lambda: datetime(2025, 9, 21, 11, 30, 0, tzinfo=timezone.utc),
        kill_grace_s=0.5,
    )


def _manifest(root: Path) -> dict:
    return tomllib.loads((root / "bundle.toml").read_text())


def _steps(root: Path) -> dict[str, dict]:
    return {step["name"]: step for step in _manifest(root)["step"]}


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.fixture
def scene(tmp_path: Path) -> tuple[Path, Path]:
    data = _stage(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _nvidia_smi(bin_dir, data)
    _docker(bin_dir, data)
    _kubectl(bin_dir, data)
    return bin_dir, data


def test_container_scene_records_ok_failed_timeout_and_fallback(scene, tmp_path: Path) -> None:
    bin_dir, data = scene
    out = tmp_path / "bundle"
    started = time.monotonic()
    result = collect(
        Request(
            str(out),
            container="qwen3-32b",
            timeout=1.0,
            launch=["vllm", "serve", "Qwen/Qwen3-32B", "--api-key", "tok-1234-abcd"],
            label="trial-1",
        ),
        _host(bin_dir, data),
    )
    assert time.monotonic() - started < 15
    steps = _steps(out)
    assert {name: s["status"] for name, s in steps.items()} == {
        "host.nvidia-smi": "ok",
        "host.nvidia-smi-L": "ok",
        "host.nvidia-smi-topo": "failed",
        "host.nvidia-smi-q": "timeout",
        "host.driver-version": "ok",
        "container.inspect": "ok",
        "container.image-inspect": "ok",
        "container.nvidia-smi": "ok",
        "container.collect-env": "ok",
        "container.logs": "ok",
        "launch-command": "ok",
        "environment": "ok",
    }
    topo = steps["host.nvidia-smi-topo"]
    assert topo["exit_code"] == 12 and topo["reason"] == "exit 12: topo: unsupported"
    assert (
        topo["command"] == "nvidia-smi topo -m" and "output" in topo
    )  # nvidia-smi's own error text is evidence
    hung = steps["host.nvidia-smi-q"]
    assert "exit_code" not in hung and "no result within 1 s" in hung["reason"] and hung["seconds"] < 5
    assert hung["reason"].endswith("partial output kept") and hung["output"] == "host/nvidia-smi-q.txt"
    assert (out / "host/nvidia-smi-q.txt").read_text().startswith("==============NVSMI LOG")
    # The hung tool and the child it started were both stopped.
    assert not _alive(int((data / "hung.pid").read_text())) and not _alive(
        int((data / "hung-child.pid").read_text())
    )
    env_step = steps["container.collect-env"]
    assert env_step["command"] == "docker exec qwen3-32b python3 -m vllm.collect_env"
    assert "exit 127" in env_step["reason"] and env_step["reason"].endswith(
        "used `docker exec qwen3-32b python3 -m vllm.collect_env`"
    )
    # The image that actually ran is asked for by its ID, not by a tag that may have moved since.
    assert "image inspect sha256:3f2a91c0" in (data / "docker.calls").read_text()
    run = _manifest(out)["run"]
    assert run["label"] == "trial-1" and run["node"] == "gpu-node-17" and run["runtime"] == "docker"
    assert run["captured"] == "2025-09-21T11:30:00Z" and run["started"] == "2025-10-20T08:14:02.694018331Z"
    assert run["container"] == "qwen3-32b"
    log = (out / "container/vllm.log").read_text()
    assert "Automatically detected platform cuda" in log and "CUDA out of memory" in log  # stdout and stderr
    assert (out / "launch-command.sh").read_text().splitlines()[
        1
    ] == "vllm serve Qwen/Qwen3-32B --api-key tok-1234-abcd"
    assert f"HF_TOKEN={HF}\n" in (out / "environment.env").read_text()
    assert result.to_json()["steps"][0]["name"] == "host.nvidia-smi"


def test_the_collected_folder_is_a_bundle_the_tool_reads(scene, tmp_path: Path) -> None:
    bin_dir, data = scene
    out = tmp_path / "bundle"
    collect(
        Request(str(out), container="qwen3-32b", timeout=1.0, launch=["vllm", "serve", "x"]),
        _host(bin_dir, data),
    )
    files = {f["path"]: f["role"] for f in _manifest(out)["file"]}
    assert files["host/nvidia-smi.txt"] == "nvidia_smi.host"
    assert files["container/nvidia-smi.txt"] == "nvidia_smi.container"
    assert files["container/inspect.json"] == files["container/image-inspect.json"] == "container_inspect"
    assert files["container/collect-env.txt"] == "collect_env" and files["container/vllm.log"] == "vllm_log"
    assert files["steps/host.nvidia-smi-topo.stderr.txt"] == "unknown"
    for path in files:
        assert (out / path).is_file(), path
    sources = assign_roles(collect_sources([str(out)]))
    roles = {Path(s.name).relative_to(out).as_posix(): (s.role, s.scope) for s in sources}
    assert roles["host/nvidia-smi-L.txt"] == ("nvidia_smi", "host")
    assert roles["container/nvidia-smi.txt"] == ("nvidia_smi", "container")
    assert roles["container/vllm.log"][0] == "vllm_log" and roles["environment.env"][0] == "environment"
    assert roles["bundle.toml"][0] == "manifest"
    triage = CliRunner().invoke(cli, ["triage", str(out), "--format", "json"])
    assert triage.exit_code == 0, triage.output
    verdict = json.loads(triage.stdout)
    assert verdict["phase"] == "engine_reserve" and verdict["first_error"]["file"].endswith(
        "container/vllm.log"
    )
    fingerprint = CliRunner().invoke(cli, ["fingerprint", str(out), "--format", "json"])
    assert fingerprint.exit_code == 0, fingerprint.output


def test_a_collected_bundle_redacts_clean(scene, tmp_path: Path) -> None:
    bin_dir, data = scene
    out = tmp_path / "bundle"
    collect(
        Request(
            str(out),
            container="qwen3-32b",
            timeout=1.0,
            launch=["vllm", "serve", "x", "--api-key", "tok-1234-abcd"],
        ),
        _host(bin_dir, data),
    )
    shared = tmp_path / "shared"
    result = CliRunner().invoke(cli, ["redact", str(out), "--out", str(shared)])
    assert result.exit_code == 0, result.output
    assert HF not in (shared / "environment.env").read_text()
    assert "--api-key <redacted:key:1>" in (shared / "launch-command.sh").read_text()
    assert (shared / "bundle.toml").read_text() == (out / "bundle.toml").read_text()


def test_pod_scene_through_kubectl(scene, tmp_path: Path) -> None:
    bin_dir, data = scene
    out = tmp_path / "bundle"
    collect(Request(str(out), pod="vllm-0", namespace="ml", timeout=1.0), _host(bin_dir, data))
    steps = _steps(out)
    assert {name: s["status"] for name, s in steps.items() if name.startswith("pod.")} == {
        "pod.get": "ok",
        "pod.describe": "ok",
        "pod.logs": "ok",
        "pod.logs-previous": "failed",
        "pod.nvidia-smi": "timeout",
        "pod.collect-env": "ok",
    }
    assert "previous terminated container" in steps["pod.logs-previous"]["reason"]
    calls = (data / "kubectl.calls").read_text().splitlines()
    assert "get pod vllm-0 -n ml -o json" in calls
    assert "logs vllm-0 -n ml --timestamps --all-containers" in calls
    assert "exec vllm-0 -n ml -- vllm collect-env" in calls
    run = _manifest(out)["run"]
    # The failing node is the pod's, not the machine kubectl ran on.
    assert run["node"] == "gpu-node-9" and run["collector"] == "gpu-node-17"
    assert run["pod"] == "vllm-0" and run["namespace"] == "ml" and run["started"] == "2025-09-21T11:03:00Z"
    files = {f["path"]: f["role"] for f in _manifest(out)["file"]}
    assert files["pod/vllm.log"] == "vllm_log" and "pod/vllm-previous.log" not in files
    assert files["steps/pod.logs-previous.stderr.txt"] == "unknown"


def test_missing_tools_are_recorded_not_fatal(tmp_path: Path) -> None:
    data = _stage(tmp_path)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    out = tmp_path / "bundle"
    collect(Request(str(out), container="qwen3-32b", timeout=1.0), _host(empty, data, PATH=str(empty)))
    steps = _steps(out)
    assert steps["host.nvidia-smi"] == {
        "name": "host.nvidia-smi",
        "command": "nvidia-smi",
        "status": "missing",
        "seconds": 0.0,
        "reason": "nvidia-smi not found on PATH",
    }
    for name in (
        "container.inspect",
        "container.image-inspect",
        "container.nvidia-smi",
        "container.collect-env",
        "container.logs",
    ):
        assert steps[name]["status"] == "missing" and steps[name]["reason"] == "docker not found on PATH", (
            name
        )
    assert steps["host.driver-version"]["status"] == "ok"
    (data / "version").unlink()
    out2 = tmp_path / "bundle2"
    collect(Request(str(out2)), _host(empty, data, PATH=str(empty)))
    assert _steps(out2)["host.driver-version"]["status"] == "missing"
    assert not any(name.startswith(("container.", "pod.")) for name in _steps(out2))


def test_podman_when_docker_is_absent(tmp_path: Path) -> None:
    data = _stage(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _docker(bin_dir, data, name="podman")
    out = tmp_path / "bundle"
    collect(Request(str(out), container="qwen3-32b", timeout=1.0), _host(bin_dir, data))
    assert _manifest(out)["run"]["runtime"] == "podman"
    assert _steps(out)["container.logs"]["command"] == "podman logs -t qwen3-32b"
    assert _steps(out)["container.inspect"]["status"] == "ok"


def test_a_failed_inspect_is_kept_aside_not_as_an_inspect(scene, tmp_path: Path) -> None:
    bin_dir, data = scene
    out = tmp_path / "bundle"
    collect(Request(str(out), container="no-such", timeout=1.0), _host(bin_dir, data))
    steps = _steps(out)
    assert steps["container.inspect"]["status"] == "failed"
    assert steps["container.inspect"]["reason"] == "exit 1: Error: No such object: no-such"
    assert steps["container.image-inspect"]["status"] == "failed"
    assert "no image known" in steps["container.image-inspect"]["reason"]
    files = {f["path"]: f["role"] for f in _manifest(out)["file"]}
    assert "container/inspect.json" not in files


def test_cli_collect(scene, tmp_path: Path) -> None:
    bin_dir, data = scene
    out = tmp_path / "bundle"
    runner = CliRunner()
    env = {"PATH": str(bin_dir)}
    result = runner.invoke(
        cli,
        [
            "collect",
            "--out",
            str(out),
            "--container",
            "qwen3-32b",
            "--timeout",
            "1",
            "--format",
            "json",
            "--",
            "vllm",
            "serve",
            "Qwen/Qwen3-32B",
            "--tensor-parallel-size",
            "4",
        ],
        env=env,
    )
    assert result.exit_code == 0, result.output
    data_out = json.loads(result.stdout)
    assert data_out["schema"] == "vllm-triage.collect/1"
    statuses = {s["name"]: s["status"] for s in data_out["steps"]}
    assert statuses["host.nvidia-smi-q"] == "timeout" and statuses["host.driver-version"] in ("ok", "missing")
    assert "--tensor-parallel-size 4" in (out / "launch-command.sh").read_text()
    text = runner.invoke(cli, ["collect", "--out", str(tmp_path / "b2"), "--timeout", "1"], env=env)
    assert text.exit_code == 0 and "vllm-triage redact" in text.output and "timeout " in text.output
    again = runner.invoke(cli, ["collect", "--out", str(out)], env=env)
    assert again.exit_code == 2 and "out-not-empty" in again.stderr
    both = runner.invoke(cli, ["collect", "--out", str(tmp_path / "x"), "--container", "a", "--pod", "b"])
    assert both.exit_code == 2 and "not both" in both.output
    stray = runner.invoke(cli, ["collect", "--out", str(tmp_path / "x"), "--namespace", "ml"])
    assert stray.exit_code == 2
