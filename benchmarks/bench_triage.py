#!/usr/bin/env python3
"""Benchmark `vllm-triage triage` on large generated vLLM logs against grep, with peak memory.

Generates logs with ../shared/bench/make_big_log.py (a realistic TP=8 V1 server log: start-up,
hours of serving, then a failure cascade), then for each log runs, in the same session:
  cat LOG > /dev/null                     (the read floor)
  grep -cE 'ERROR|Traceback' LOG          (one pass of a C tool over the bytes)
  vllm-triage triage LOG --format json    (full triage: root block, phase, consequences)
and reports wall time, triage/grep and triage/cat (ratios within one run: the machine may be
shared, so absolute times are noisy), CPU seconds per GB (user + system of the child, both
cores counted) and peak RSS (os.wait4's ru_maxrss of the child). Each figure is the best of
--repeat runs, the commands interleaved so a burst of load hits all of them alike.

With --baseline CMD (another build of the tool, e.g. the main branch's venv) that build is run in
the same turns and its row printed below each one, so old and new are compared under one load.

Usage: benchmarks/bench_triage.py [--sizes 64,256,1024,4096] [--failures request,early] [--out DIR]
                                  [--maker PATH] [--cmd vllm-triage] [--baseline CMD] [--repeat 3]
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


def run(argv: list[str], stdout: int = subprocess.PIPE) -> tuple[float, int, bytes, float]:
    """(seconds, peak RSS in MiB, stdout, CPU seconds) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.DEVNULL)
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, usage.ru_maxrss // 1024, out, usage.ru_utime + usage.ru_stime


def best_of_interleaved(
    commands: dict[str, list[str]], repeat: int
) -> dict[str, tuple[float, int, bytes, float]]:
    """Each command `repeat` times, in turns; per command the best wall and CPU, the worst RSS."""
    runs: dict[str, list[tuple[float, int, bytes, float]]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, argv in commands.items():
            runs[name].append(run(argv, subprocess.DEVNULL if name == "cat" else subprocess.PIPE))
    return {
        name: (min(r[0] for r in rs), max(r[1] for r in rs), rs[-1][2], min(r[3] for r in rs))
        for name, rs in runs.items()
    }


def _row(log: Path, mb: float, failure: str, best: dict, name: str) -> dict:
    cat_s = best["cat"][0]
    grep_s, grep_mib = best["grep"][0], best["grep"][1]
    triage_s, triage_mib, out, triage_cpu = best[name]
    result = json.loads(out)
    fe = result.get("first_error") or {}
    return {
        "log": log.name if name == "triage" else f"{log.name} ({name}, {_same(out, best)} JSON)",
        "mb": mb,
        "lines": result["inputs"][0]["lines"],
        "failure": failure,
        "grep_s": grep_s,
        "triage_s": triage_s,
        "ratio": triage_s / grep_s,
        "cat_s": cat_s,
        "cat_ratio": triage_s / cat_s,
        "cpu_s": triage_cpu,
        "cpu_s_per_gb": triage_cpu / (mb / 1024),
        "mb_per_s": mb / triage_s,
        "peak_mib": triage_mib,
        "grep_mib": grep_mib,
        "phase": result["phase"],
        "first_error_line": fe.get("line"),
        "category": fe.get("category"),
        "same_as_triage": out == best["triage"][2],
    }


def _same(out: bytes, best: dict) -> str:
    return "same" if out == best["triage"][2] else "different"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="256,1024", help="log sizes in MB")
    ap.add_argument("--failures", default="request,early")
    ap.add_argument("--out", default=str(HERE / "out"))
    ap.add_argument("--maker", default=str(DEFAULT_MAKER))
    ap.add_argument("--cmd", default="vllm-triage")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", default="", help="another vllm-triage command, run in the same turns")
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
            commands = {
                "cat": ["cat", str(log)],
                "grep": ["grep", "-cE", "ERROR|Traceback", str(log)],
                "triage": shlex.split(a.cmd) + ["triage", str(log), "--format", "json"],
            }
            if a.baseline:
                commands["baseline"] = shlex.split(a.baseline) + ["triage", str(log), "--format", "json"]
            best = best_of_interleaved(commands, a.repeat)
            for name in ("triage", "baseline") if a.baseline else ("triage",):
                rows.append(_row(log, mb, failure, best, name))
    header = (
        "| log | size | lines | grep -cE | triage | triage/grep | triage/cat | CPU-s/GB | throughput "
        "| peak RSS | phase | first error |\n"
    )
    header += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n"
    body = "".join(
        f"| {r['log']} | {r['mb']:.0f} MB | {r['lines']:,} | {r['grep_s']:.2f} s | {r['triage_s']:.2f} s | "
        f"{r['ratio']:.1f}× | {r['cat_ratio']:.0f}× | {r['cpu_s_per_gb']:.2f} | {r['mb_per_s']:.0f} MB/s "
        f"| {r['peak_mib']} MiB | {r['phase']} | "
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
