"""How fast `vllm-triage redact` streams a realistic log, as a ratio to `cat` and `sed` in the same run.

    python benchmarks/bench_redact.py                       # a 1 GB generated log (issue 13: >= 100 MB/s)
    python benchmarks/bench_redact.py --size-mb 256 --repeat 3
    python benchmarks/bench_redact.py --log /path/to/real.log

The log is made by ../shared/bench/make_big_log.py (a vLLM server's start-up, then hours of request
and stats lines, a failure at the end) unless --log names one. Each tool reads the same file from
the page cache (one untimed `cat` first); each run's wall and CPU seconds (user + system, children
included) and peak RSS are measured. `sed` does one substitution of a token shape, the cheapest
thing that writes a redacted copy; `redact` writes the copy, its report and runs its leak scan.
On a shared machine the wall clock counts the neighbours: CPU seconds are the steadier figure.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAKE_LOG = ROOT.parent / "shared" / "bench" / "make_big_log.py"


def _timed(argv: list[str], stdout: Path | None = None) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one child run."""
    started = time.perf_counter()
    with open(stdout or os.devnull, "wb") as sink:
        process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.DEVNULL)
        _pid, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{argv[0]} failed: {status}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--log", type=Path, help="an existing log instead of a generated one")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--cmd", default=f"{sys.executable} -m vllm_triage")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-redact-") as tmp:
        work = Path(tmp)
        log = args.log
        if log is None:
            log = work / "vllm.log"
            subprocess.run(
                [sys.executable, str(MAKE_LOG), str(log), "--size-mb", str(args.size_mb)], check=True
            )
        size_mb = log.stat().st_size / 1e6
        subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)  # into the page cache
        sed_expr = r"s/hf_[A-Za-z0-9]\{30,\}/<redacted>/g"
        rows: dict[str, list[tuple[float, float, float]]] = {"cat": [], "sed": [], "redact": []}
        for _ in range(args.repeat):
            rows["cat"].append(_timed(["cat", str(log)], work / "cat.out"))
            rows["sed"].append(_timed(["sed", sed_expr, str(log)], work / "sed.out"))
            out = work / "redacted"
            shutil.rmtree(out, ignore_errors=True)
            rows["redact"].append(_timed([*args.cmd.split(), "redact", str(log), "--out", str(out), "-q"]))
        best = {name: min(runs) for name, runs in rows.items()}
        print(f"{log.name}: {size_mb:.0f} MB, best of {args.repeat}")
        print(f"{'tool':8} {'wall s':>8} {'cpu s':>8} {'MB/s wall':>10} {'MB/s cpu':>9} {'RSS MiB':>8}")
        for name, (wall, cpu, rss) in best.items():
            print(
                f"{name:8} {wall:8.2f} {cpu:8.2f} {size_mb / wall:10.0f} "
                f"{size_mb / max(cpu, 1e-6):9.0f} {rss:8.0f}"
            )
        redact = best["redact"]
        print(
            f"redact / cat: {redact[0] / best['cat'][0]:.1f}x wall; "
            f"redact / sed: {redact[0] / best['sed'][0]:.2f}x wall, {redact[1] / best['sed'][1]:.2f}x cpu"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
