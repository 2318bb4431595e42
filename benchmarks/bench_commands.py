#!/usr/bin/env python3
"""Every command on one bundle, as a ratio to `triage` of the same bundle, in one run.

The bundle is built from a shipped sample (its launch command, nvidia-smi, bundle.toml) with a
large generated serving log in front of the sample's own log, so the failure stays the sample's
and the log is big enough for a second pass over it to show:
  triage · check · report --format md · report --format json · fingerprint
Each command runs --repeat times, the commands in turns (a burst of load on a shared machine hits
them alike); the best wall and CPU time of each is kept and divided by triage's.

With --baseline-cmd (another build of the tool, e.g. `env PYTHONPATH=/path/to/old/checkout python -m
vllm_triage`) every command also runs under it, in the same turns, so a change is measured as
before/after ratios in one run rather than across runs on a machine whose load keeps changing.
Run it from outside the checkout then: `python -m` puts the current folder first on sys.path, so
in the checkout both builds would import the checkout's package.

Usage: benchmarks/bench_commands.py [--size-mb 256] [--sample kv-cache-too-small] [--out DIR]
                                    [--maker PATH] [--cmd vllm-triage] [--repeat 3]
                                    [--baseline-cmd CMD]
Writes a Markdown table to stdout and to DIR/commands.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import tomllib
from bench_triage import DEFAULT_MAKER, HERE, run

COMMANDS = {
    "triage": ["triage", "--format", "json"],
    "check": ["check", "--format", "json"],
    "report md": ["report", "--format", "md"],
    "report json": ["report", "--format", "json"],
    "fingerprint": ["fingerprint", "--format", "json"],
}


def build_bundle(out_dir: Path, sample: Path, size_mb: int, maker: str) -> Path:
    """A copy of the sample with a big serving log ahead of the sample's log (cached in out_dir)."""
    bundle = out_dir / f"bundle-{sample.name}-{size_mb}mb"
    if bundle.exists():
        return bundle
    manifest = tomllib.loads((sample / "bundle.toml").read_text(encoding="utf-8"))
    log_name = next(f["path"] for f in manifest.get("file", []) if f.get("role") == "vllm_log")
    big = out_dir / f"big-{size_mb}mb-none.log"
    if not big.exists():
        subprocess.run(
            [sys.executable, maker, str(big), "--size-mb", str(size_mb), "--failure", "none"], check=True
        )
    partial = bundle.with_name(bundle.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(sample, partial)
    with open(partial / log_name, "wb") as log:
        for part in (big, sample / log_name):
            with open(part, "rb") as src:
                shutil.copyfileobj(src, log, 16 * 1024 * 1024)
    partial.rename(bundle)
    return bundle


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=256)
    ap.add_argument("--sample", default="kv-cache-too-small")
    ap.add_argument("--out", default=str(HERE / "out"))
    ap.add_argument("--maker", default=str(DEFAULT_MAKER))
    ap.add_argument("--cmd", default="vllm-triage")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline-cmd", help="another build to measure in the same turns (before/after)")
    a = ap.parse_args()
    out_dir = Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    sample = HERE.parent / "samples" / a.sample
    if not (sample / "bundle.toml").is_file():
        print(f"no sample bundle at {sample}", file=sys.stderr)
        return 2
    if not Path(a.maker).is_file():
        print(f"log generator not found: {a.maker}", file=sys.stderr)
        return 2
    bundle = build_bundle(out_dir, sample, a.size_mb, a.maker)
    builds = {"": a.cmd} if not a.baseline_cmd else {"baseline ": a.baseline_cmd, "": a.cmd}
    runs: dict[str, list[tuple[float, float]]] = {}
    for _ in range(a.repeat):
        for name, args in COMMANDS.items():
            for build, cmd in builds.items():
                argv = shlex.split(cmd) + [args[0], str(bundle), *args[1:]]
                wall, _rss, _out, cpu = run(argv)
                runs.setdefault(build + name, []).append((wall, cpu))
    best = {name: (min(w for w, _ in rs), min(c for _, c in rs)) for name, rs in runs.items()}
    rows = []
    for name, (w, c) in best.items():
        base_wall, base_cpu = best["baseline triage" if name.startswith("baseline ") else "triage"]
        rows.append(
            {"command": name, "wall_s": w, "cpu_s": c, "wall_ratio": w / base_wall, "cpu_ratio": c / base_cpu}
        )
    rows.sort(key=lambda r: r["command"].startswith("baseline "), reverse=True)
    load = os.getloadavg()[0]
    table = f"bundle: {bundle.name} ({a.size_mb} MB log), best of {a.repeat}, load average {load:.1f}\n\n"
    table += "| command | wall | CPU | wall / triage | CPU / triage |\n|---|---:|---:|---:|---:|\n"
    table += "".join(
        f"| {r['command']} | {r['wall_s']:.2f} s | {r['cpu_s']:.2f} s | {r['wall_ratio']:.2f}× "
        f"| {r['cpu_ratio']:.2f}× |\n"
        for r in rows
    )
    print(table)
    (out_dir / "commands.md").write_text(table, encoding="utf-8")
    (out_dir / "commands.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
