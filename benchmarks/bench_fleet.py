#!/usr/bin/env python3
"""Benchmark `vllm-triage scan` on a generated fleet: bundles per second and peak memory.

Generates N bundles with tests/fleet/fleet_factory.py (folders and .tar.gz archives of a V1 log,
host nvidia-smi, docker inspect and bundle.toml; 8 failure scenarios over 5 versions, 4 drivers,
5 nodes), then runs, each as a child process:
  vllm-triage scan FLEET -o OUT --jobs J   cold, for each J (a fresh OUT each time)
  vllm-triage scan FLEET -o OUT            again on the last OUT: every bundle unchanged
and reports wall time, bundles/s and peak RSS. Peak RSS is os.wait4's ru_maxrss of the child, which
Linux reports as the largest single process of the tree (the scan's main process or one worker),
so a scan with J jobs holds at most about (J + 1) × that.

Also measures, in this process, what one bundle costs and how much of it is compiling the rules
(pipeline.triage compiles them on every call; see docs/fleet.md "Known costs").

Usage: benchmarks/bench_fleet.py [--bundles 1000] [--jobs 1,2] [--out DIR] [--cmd vllm-triage]
Writes a Markdown table to stdout and to DIR/fleet-results.md (DIR is git-ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "fleet"))


def run(argv: list[str]) -> tuple[float, int, dict]:
    """(seconds, peak RSS in MiB, parsed JSON stdout) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{shlex.join(argv)} failed")
    return elapsed, usage.ru_maxrss // 1024, json.loads(out)


def per_bundle_costs(paths: list[str], sample: int = 20) -> tuple[float, float]:
    """(ms per bundle in one process, ms of that spent loading and compiling the rules)."""
    from vllm_triage.fleet.bundle_row import bundle_rows
    from vllm_triage.pipeline import load_rules

    bundle_rows(paths[0])  # imports and first-use caches
    start = time.perf_counter()
    for path in paths[:sample]:
        bundle_rows(path)
    per_bundle = (time.perf_counter() - start) / sample * 1000
    start = time.perf_counter()
    for _ in range(sample):
        load_rules()
    return per_bundle, (time.perf_counter() - start) / sample * 1000


def main() -> int:
    from fleet_factory import make_fleet

    ap = argparse.ArgumentParser()
    ap.add_argument("--bundles", type=int, default=1000)
    ap.add_argument("--jobs", default="1,2")
    ap.add_argument("--out", default=str(HERE / "out"))
    ap.add_argument("--cmd", default="vllm-triage")
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
    for jobs in [int(j) for j in a.jobs.split(",")]:
        shutil.rmtree(results, ignore_errors=True)
        seconds, rss, stats = run(
            [*cmd, "scan", str(fleet), "-o", str(results), "--jobs", str(jobs), "--format", "json"]
        )
        assert stats["analysed"] == a.bundles, stats
        rows.append((f"cold scan, --jobs {jobs}", a.bundles, seconds, rss))
    seconds, rss, stats = run([*cmd, "scan", str(fleet), "-o", str(results), "--format", "json"])
    assert stats["unchanged"] == a.bundles, stats
    rows.append(("re-scan, all unchanged", a.bundles, seconds, rss))
    per_bundle, rules = per_bundle_costs([str(s.path) for s in specs])

    lines = [
        f"{a.bundles} generated bundles ({size / 2**20:.1f} MiB), {os.cpu_count()} cores, `{a.cmd} scan`:",
        "",
        "| run | bundles | wall time | bundles/s | peak RSS (largest process) |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [f"| {name} | {n} | {s:.1f} s | {n / s:.0f} | {r} MiB |" for name, n, s, r in rows]
    lines += [
        "",
        f"One bundle in one process: {per_bundle:.0f} ms, of which {rules:.0f} ms is loading and compiling the rules "
        "(done again for every bundle by `pipeline.triage`).",
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
