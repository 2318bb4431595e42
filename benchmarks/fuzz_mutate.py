"""Inputs for benchmarks/fuzz.py: mutations of the project's own fixtures and samples.

Input `i` of a target is a pure function of (seed, target, i): a campaign can stop, resume, be
split over workers in any order, and any one input can be rebuilt from its three numbers.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED_DIRS = (ROOT / "tests" / "fixtures", ROOT / "samples")
MAX_SEED_BYTES = 32 * 1024  # big fixtures make every input slow without finding more
# Half of a target's inputs start from its own fixtures (deeper into its grammar), half from any.
OWN_FIXTURES = {
    "vllm_log": ("logs", "vllm_log_config"),
    "nvidia_smi": ("nvidia_smi",),
    "collect_env": ("collect_env",),
    "container_inspect": ("inspect",),
    "launch_command": ("commands",),
    "environment": ("env",),
    "request": ("request",),
    "triage": ("logs",),
}
# Huge inputs find the quadratic and the unbounded; they are also what makes a campaign slow, so
# about one input in two hundred grows big (to BIG_MAX_BYTES) and the rest stay the size of artefacts.
BIG_SHARE = 0.003
BIG_MAX_BYTES = 512 * 1024
SPLICE_SHARE = 0.1
# Prefixes that log transports put before every line (docker -t, CRI, kubectl, journald, Ray).
TRANSPORTS = (
    b"2024-03-08T19:30:11.123456789Z ",
    b"2024-03-08T19:30:11.123456789+00:00 stdout F ",
    b"[pod/vllm-0/vllm] ",
    b"Mar 08 19:30:11 gpu-node-3 vllm[4242]: ",
    b"(EngineCore_0 pid=4242) ",
    b"(RayWorkerWrapper pid=77, ip=10.0.0.7) ",
    b"\x1b[32mINFO\x1b[0m ",
    b"vllm-1  | ",
)


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
    if rng.random() < 0.5:
        junk = rng.randbytes(rng.randint(1, 64))
    else:  # bytes that mean something to a parser: quotes, brackets, separators, escapes
        junk = bytes(rng.choice(b"\"'{}[]()<>\\|,;:=$`#\t\n\r -") for _ in range(rng.randint(1, 16)))
    return data[:at] + junk + data[at:]


def _repeat_line(rng: random.Random, data: bytes) -> bytes:
    lines = data.splitlines(keepends=True) or [data]
    line = rng.choice(lines) or b"\n"
    times = min(rng.randint(100, 20_000), BIG_MAX_BYTES // len(line))
    return data + line * times


def _long_line(rng: random.Random, data: bytes) -> bytes:
    lines = data.splitlines(keepends=True) or [b""]
    i = rng.randrange(len(lines))
    word = rng.choice([b"Value error, ", b"a", b"(", b"[", b"{", b"\\", b'"', b"Error: ", b" ", b"\t"])
    times = min(rng.randint(10_000, 200_000), BIG_MAX_BYTES // len(word))
    lines[i] = lines[i].rstrip(b"\r\n") + word * times + b"\n"
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
    codec = rng.choice(["utf-16", "utf-16-le", "utf-16-be", "latin-1", "utf-8-sig", "utf-32"])
    return text.encode(codec, "replace")


def _bad_utf8(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        buf.insert(rng.randrange(len(buf) + 1), rng.choice([0xC3, 0xFF, 0xFE, 0x80, 0xED]))
    return bytes(buf)


def _transport(rng: random.Random, data: bytes) -> bytes:
    prefix = rng.choice(TRANSPORTS)
    return b"".join(prefix + line for line in data.splitlines(keepends=True))


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
    _transport,
)
BIG_MUTATIONS = (_repeat_line, _long_line)


class Corpus:
    """The seeds, loaded once per worker; `make(seed, target_index, target, i)` is input i."""

    def __init__(self) -> None:
        self.all: list[bytes] = []
        self.own: dict[str, list[bytes]] = {}
        for folder in SEED_DIRS:
            for path in sorted(folder.rglob("*")):
                if not path.is_file() or path.is_symlink():
                    continue
                data = path.read_bytes()[:MAX_SEED_BYTES]
                if not data:
                    continue
                self.all.append(data)
                part = path.relative_to(folder).parts[0] if folder.name == "fixtures" else ""
                for target, dirs in OWN_FIXTURES.items():
                    if part in dirs:
                        self.own.setdefault(target, []).append(data)

    def make(self, seed: int, target_index: int, target: str, i: int) -> bytes:
        rng = random.Random(seed * 10**12 + target_index * 10**10 + i)
        own = self.own.get(target)
        data = rng.choice(own if own and rng.random() < 0.5 else self.all)
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            roll = rng.random()
            if roll < BIG_SHARE:
                data = rng.choice(BIG_MUTATIONS)(rng, data)
            elif roll < BIG_SHARE + SPLICE_SHARE:
                data = _splice(rng, data, rng.choice(self.all))
            else:
                data = rng.choice(MUTATIONS)(rng, data)
            data = data[: 4 * BIG_MAX_BYTES]  # re-encoding a big input can grow it four times
        return data
