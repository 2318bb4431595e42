#!/usr/bin/env python3
"""Benchmark `vllm-triage triage` on large generated vLLM logs against grep, with peak memory.

Generates logs with ../shared/bench/make_big_log.py (a realistic TP=8 V1 server log: start-up,
hours of serving, then a failure cascade), then for each log runs, in the same session:
  grep -cE 'ERROR|Traceback' LOG          (the floor: one pass of a C tool over the bytes)
  vllm-triage triage LOG --format json    (full triage: root block, phase, consequences)
and reports wall time, throughput and peak RSS (os.wait4's ru_maxrss of the child).

Usage: benchmarks/bench_triage.py [--sizes 256,1024] [--failures request,early] [--out DIR]
                                  [--maker PATH] [--cmd vllm-triage] [--repeat 3]
Writes a Markdown table to stdout and to DIR/results.md. Logs are kept in DIR (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_MAKER = HERE.parent.parent / "shared" / "bench" / "make_big_log.py"


def run(argv: list[str]) -> tuple[float, int, bytes]:
    """(seconds, peak RSS in MiB, stdout) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, usage.ru_maxrss // 1024, out


def best_of(argv: list[str], repeat: int) -> tuple[float, int, bytes]:
    runs = [run(argv) for _ in range(repeat)]
    return min(r[0] for r in runs), max(r[1] for r in runs), runs[-1][2]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="256,1024", help="log sizes in MB")
    ap.add_argument("--failures", default="request,early")
    ap.add_argument("--out", default=str(HERE / "out"))
    ap.add_argument("--maker", default=str(DEFAULT_MAKER))
    ap.add_argument("--cmd", default="vllm-triage")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    out_dir = Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not Path(a.maker).is_file():
        print(f"log generator not found: {a.maker}", file=sys.stderr)
        return 2
    rows = []
    for failure in a.failures.split(","):
        for size in (int(s) for s in a.sizes.split(",")):
            log = out_dir / f"big-{size}mb-{failure}.log"
            if not log.exists():
                subprocess.run(
                    [sys.executable, a.maker, str(log), "--size-mb", str(size), "--failure", failure],
                    check=True,
                )
            mb = log.stat().st_size / 1024**2
            grep_s, grep_mib, _ = best_of(["grep", "-cE", "ERROR|Traceback", str(log)], a.repeat)
            triage_s, triage_mib, out = best_of(
                shlex.split(a.cmd) + ["triage", str(log), "--format", "json"], a.repeat
            )
            result = json.loads(out)
            fe = result.get("first_error") or {}
            rows.append(
                {
                    "log": log.name,
                    "mb": mb,
                    "lines": result["inputs"][0]["lines"],
                    "failure": failure,
                    "grep_s": grep_s,
                    "triage_s": triage_s,
                    "ratio": triage_s / grep_s,
                    "mb_per_s": mb / triage_s,
                    "peak_mib": triage_mib,
                    "grep_mib": grep_mib,
                    "phase": result["phase"],
                    "first_error_line": fe.get("line"),
                    "category": fe.get("category"),
                }
            )
    header = (
        "| log | size | lines | grep -cE | triage | triage/grep | throughput | peak RSS | "
        "phase | first error |\n"
    )
    header += "|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n"
    body = "".join(
        f"| {r['log']} | {r['mb']:.0f} MB | {r['lines']:,} | {r['grep_s']:.2f} s | {r['triage_s']:.2f} s | "
        f"{r['ratio']:.1f}× | {r['mb_per_s']:.0f} MB/s | {r['peak_mib']} MiB | {r['phase']} | "
        f"line {r['first_error_line']} ({r['category']}) |\n"
        for r in rows
    )
    table = header + body
    print(table)
    (out_dir / "results.md").write_text(table, encoding="utf-8")
    (out_dir / "results.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
