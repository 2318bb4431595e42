#!/usr/bin/env python3
"""Benchmark `vllm-triage scan` on a generated fleet: bundles per second, as ratios in one run.

Generates N bundles with tests/fleet/fleet_factory.py (folders and .tar.gz archives of a V1 log,
host nvidia-smi, docker inspect and bundle.toml; 8 failure scenarios over 5 versions, 4 drivers,
5 nodes), then runs, each as a child process:
  vllm-triage scan FLEET -o OUT --jobs J                 cold, for each J (a fresh OUT each time)
  vllm-triage scan FLEET -o OUT --engine spark --jobs 2  cold, Spark local[2] (when pyspark is there)
  vllm-triage scan FLEET -o OUT                          again on the last OUT: every bundle unchanged
and reports wall time, bundles/s, the ratio to `--jobs 1`, CPU seconds (the scan and its pool
workers; Spark's JVM and Python workers are not children it waits for, so not counted) and peak
RSS. Peak RSS is os.wait4's ru_maxrss of the child, which Linux reports as the largest single
process of the tree, so a scan with J jobs holds at most about (J + 1) × that.

CPU seconds matter on a shared machine: the scheduler shares the CPU between sessions
(autogroups), not processes, so a loaded machine gives a scan its share whatever its --jobs, and
wall-time ratios there say little. CPU per bundle and the fixed costs below say what a scan costs:
  - a worker's start-up: spawn a Python, import vllm-triage, compile the rules (the initialiser);
  - one bundle in a warm process, with the rules compiled per bundle (before) and once;
  - pickling a bundle's rows back to the parent;
  - a Spark session's start-up (JVM + first job).

Usage: benchmarks/bench_fleet.py [--bundles 1000] [--jobs 1,2] [--no-spark] [--out DIR] [--cmd vllm-triage]
Writes a Markdown table to stdout and to DIR/fleet-results.md (DIR is git-ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "fleet"))


def run(argv: list[str]) -> tuple[float, float, int, dict]:
    """(seconds, CPU seconds, peak RSS in MiB, parsed JSON stdout) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{shlex.join(argv)} failed")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024, json.loads(out)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def worker_start() -> tuple[float, float]:
    """(wall s, CPU s) for a fresh Python to be ready to scan: what each pool worker pays once."""
    code = "from vllm_triage.fleet.scan import _init_worker; _init_worker(())"
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code])
    _, _, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def per_bundle_costs(paths: list[str], sample: int = 40) -> dict[str, float]:
    """CPU ms per bundle in one warm process with the rules compiled per bundle and once, and the
    ms and bytes of pickling one bundle's rows (what a pool worker sends back)."""
    from vllm_triage.fleet.bundle_row import bundle_rows
    from vllm_triage.pipeline import load_rules

    compiled = load_rules()
    bundle_rows(paths[0])  # imports and first-use caches
    sample = min(sample, len(paths))
    costs: dict[str, float] = {}
    for name, kwargs in (("per bundle", {}), ("once", {"compiled": compiled})):
        start = _cpu()
        for path in paths[:sample]:
            rows = bundle_rows(path, **kwargs)
        costs[name] = (_cpu() - start) / sample * 1000
    start = time.perf_counter()
    for _ in range(100):
        blob = pickle.dumps(rows)
    costs["pickle ms"] = (time.perf_counter() - start) * 10
    costs["pickle bytes"] = len(blob)
    return costs


def spark_start() -> float | None:
    """Seconds to start a Spark local[2] session and run one trivial job; None without pyspark."""
    try:
        from vllm_triage.fleet import spark

        spark.check_available()
    except Exception:
        return None
    start = time.perf_counter()
    with spark.SparkEngine(2) as engine:
        engine.map(abs, [1, 2])
        return time.perf_counter() - start


def main() -> int:
    from fleet_factory import make_fleet

    ap = argparse.ArgumentParser()
    ap.add_argument("--bundles", type=int, default=1000)
    ap.add_argument("--jobs", default="1,2")
    ap.add_argument("--out", default=str(HERE / "out"))
    ap.add_argument("--cmd", default="vllm-triage")
    ap.add_argument("--no-spark", action="store_true", help="skip the Spark local[2] run")
    a = ap.parse_args()
    out = Path(a.out)
    fleet, results = out / "fleet-bundles", out / "fleet-scan"
    shutil.rmtree(fleet, ignore_errors=True)
    start = time.perf_counter()
    specs = make_fleet(fleet, a.bundles)
    made = time.perf_counter() - start
    size = sum(f.stat().st_size for f in fleet.rglob("*") if f.is_file())
    print(f"generated {a.bundles} bundles ({size / 2**20:.1f} MiB) in {made:.1f} s", file=sys.stderr)

    rows = []
    cmd = shlex.split(a.cmd)
    runs = [(f"--jobs {j}", ["--jobs", str(j)]) for j in a.jobs.split(",")]
    if not a.no_spark and spark_start() is not None:  # (also warms the JVM's files in the page cache)
        runs.append(("Spark local[2]", ["--engine", "spark", "--jobs", "2"]))
    for name, args in runs:
        shutil.rmtree(results, ignore_errors=True)
        seconds, cpu, rss, stats = run(
            [*cmd, "scan", str(fleet), "-o", str(results), *args, "--format", "json"]
        )
        assert stats["analysed"] == a.bundles, stats
        rows.append((f"cold scan, {name}", a.bundles, seconds, cpu, rss))
    seconds, cpu, rss, stats = run([*cmd, "scan", str(fleet), "-o", str(results), "--format", "json"])
    assert stats["unchanged"] == a.bundles, stats
    rows.append(("re-scan, all unchanged", a.bundles, seconds, cpu, rss))
    costs = per_bundle_costs([str(s.path) for s in specs])
    start_wall, start_cpu = worker_start()
    spark_s = None if a.no_spark else spark_start()

    base = rows[0][2]
    load = os.getloadavg()[0]
    lines = [
        f"{a.bundles} generated bundles ({size / 2**20:.1f} MiB), {os.cpu_count()} cores, load average "
        f"{load:.1f} at the end, `{a.cmd} scan`:",
        "",
        "| run | wall time | bundles/s | × `--jobs 1` | CPU s (scan + pool) | CPU ms/bundle | peak "
        "RSS (largest process) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, n, secs, cpu, rss in rows:
        spark_cpu = "Spark" in name
        lines.append(
            f"| {name} | {secs:.1f} s | {n / secs:.1f} | {base / secs:.2f} | "
            f"{'n/a' if spark_cpu else f'{cpu:.1f}'} | "
            f"{'n/a' if spark_cpu else f'{cpu / n * 1000:.0f}'} | {rss} MiB |"
        )
    lines += [
        "",
        f"Per bundle in one warm process: {costs['per bundle']:.1f} CPU ms with the rules compiled for every "
        f"bundle, {costs['once']:.1f} ms with them compiled once (what a pool worker does now). "
        f"Pickling one bundle's rows: {costs['pickle ms']:.3f} ms ({costs['pickle bytes']:.0f} bytes). "
        f"A worker's start-up (spawn, imports, rules): {start_wall:.2f} s wall, {start_cpu:.2f} CPU s."
        + (f" Spark local[2] start-up (JVM, first job): {spark_s:.1f} s." if spark_s else ""),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    out.mkdir(parents=True, exist_ok=True)
    (out / "fleet-results.md").write_text(text, encoding="utf-8")
    shutil.rmtree(fleet, ignore_errors=True)
    shutil.rmtree(results, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
