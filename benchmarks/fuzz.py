"""Feed every parser and the triage entry point generated inputs; report crashes, hangs, the slowest.

    python benchmarks/fuzz.py --inputs 1000000 --jobs 2         # the full campaign
    python benchmarks/fuzz.py --inputs 2000 --jobs 2 --quick    # what CI runs

Inputs are mutations of the project's own fixtures and samples (tests/fixtures/**, samples/**):
truncation, byte flips, inserted bytes, a line repeated to a huge run, a line grown past any
sane length, deleted and shuffled lines, NUL padding, CR-only and CRLF endings, and the text
re-encoded as UTF-16 / Latin-1 or salted with invalid UTF-8. Every input goes through the same
steps ingest uses (decode, then the parser's `looks_like` and `parse`; for triage: a Source
scanned and analysed in-process), each under a per-input time limit in a worker process.

A crash is any exception except the documented `InputError` (bad input is allowed to be
refused, with its one line); a hang is an input that exceeds `--timeout`. Each crash and hang
is written to `--out` (default: a temporary folder) so it can be replayed, and the exit status
is 1 when any was found.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED_DIRS = (ROOT / "tests" / "fixtures", ROOT / "samples")
MAX_SEED_BYTES = 32 * 1024  # big fixtures make every input slow without finding more
TARGETS = (
    "vllm_log",
    "nvidia_smi",
    "collect_env",
    "container_inspect",
    "launch_command",
    "environment",
    "request",
    "triage",
)


class Hang(Exception):
    pass


def _alarm(_signum: int, _frame: object) -> None:
    raise Hang


# ---------------------------------------------------------------- mutations


def _truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def _flip(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 16)):
        if buf:
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
    return bytes(buf)


def _insert(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data) + 1)
    junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    return data[:at] + junk + data[at:]


def _repeat_line(rng: random.Random, data: bytes) -> bytes:
    lines = data.splitlines(keepends=True) or [data]
    line = rng.choice(lines)
    return data + line * rng.randint(100, 20_000)


def _long_line(rng: random.Random, data: bytes) -> bytes:
    lines = data.splitlines(keepends=True) or [b""]
    i = rng.randrange(len(lines))
    word = rng.choice([b"Value error, ", b"a", b"(", b"[", b"{", b"\\", b'"', b"Error: ", b" "])
    lines[i] = lines[i].rstrip(b"\r\n") + word * rng.randint(10_000, 200_000) + b"\n"
    return b"".join(lines)


def _drop_lines(rng: random.Random, data: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    return b"".join(line for line in lines if rng.random() > 0.3)


def _shuffle(rng: random.Random, data: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    rng.shuffle(lines)
    return b"".join(lines)


def _nul_pad(rng: random.Random, data: bytes) -> bytes:
    return b"\0" * rng.randint(1, 4096) + data + b"\0" * rng.randint(0, 64)


def _line_endings(rng: random.Random, data: bytes) -> bytes:
    return data.replace(b"\n", rng.choice([b"\r", b"\r\n", b"\n\r", b"\r\r\n"]))


def _reencode(rng: random.Random, data: bytes) -> bytes:
    text = data.decode("utf-8", "replace")
    codec = rng.choice(["utf-16", "utf-16-le", "utf-16-be", "latin-1", "utf-8-sig"])
    return text.encode(codec, "replace")


def _bad_utf8(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        buf.insert(rng.randrange(len(buf) + 1), rng.choice([0xC3, 0xFF, 0xFE, 0x80, 0xED]))
    return bytes(buf)


def _splice(rng: random.Random, data: bytes, other: bytes) -> bytes:
    return data[: rng.randrange(len(data) + 1)] + other[rng.randrange(len(other) + 1) :]


MUTATIONS: tuple[Callable[[random.Random, bytes], bytes], ...] = (
    _truncate,
    _flip,
    _insert,
    _drop_lines,
    _shuffle,
    _nul_pad,
    _line_endings,
    _reencode,
    _bad_utf8,
)


# Huge inputs find the quadratic and the unbounded; they are also what makes a campaign slow,
# so one input in twenty grows big and the rest stay the size of real artefacts.
BIG_MUTATIONS = (_repeat_line, _long_line)
BIG_SHARE = 0.05


MAX_INPUT_BYTES = 64 * 1024 * 1024  # past this every input is refused by size: nothing to learn


def mutate(rng: random.Random, seeds: list[bytes]) -> bytes:
    data = rng.choice(seeds)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        roll = rng.random()
        if roll < BIG_SHARE:
            data = rng.choice(BIG_MUTATIONS)(rng, data)
        elif roll < BIG_SHARE + 0.1:
            data = _splice(rng, data, rng.choice(seeds))
        else:
            data = rng.choice(MUTATIONS)(rng, data)
        data = data[:MAX_INPUT_BYTES]
    return data


def load_seeds() -> list[bytes]:
    seeds = []
    for folder in SEED_DIRS:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.is_symlink():
                seeds.append(path.read_bytes()[:MAX_SEED_BYTES])
    return [s for s in seeds if s]


# ---------------------------------------------------------------- targets


def _target(name: str) -> Callable[[bytes], object]:
    """The function one input goes through, as ingest would call it."""
    from vllm_triage.ingest.decode import check_text, decode_all

    if name == "triage":
        from vllm_triage.analysis.triage import analyse_log
        from vllm_triage.engine.scan import scan
        from vllm_triage.ingest.sources import Source
        from vllm_triage.pipeline import load_rules

        compiled = load_rules()

        def run_triage(data: bytes) -> object:
            source = Source(name="fuzz.log", opener=lambda: io.BytesIO(data), size=len(data), role="vllm_log")
            return analyse_log(scan(source, compiled), compiled)

        return run_triage

    from vllm_triage.fingerprint.combine import ARTEFACT_MAX_BYTES, LOG_HEAD_BYTES
    from vllm_triage.parsers.registry import REGISTRY

    found = REGISTRY[name]
    # What the combiner hands a parser: an artefact's first 16 MiB, a log's first 5 MiB.
    limit = LOG_HEAD_BYTES if name == "vllm_log" else ARTEFACT_MAX_BYTES

    def run_parser(data: bytes) -> object:
        data = data[:limit]
        text = decode_all(data, check_text(data[:65536], "fuzz.txt"))
        found.looks_like(text)
        return found.read(text, "fuzz.txt", "gpu")

    return run_parser


@dataclass
class Report:
    target: str
    inputs: int = 0
    refused: int = 0  # InputError: a documented, clean refusal
    crashes: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)
    slowest: float = 0.0
    slowest_size: int = 0
    seconds: float = 0.0


# Per worker address space: a blow-up becomes a MemoryError, saved, not the machine's OOM killer.
# Address space, not resident memory: polars reserves several GiB it never touches.
MEMORY_LIMIT = 10 * 1024**3


def _work(target: str, seed: int, count: int, timeout: float, out: str) -> Report:
    import resource

    from vllm_triage.core.errors import InputError

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    progress = Path(out) / f"progress-{os.getpid()}"
    rng = random.Random(seed)
    seeds = load_seeds()
    run = _target(target)
    report = Report(target)
    signal.signal(signal.SIGALRM, _alarm)
    started = time.perf_counter()
    for i in range(count):
        try:
            data = mutate(rng, seeds)
        except MemoryError:
            continue  # the generator itself, not the tool: no finding
        # If the worker dies outright (a native abort), the parent replays this input from here.
        progress.write_text(f"{target} {seed} {i}\n")
        t0 = time.perf_counter()
        try:
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                run(data)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except Hang:
            report.hangs.append(_save(out, target, seed, i, data, "hang"))
        except InputError:
            report.refused += 1
        except Exception:
            report.crashes.append(_save(out, target, seed, i, data, traceback.format_exc(limit=6)))
        elapsed = time.perf_counter() - t0
        if elapsed > report.slowest:
            report.slowest, report.slowest_size = elapsed, len(data)
        report.inputs += 1
    report.seconds = time.perf_counter() - started
    return report


def _save(out: str, target: str, seed: int, i: int, data: bytes, why: str) -> str:
    folder = Path(out) / target
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{seed}-{i}.bin"
    path.write_bytes(data)
    (folder / f"{seed}-{i}.why.txt").write_text(why, encoding="utf-8")
    return str(path)


def _batches(total: int, size: int) -> Iterator[int]:
    while total > 0:
        yield min(size, total)
        total -= size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=10_000, help="inputs per target")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds one input may take")
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--batch", type=int, default=5_000, help="inputs per worker task")
    parser.add_argument("--out", default=None, help="where crashing and hanging inputs are saved")
    parser.add_argument("--quick", action="store_true", help="CI budget: smaller batches")
    args = parser.parse_args(argv)
    out = args.out or tempfile.mkdtemp(prefix="vllm-triage-fuzz-")
    Path(out).mkdir(parents=True, exist_ok=True)
    batch = 500 if args.quick else args.batch
    targets = [t for t in args.targets.split(",") if t]
    unknown = set(targets) - set(TARGETS)
    if unknown:
        parser.error(f"unknown target(s): {', '.join(sorted(unknown))}")
    totals = {t: Report(t) for t in targets}
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = []
        for t_index, target in enumerate(targets):
            for b_index, count in enumerate(_batches(args.inputs, batch)):
                seed = args.seed * 1_000_003 + t_index * 10_007 + b_index
                futures.append(pool.submit(_work, target, seed, count, args.timeout, out))
        for future in futures:
            try:
                r = future.result()
            except BrokenProcessPool:
                print(f"a worker died; its last input is named in {out}/progress-*", file=sys.stderr)
                return 1
            total = totals[r.target]
            total.inputs += r.inputs
            total.refused += r.refused
            total.crashes += r.crashes
            total.hangs += r.hangs
            total.seconds += r.seconds
            if r.slowest > total.slowest:
                total.slowest, total.slowest_size = r.slowest, r.slowest_size
    wall = time.perf_counter() - started
    print(
        f"| target | inputs | refused (exit 4) | crashes | hangs (> {args.timeout:g} s) | slowest "
        f"| its size |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in totals.values():
        print(
            f"| {r.target} | {r.inputs:,} | {r.refused:,} | {len(r.crashes)} | {len(r.hangs)} "
            f"| {r.slowest * 1000:.0f} ms | {r.slowest_size:,} B |"
        )
    print(f"wall {wall:.0f} s on {args.jobs} worker(s); failing inputs saved under {out}")
    bad = [p for r in totals.values() for p in r.crashes + r.hangs]
    for path in bad[:20]:
        print(f"  {path}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
