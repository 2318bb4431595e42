"""`vllm-triage collect`: snapshot the scene of a failed run into a bundle folder.

The only code in vllm-triage that runs anything. Every step is a local, read-only command run with
an argument list (no shell), its own timeout, stdin closed and stdout/stderr captured to files;
nothing is sent anywhere and nothing needs root. A step that cannot run (tool missing), fails
(non-zero exit) or hangs (timeout) is recorded in `bundle.toml` with why — a missing artefact is
data for `check`, never a reason to stop collecting the others.

What is kept is what the tools printed, secrets included (the environment, docker inspect's Env,
the launch command): `vllm-triage redact` makes the copy to share.
"""

from __future__ import annotations

import codecs
import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from vllm_triage.bundle.outdir import SafeTree
from vllm_triage.core.errors import InputError
from vllm_triage.ingest.limits import LIMITS, human
from vllm_triage.ingest.readers import open_regular

DEFAULT_TIMEOUT_S = 60.0
STATUSES = ("ok", "failed", "timeout", "missing")
STEP_DIR = "steps"  # stderr of steps, and the output of steps that failed
_REASON_CHARS = 300


@dataclass
class Host:
    """What collect reads from the machine, injectable so tests need no GPU, docker or cluster."""

    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    proc_driver_version: Path = Path("/proc/driver/nvidia/version")
    hostname: Callable[[], str] = socket.gethostname
    now: Callable[[], datetime] = lambda: datetime.now(timezone.utc)
    kill_grace_s: float = 2.0

    def which(self, program: str) -> str | None:
        return shutil.which(program, path=self.environ.get("PATH", os.defpath))


@dataclass
class Step:
    name: str
    command: str  # as a person would type it (shlex-quoted), or what was read/recorded
    status: str  # ok | failed | timeout | missing
    exit_code: int | None
    seconds: float
    reason: str = ""
    output: str | None = None  # bundle-relative path of what the step produced

    def to_manifest(self) -> dict:
        return {
            "name": self.name,
            "command": self.command,
            "status": self.status,
            "exit_code": self.exit_code,
            "seconds": round(self.seconds, 3),
            "reason": self.reason,
            "output": self.output,
        }


@dataclass
class CollectResult:
    root: Path
    run: dict
    files: list[dict] = field(default_factory=list)  # {path, role}
    steps: list[Step] = field(default_factory=list)
    required_failed: list[Step] = field(default_factory=list)  # see scene.required_failures

    def to_json(self) -> dict:
        return {
            "schema": "vllm-triage.collect/1",
            "bundle": str(self.root),
            "run": self.run,
            "files": self.files,
            "steps": [s.to_manifest() for s in self.steps],
            "complete": not self.required_failed,
            "required_failed": [s.name for s in self.required_failed],
        }


class Collector:
    """Runs steps into one bundle folder and remembers what each produced."""

    def __init__(self, root: Path, timeout: float, host: Host) -> None:
        self.root = root
        # Every file and folder of the bundle is made through this: never through a symlink.
        self.tree = SafeTree(root)
        self.timeout = timeout
        self.host = host
        self.result = CollectResult(root, {})

    # ------------------------------------------------------------------ running a command

    def run(
        self,
        name: str,
        argv: list[str],
        output: str,
        role: str,
        *,
        merge_stderr: bool = False,
        keep_failed_output: bool = False,
    ) -> Step:
        step = self._execute(name, argv, output, merge_stderr)
        self._keep(step, output, role, keep_failed_output)
        self.result.steps.append(step)
        return step

    def run_with_fallback(self, name: str, argvs: list[list[str]], output: str, role: str) -> Step:
        """The first command that succeeds; a timeout stops the search (the next would hang too)."""
        attempts: list[str] = []
        step = None
        for argv in argvs:
            step = self._execute(name, argv, output, merge_stderr=False)
            if step.status == "ok":
                break
            attempts.append(f"`{step.command}`: {step.reason}")
            if step.status in ("timeout", "missing"):
                break  # the next attempt would hang too, or needs the same missing tool
        assert step is not None
        if step.status == "ok" and attempts:
            step.reason = "; ".join(attempts) + f"; used `{step.command}`"
        elif len(attempts) > 1:
            step.reason = "; ".join(attempts)
        self._keep(step, output, role, keep_failed_output=False)
        self.result.steps.append(step)
        return step

    def _execute(self, name: str, argv: list[str], output: str, merge_stderr: bool) -> Step:
        command = shlex.join(argv)
        executable = self.host.which(argv[0])
        if executable is None:
            return Step(name, command, "missing", None, 0.0, f"{argv[0]} not found on PATH")
        out_path = self.root / output
        err_rel = f"{STEP_DIR}/{name}.stderr.txt"
        err_path = self.root / err_rel
        started = time.monotonic()
        with self.tree.open_write(output) as out, self.tree.open_write(err_rel) as err:
            try:
                process = subprocess.Popen(
                    [executable, *argv[1:]],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT if merge_stderr else err,
                    env=dict(self.host.environ),
                    # Its own process group, so a timeout kills the tool's children too.
                    start_new_session=True,
                )
            except OSError as exc:
                return Step(
                    name,
                    command,
                    "failed",
                    None,
                    time.monotonic() - started,
                    f"cannot run {argv[0]}: {exc.strerror or exc}",
                )
            try:
                code = process.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                self._kill(process)
                return Step(
                    name,
                    command,
                    "timeout",
                    None,
                    time.monotonic() - started,
                    f"no result within {self.timeout:g} s; stopped",
                )
        seconds = time.monotonic() - started
        if code == 0:
            return Step(name, command, "ok", 0, seconds)
        tail = _last_line(err_path) or _last_line(out_path)
        reason = f"exit {code}" + (f": {tail}" if tail else "")
        return Step(name, command, "failed", code, seconds, reason)

    def _kill(self, process: subprocess.Popen) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                return
            try:
                process.wait(timeout=self.host.kill_grace_s)
                return
            except subprocess.TimeoutExpired:
                continue

    def _keep(self, step: Step, output: str, role: str, keep_failed_output: bool) -> None:
        """Decide which files of a step stay in the bundle and under which role."""
        out_path = self.root / output
        err_path = self.root / STEP_DIR / f"{step.name}.stderr.txt"
        if err_path.exists():
            if err_path.stat().st_size:
                self.add_file(err_path.relative_to(self.root).as_posix(), "unknown")
            else:
                err_path.unlink()
        if not out_path.exists():
            return
        if not out_path.stat().st_size:
            out_path.unlink()
            return
        if step.status == "failed" and not keep_failed_output:
            # What a failed `docker inspect`/`logs` printed is an error message, not the artefact:
            # kept for the reader, but not under the artefact's role.
            moved = self.root / STEP_DIR / f"{step.name}.out.txt"
            out_path.replace(moved)
            self.add_file(moved.relative_to(self.root).as_posix(), "unknown")
            return
        if step.status == "timeout":
            step.reason += "; partial output kept"  # a log cut by the timeout still holds its start
        step.output = output
        self.add_file(output, role)

    # ------------------------------------------------------------------ steps that run nothing

    def read(self, name: str, source: Path, output: str, role: str) -> Step:
        started = time.monotonic()
        command = f"read {source}"
        try:
            self._copy_text(source, output)
        except FileNotFoundError:
            step = Step(
                name,
                command,
                "missing",
                None,
                time.monotonic() - started,
                f"{source} does not exist (no NVIDIA kernel driver loaded here)",
            )
        except OSError as exc:
            step = Step(
                name,
                command,
                "failed",
                None,
                time.monotonic() - started,
                f"cannot read {source}: {exc.strerror or exc}",
            )
        except InputError as exc:  # a FIFO, a device, a socket, or more than --max-input
            step = Step(name, command, "failed", None, time.monotonic() - started, str(exc))
        else:
            step = Step(name, command, "ok", None, time.monotonic() - started, output=output)
            self.add_file(output, role)
        self.result.steps.append(step)
        return step

    def _copy_text(self, source: Path, output: str) -> None:
        """The file as UTF-8 text, streamed through the bounded reader: only a regular file is
        read (a FIFO would block, /dev/zero never ends), at most --max-input bytes of it."""
        source.stat()  # a missing file is `missing` (FileNotFoundError), not a failure
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        read = 0
        with open_regular(str(source)) as handle, self.tree.open_write(output) as sink:
            while block := handle.read(1024 * 1024):
                read += len(block)
                if read > LIMITS.max_input:
                    raise InputError("input-too-large", f"{source} holds more than {human(LIMITS.max_input)}")
                sink.write(decoder.decode(block).encode("utf-8"))
            sink.write(decoder.decode(b"", final=True).encode("utf-8"))

    def record(self, name: str, what: str, output: str, role: str, text: str) -> Step:
        self.write_text(output, text)
        self.add_file(output, role)
        step = Step(name, what, "ok", None, 0.0, output=output)
        self.result.steps.append(step)
        return step

    def write_text(self, output: str, text: str) -> None:
        self.tree.write_bytes(output, text.encode("utf-8"))

    def add_file(self, path: str, role: str) -> None:
        self.result.files = [f for f in self.result.files if f["path"] != path]
        self.result.files.append({"path": path, "role": role})


def _last_line(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, path.stat().st_size - 4096))
            tail = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1][:_REASON_CHARS] if lines else ""
