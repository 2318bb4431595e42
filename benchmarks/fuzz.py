"""Feed every parser and the triage entry point generated inputs; report crashes, hangs, blow-ups.

    python benchmarks/fuzz.py --inputs 300 --jobs 2 --quick              # what CI runs
    nice -n 19 python benchmarks/fuzz.py --inputs 1000000 --triage-inputs 100000 --jobs 1 \\
        --state /tmp/fuzz-million                                        # a campaign (resumable)
    python benchmarks/fuzz.py --targets request --replay FILE            # one saved input again

Inputs are mutations of the project's own fixtures and samples (see fuzz_mutate.py), each a pure
function of (seed, target, index). One long-lived forked worker per job runs them in-process
through each target's Python entry point (fuzz_targets.py), built once per worker:

- a crash is any exception but a documented refusal (InputError / RuleError: what the CLI maps
  to exit 4), or an output json.dumps cannot take;
- a hang is an input over `--timeout` seconds of CPU (SIGPROF inside the worker), or one the
  worker is stuck in for longer than the watchdog allows (C code that never sees the signal):
  the parent kills that worker, records the input and starts a new worker after it;
- a blow-up is a MemoryError under the worker's address-space cap, or a worker killed outright;
- one input in `--cli-every` also goes through the real `vllm-triage` command, whose exit code
  must be 0/1/4 with one `vllm-triage: …` line on stderr for 4 and no traceback.

Every failing input is saved under `<out>/failures/<target>/` with a one-line repro. With
`--state DIR` progress is checkpointed to DIR/state.json after every report from a worker;
`--resume` continues it (a larger `--inputs` extends it). Exit status 1 when anything was found.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzz_mutate import Corpus  # noqa: E402
from fuzz_targets import TARGETS  # noqa: E402
from fuzz_worker import new_delta, save_failure, serve  # noqa: E402

# Per worker address space: a blow-up becomes a MemoryError, saved, not the machine's OOM killer.
# Address space, not resident memory: polars reserves several GiB it never touches.
MEMORY_LIMIT = 10 * 1024**3
STATE_VERSION = 1


class Worker:
    """One forked worker, the range it is on, and how far its reports have come."""

    def __init__(self, config: dict[str, Any]) -> None:
        ctx = mp.get_context("fork")
        self.conn, child = ctx.Pipe()
        # [index of the current input, its start (monotonic), the worker's CPU seconds then]
        self.status = ctx.RawArray("d", 3)
        self.proc = ctx.Process(target=serve, args=(child, self.status, config), daemon=True)
        self.proc.start()
        child.close()
        self.task: tuple[str, int, int] | None = None
        self.upto = 0

    def give(self, task: tuple[str, int, int]) -> None:
        self.task, self.upto = task, task[1]
        self.status[0], self.status[1] = task[1], 0.0
        self.conn.send(task)

    def stuck(self, cpu_limit: float, wall_limit: float) -> str | None:
        """Why the worker counts as stuck on its input, or None. CPU time first: on a shared
        machine under `nice` a worker may get a few % of a core, and wall time alone would call
        a slow-but-running input a hang. Wall time catches a worker blocked without using CPU."""
        if not self.status[1]:
            return None
        wall = time.monotonic() - self.status[1]
        cpu = _cpu_seconds(self.proc.pid) - self.status[2]
        if cpu > cpu_limit:
            return f"stuck over {cpu_limit:g} s of CPU on one input (watchdog)"
        # Past the wall limit a worker with a runnable thread is starved, not stuck (seed 11: a
        # nice-19 triage worker under a load of 33 got 0.4 CPU-s in 260 s); one whose threads all
        # wait is blocked. Ten times the limit ends it either way.
        if wall > 10 * wall_limit or (wall > wall_limit and not _runnable(self.proc.pid)):
            return f"stuck over {wall_limit:g} s of wall time on one input (watchdog)"
        return None

    def stop(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.conn.close()


_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of a process, all threads (what its time.process_time() says)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _runnable(pid: int | None) -> bool:
    """Whether any thread of the process is running or waiting for a CPU (state R)."""
    try:
        threads = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return False
    for thread in threads:
        try:
            if (thread / "stat").read_text().rsplit(")", 1)[1].split()[0] == "R":
                return True
        except (OSError, IndexError):
            continue
    return False


def _merge(total: dict[str, Any], delta: dict[str, Any]) -> None:
    for key in ("inputs", "refused", "cli_runs", "cpu", "small_inputs", "small_cpu"):
        total[key] += delta[key]
    for key in ("crashes", "hangs", "blowups", "cli_failures"):
        total[key].extend(delta[key])
    if delta["slowest"] > total["slowest"]:
        for key in ("slowest", "slowest_size", "slowest_index"):
            total[key] = delta[key]


def _add_done(done: list[list[int]], start: int, end: int) -> None:
    """Add [start, end) to a sorted list of disjoint ranges, joining neighbours."""
    if end <= start:
        return
    done.append([start, end])
    done.sort()
    merged: list[list[int]] = []
    for s, e in done:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    done[:] = merged


def _missing(done: list[list[int]], budget: int) -> list[tuple[int, int]]:
    gaps, at = [], 0
    for s, e in done:
        if s > at:
            gaps.append((at, min(s, budget)))
        at = max(at, e)
    if at < budget:
        gaps.append((at, budget))
    return [(s, e) for s, e in gaps if e > s]


def _plan(state: dict[str, Any], budgets: dict[str, int], batch: dict[str, int]) -> deque:
    """Ranges still to run, interleaved so every target advances at the same share of its budget
    (a campaign stopped early has run about the same fraction of each)."""
    chunks = []
    for target, budget in budgets.items():
        for s, e in _missing(state["targets"][target]["done"], budget):
            for start in range(s, e, batch[target]):
                chunks.append(
                    (start / budget, TARGETS.index(target), (target, start, min(e, start + batch[target])))
                )
    chunks.sort()
    return deque(task for _, _, task in chunks)


def _new_state(seed: int, targets: list[str]) -> dict[str, Any]:
    return {
        "version": STATE_VERSION,
        "seed": seed,
        "targets": {t: new_delta() | {"done": []} for t in targets},
        "wall": 0.0,
    }


def _save_state(state_dir: str | None, state: dict[str, Any]) -> None:
    if not state_dir:
        return
    path = Path(state_dir) / "state.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1), encoding="utf-8")
    os.replace(tmp, path)  # a kill mid-write leaves the previous checkpoint, never half a file


def _run(args: argparse.Namespace, state: dict[str, Any], budgets: dict[str, int], out: str) -> bool:
    """Run the plan over `args.jobs` workers; False when stopped early (SIGINT/SIGTERM)."""
    config = {
        "seed": args.seed,
        "timeout": args.timeout,
        "out": out,
        "memory": MEMORY_LIMIT,
        "cli_every": args.cli_every,
        "cli_timeout": args.cli_timeout,
    }
    ratio = {t: max(1, budgets[t] * args.batch // max(budgets.values())) for t in budgets}
    tasks = _plan(state, budgets, ratio)
    # The worker's own SIGPROF fires at --timeout; the watchdog is for code that never sees it.
    cpu_limit, wall_limit = 2 * args.timeout + 5, max(20 * args.timeout, args.cli_timeout) + 60
    corpus = Corpus()  # to save the input a killed worker was on
    stop = {"asked": False}

    def ask_stop(_signum: int, _frame: object) -> None:
        stop["asked"] = True

    old = {s: signal.signal(s, ask_stop) for s in (signal.SIGINT, signal.SIGTERM)}
    workers = [Worker(config) for _ in range(max(1, min(args.jobs, len(tasks))))]
    started, last_save = time.monotonic(), 0.0
    try:
        while not stop["asked"]:
            for w in workers:
                if w.task is None and tasks:
                    w.give(tasks.popleft())
            busy = [w for w in workers if w.task is not None]
            if not busy:
                break
            ready = wait([w.conn for w in busy], timeout=0.5)
            for i, w in enumerate(list(workers)):
                if w.task is None:
                    continue
                if w.conn in ready:
                    try:
                        kind, target, start, end, delta = w.conn.recv()
                    except (EOFError, OSError):
                        workers[i] = _lost(w, "died", state, tasks, corpus, config)
                        continue
                    _merge(state["targets"][target], delta)
                    _add_done(state["targets"][target]["done"], start, end)
                    w.upto = end
                    if kind == "done":
                        w.task = None
                elif why := w.stuck(cpu_limit, wall_limit):
                    workers[i] = _lost(w, why, state, tasks, corpus, config)
                elif not w.proc.is_alive():
                    workers[i] = _lost(w, "died", state, tasks, corpus, config)
            if time.monotonic() - last_save > 2:
                _save_state(args.state, state)
                last_save = time.monotonic()
    finally:
        for w in workers:  # between inputs or not, a worker has nothing left worth waiting for
            w.stop()
        for s, handler in old.items():
            signal.signal(s, handler)
        state["wall"] += time.monotonic() - started
        _save_state(args.state, state)
    return not stop["asked"]


def _lost(w: Worker, how: str, state: dict, tasks: deque, corpus: Corpus, config: dict) -> Worker:
    """A worker killed or dead mid-range: record the input it was on, queue the rest of its range
    (from its last report; the inputs before the culprit are rerun), start a new worker."""
    assert w.task is not None
    target, _start, end = w.task
    index = int(w.status[0])
    if w.proc.is_alive():
        w.proc.kill()
    w.proc.join()
    code = w.proc.exitcode
    data = corpus.make(config["seed"], TARGETS.index(target), target, index)
    why = f"worker {how} (exit code {code}) on this input"
    total = state["targets"][target]
    again = _replay_alone(target, config, index) if "wall time" in how else "not replayed"
    if again == "fine":
        # Blocked past the wall limit, yet the same input, run again alone, ends: the worker was
        # held up from outside (seed 13: a 1.3 KB nvidia-smi input that parses in 1 ms, its
        # worker asleep for 260 s on a machine at load 10). Counted, not recorded as a hang.
        total.setdefault("transient", []).append(index)
    else:
        # SIGKILL from outside is the kernel's OOM killer: memory; anything else dead is a crash.
        kind = "hangs" if "watchdog" in how else "blowups" if code == -signal.SIGKILL else "crashes"
        if again.startswith("crash"):
            kind, why = "crashes", f"{why}; run again alone it crashed:\n{again}"
        total[kind].append(save_failure(config["out"], target, config["seed"], index, data, why))
    total["inputs"] += 1
    _add_done(total["done"], index, index + 1)
    if index + 1 < end:
        tasks.appendleft((target, index + 1, end))
    if w.upto < index:
        tasks.appendleft((target, w.upto, index))
    w.conn.close()
    return Worker(config)


def _replay_alone(target: str, config: dict[str, Any], index: int) -> str:
    """Input `index` of `target`, rebuilt and run alone in a new process within the worker's CPU
    budget: "fine" (read or refused), "crash" and its traceback, or "hang"."""
    argv = [sys.executable, __file__, "--targets", target, "--seed", str(config["seed"])]
    argv += ["--index", str(index)]
    cpu = int(2 * config["timeout"] + 5)

    def limit_cpu() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))

    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=600, preexec_fn=limit_cpu, check=False
        )
    except subprocess.TimeoutExpired:
        return "hang"
    if done.returncode == 0:
        return "fine"
    if done.returncode == 1:
        return "crash\n" + done.stderr[-4000:]
    return "hang"


def _table(state: dict[str, Any], timeout: float) -> str:
    rows = [
        f"| target | inputs | refused (exit 4) | crashes | hangs (> {timeout:g} s CPU) | blow-ups "
        "| CLI runs (wrong) | inputs/s per core | small inputs/s | slowest (CPU) | its size |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for target, r in state["targets"].items():
        rate = r["inputs"] / r["cpu"] if r["cpu"] else 0
        small = r["small_inputs"] / r["small_cpu"] if r["small_cpu"] else 0
        rows.append(
            f"| {target} | {r['inputs']:,} | {r['refused']:,} | {len(r['crashes'])} | {len(r['hangs'])} "
            f"| {len(r['blowups'])} | {r['cli_runs']:,} ({len(r['cli_failures'])}) | {rate:,.0f} "
            f"| {small:,.0f} "
            f"| {r['slowest'] * 1000:,.0f} ms | {r['slowest_size']:,} B |"
        )
    return "\n".join(rows)


def _replay(args: argparse.Namespace) -> int:
    """One input, in this process, with its traceback: the repro of a saved failure."""
    import traceback

    from fuzz_targets import entry_point, is_refusal

    target = args.targets.split(",")[0]
    if args.replay:
        data = Path(args.replay).read_bytes()
    else:
        data = Corpus().make(args.seed, TARGETS.index(target), target, args.index)
    started = time.perf_counter()
    try:
        entry_point(target)(data)
    except Exception as exc:
        if not is_refusal(exc):
            traceback.print_exc()
            return 1
        print(f"refused: {exc}")
    print(f"{target}: {len(data):,} B in {time.perf_counter() - started:.3f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=10_000, help="inputs per target")
    parser.add_argument(
        "--triage-inputs", type=int, default=None, help="inputs for triage (default --inputs)"
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    parser.add_argument("--timeout", type=float, default=10.0, help="CPU seconds one input may take")
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--batch", type=int, default=20_000, help="inputs per range a worker is given")
    parser.add_argument(
        "--cli-every", type=int, default=1000, help="1 input in N also through the CLI (0: never)"
    )
    parser.add_argument("--cli-timeout", type=float, default=120.0, help="seconds one CLI run may take")
    parser.add_argument(
        "--out", default=None, help="where failing inputs are saved (default: --state or a temp dir)"
    )
    parser.add_argument("--state", default=None, help="checkpoint folder (state.json), for --resume")
    parser.add_argument("--resume", action="store_true", help="continue the campaign in --state")
    parser.add_argument("--quick", action="store_true", help="CI budget: small ranges, no saved state")
    parser.add_argument("--replay", default=None, help="run one saved input (first of --targets) and exit")
    parser.add_argument("--index", type=int, default=None, help="with --seed: rebuild and run input N")
    args = parser.parse_args(argv)
    targets = [t for t in args.targets.split(",") if t]
    unknown = set(targets) - set(TARGETS)
    if unknown:
        parser.error(f"unknown target(s): {', '.join(sorted(unknown))}")
    if args.replay or args.index is not None:
        return _replay(args)
    if args.quick:
        args.batch = min(args.batch, 100)
    if args.state:
        Path(args.state).mkdir(parents=True, exist_ok=True)
    out = args.out or args.state or tempfile.mkdtemp(prefix="vllm-triage-fuzz-")
    Path(out).mkdir(parents=True, exist_ok=True)
    state_file = Path(args.state) / "state.json" if args.state else None
    if state_file and state_file.exists():
        if not args.resume:
            parser.error(f"{state_file} exists: pass --resume to continue it, or another --state")
        state = json.loads(state_file.read_text(encoding="utf-8"))
        if state.get("version") != STATE_VERSION or state["seed"] != args.seed:
            parser.error(f"{state_file} is a campaign with seed {state.get('seed')}: pass --seed to match")
        for t in targets:
            state["targets"].setdefault(t, new_delta() | {"done": []})
    else:
        state = _new_state(args.seed, targets)
    budgets = {
        t: args.triage_inputs if t == "triage" and args.triage_inputs is not None else args.inputs
        for t in targets
    }
    finished = _run(args, state, budgets, out)
    shown = {"targets": {t: state["targets"][t] for t in targets}}
    print(_table(shown, args.timeout))
    print(f"wall {state['wall']:.0f} s on {args.jobs} worker(s); failing inputs saved under {out}/failures")
    if not finished:
        again = " ".join(a for a in (argv if argv is not None else sys.argv[1:]) if a != "--resume")
        print(f"stopped early; continue with: python benchmarks/fuzz.py {again} --resume", file=sys.stderr)
    bad = [
        p
        for t in targets
        for k in ("crashes", "hangs", "blowups", "cli_failures")
        for p in state["targets"][t][k]
    ]
    for path in bad[:20]:
        print(f"  {path}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
