"""The long-lived fuzz worker: one forked process per job, inputs run in-process.

The parent sends a range of input indices of one target; the worker builds each input, runs it
through the target's entry point under a CPU-time deadline (SIGPROF: a loaded, shared machine
does not turn a slow input into a hang), and reports what happened in small deltas, so a worker
the parent has to kill loses at most a second of bookkeeping. Before each input it writes the
index and a start time into shared memory: that is what the parent's watchdog reads.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from fuzz_mutate import Corpus
from fuzz_targets import CLI_COMMAND, CLI_NAME, TARGETS, check_cli, entry_point, is_refusal

FLUSH_SECONDS = 1.0
FLUSH_INPUTS = 2_000
SMALL_BYTES = 64 * 1024  # "small input": the size of a real artefact, what the throughput aim is for


class Deadline(BaseException):  # not Exception: a parser's `except Exception` must not swallow it
    pass


def _deadline(_signum: int, _frame: object) -> None:
    raise Deadline


def new_delta() -> dict[str, Any]:
    return {
        "inputs": 0,
        "refused": 0,
        "crashes": [],
        "hangs": [],
        "blowups": [],
        "cli_runs": 0,
        "cli_failures": [],
        "cpu": 0.0,
        "small_inputs": 0,
        "small_cpu": 0.0,
        "slowest": 0.0,
        "slowest_size": 0,
        "slowest_index": -1,
    }


def save_failure(out: str, target: str, seed: int, i: int, data: bytes, why: str) -> str:
    """The input and why it failed, with the one-line command that replays it."""
    folder = Path(out) / "failures" / target
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{seed}-{i}.bin"
    path.write_bytes(data)
    repro = f"python benchmarks/fuzz.py --targets {target} --replay {path}"
    rebuild = f"python benchmarks/fuzz.py --targets {target} --seed {seed} --index {i}"
    (folder / f"{seed}-{i}.why.txt").write_text(
        f"repro: {repro}\nrebuild: {rebuild}\n\n{why}", encoding="utf-8"
    )
    return str(path)


def cli_command() -> list[str]:
    """The installed `vllm-triage` next to this interpreter (what a user runs), else `-m`."""
    script = Path(sys.executable).with_name("vllm-triage")
    return [str(script)] if script.exists() else [sys.executable, "-m", "vllm_triage"]


def run_cli(target: str, data: bytes, timeout: float) -> str | None:
    """One input through the real command line; None when it ended as documented."""
    with tempfile.TemporaryDirectory(prefix="fuzz-cli-") as folder:
        path = Path(folder) / CLI_NAME[target]
        path.write_bytes(data)
        env = {k: v for k, v in os.environ.items() if k != "VLLM_TRIAGE_DEBUG"}
        try:
            done = subprocess.run(
                [*cli_command(), CLI_COMMAND[target], "--format", "json", str(path)],
                capture_output=True,
                timeout=timeout,
                env=env,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return f"CLI `{CLI_COMMAND[target]}` still running after {timeout:g} s"
    return check_cli(done.returncode, done.stderr.decode("utf-8", "replace"))


def serve(conn: Connection, status: Any, config: dict[str, Any]) -> None:
    """Worker main loop: (target, start, end) ranges in, deltas out, until None arrives."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the campaign, not Ctrl-C here
    os.environ.setdefault("POLARS_MAX_THREADS", "1")  # one core per job on a shared machine
    limit = config["memory"]
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGPROF, _deadline)
    corpus = Corpus()
    runs = {}
    seed, timeout, out = config["seed"], config["timeout"], config["out"]
    cli_every, cli_timeout = config["cli_every"], config["cli_timeout"]
    while True:
        task = conn.recv()
        if task is None:
            return
        target, start, end = task
        t_index = TARGETS.index(target)
        if target not in runs:
            runs[target] = entry_point(target)  # rules compiled, modules imported: once per worker
        run = runs[target]
        delta, flushed, last_flush = new_delta(), start, time.monotonic()
        for i in range(start, end):
            status[0], status[1], status[2] = i, time.monotonic(), time.process_time()
            try:
                data = corpus.make(seed, t_index, target, i)
            except MemoryError:
                data = b""  # the generator itself, not the tool: run the empty input instead
            _one(run, target, seed, i, data, timeout, out, delta)
            if cli_every and i % cli_every == 0:
                status[1], status[2] = time.monotonic(), time.process_time()
                delta["cli_runs"] += 1
                wrong = run_cli(target, data, cli_timeout)
                if wrong:
                    delta["cli_failures"].append(save_failure(out, target, seed, i, data, f"CLI: {wrong}"))
            status[1] = 0.0
            now = time.monotonic()
            if now - last_flush > FLUSH_SECONDS or delta["inputs"] >= FLUSH_INPUTS:
                conn.send(("progress", target, flushed, i + 1, delta))
                delta, flushed, last_flush = new_delta(), i + 1, now
        conn.send(("done", target, flushed, end, delta))


def _one(
    run: Any, target: str, seed: int, i: int, data: bytes, timeout: float, out: str, delta: dict
) -> None:
    """One input in-process: refused, crashed, out of time (CPU), out of memory, or fine."""
    t0 = time.process_time()
    try:
        signal.setitimer(signal.ITIMER_PROF, timeout)
        try:
            # A warning is a line on the CLI's stderr, which must be its one line: a parser that
            # lets one out fails like a crash (found: CPython's SyntaxWarning on a config repr).
            with warnings.catch_warnings(record=True) as printed:
                warnings.simplefilter("always")
                run(data)
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
        if printed:
            why = f"printed a warning: {printed[0].category.__name__}: {printed[0].message}"
            delta["crashes"].append(save_failure(out, target, seed, i, data, why))
    except Deadline:
        delta["hangs"].append(save_failure(out, target, seed, i, data, f"over {timeout:g} s of CPU"))
    except MemoryError:
        why = "MemoryError (address-space cap)\n" + traceback.format_exc(limit=8)
        delta["blowups"].append(save_failure(out, target, seed, i, data, why))
    except Exception as exc:
        if is_refusal(exc):
            delta["refused"] += 1
        else:
            delta["crashes"].append(save_failure(out, target, seed, i, data, traceback.format_exc(limit=8)))
    cpu = time.process_time() - t0
    delta["inputs"] += 1
    delta["cpu"] += cpu
    if len(data) <= SMALL_BYTES:
        delta["small_inputs"] += 1
        delta["small_cpu"] += cpu
    if cpu > delta["slowest"]:
        delta["slowest"], delta["slowest_size"], delta["slowest_index"] = cpu, len(data), i
