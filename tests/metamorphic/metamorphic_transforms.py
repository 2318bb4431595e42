"""Meaning-preserving transformations of a vLLM log, and the cases they are applied to.

Each transformation takes the log's rows (its lines as triage counts them) and the baseline
verdict (where the first error block is), and returns the bytes of a new log that says the same
thing: the same failure, shipped another way, cut shorter, or with a healthy process's lines
mixed in. See test_metamorphic.py for the invariant.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from vllm_triage.ingest.decode import check_text, iter_line_batches
from vllm_triage.ingest.gutter import MIN_RECORDS
from vllm_triage.ingest.logical import logical_lines
from vllm_triage.ingest.prefixes import split_line, strip_ansi, strip_transport
from vllm_triage.pipeline import gather, triage

ROOT = Path(__file__).resolve().parents[2]
# Any labelled set of real logs laid out like the dev corpus (`NAME/log.txt`) can be run through
# the harness by pointing this variable at it; the default is the shared dev corpus.
CORPUS = Path(os.environ.get("VLLM_TRIAGE_METAMORPHIC_CORPUS", ROOT.parent / "shared" / "corpus" / "dev"))
# Fewer lines than a gutter needs to be told from the lines' own text (see TRANSFORMS).
MIN_GUTTER_LINES = MIN_RECORDS


@dataclass(frozen=True)
class Case:
    name: str
    path: Path


def project_cases() -> list[Case]:
    """The fixture logs and the log of every bundled sample."""
    found = [Case(f"fixture:{p.name}", p) for p in sorted((ROOT / "tests" / "fixtures" / "logs").iterdir())]
    for sample in sorted(p for p in (ROOT / "samples").iterdir() if p.is_dir()):
        for source in gather([str(sample)]):
            if source.role == "vllm_log":
                found.append(Case(f"sample:{sample.name}/{Path(source.name).name}", Path(source.name)))
    return found


def corpus_cases() -> list[Case]:
    """`../shared/corpus/dev/*/log.txt`, when that corpus is there."""
    if not CORPUS.is_dir():
        return []
    return [
        Case(f"corpus:{d.name}", d / "log.txt") for d in sorted(CORPUS.iterdir()) if (d / "log.txt").is_file()
    ]


def run_triage(data: bytes, path: Path) -> dict[str, Any]:
    """Triage in-process, the way the CLI does (pipeline.triage, then the JSON contract)."""
    path.write_bytes(data)
    return triage([str(path)]).to_json()


@cache
def baseline(path: Path) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The verdict on the log as given, and its rows as triage counts them."""
    data = path.read_bytes()
    encoding = check_text(data[:65536], path.name)
    rows = tuple(
        line for batch in logical_lines(iter_line_batches(io.BytesIO(data), encoding)) for line in batch
    )
    return triage([str(path)]).to_json(), rows


# ----------------------------------------------------------------------------------- transports


def plain(rows: list[str]) -> list[str]:
    """Every transport off (ANSI colour, container and journald prefixes): what vLLM printed."""
    return [strip_transport(strip_ansi(row))[0] for row in rows]


def _ts(i: int) -> str:
    return f"2025-11-04T15:{i // 60 % 60:02d}:{i % 60:02d}.{(i * 7919) % 10**9:09d}Z"


def _lines(rows: list[str], end: str = "\n") -> bytes:
    return (end.join(rows) + end).encode("utf-8")


def _cri(rows: list[str]) -> bytes:
    """A kubelet CRI file, lines over 120 characters cut into partial (`P`) records."""
    out = []
    for i, row in enumerate(rows):
        stream = "stderr" if not split_line(row).level else "stdout"
        pieces = [row[k : k + 120] for k in range(0, len(row), 120)] or [""]
        out += [f"{_ts(i)} {stream} P {p}" for p in pieces[:-1]] + [f"{_ts(i)} {stream} F {pieces[-1]}"]
    return _lines(out)


_LOGGER_PREFIX = re.compile(
    r"^(?P<proc>(?:\([^)]*pid=\d+[^)]*\) )*)(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) "
    r"(?P<stamp>\d\d-\d\d \d\d:\d\d:\d\d) (?P<src>\[?[^\s\]]+:\d+\])"
)
_COLOURS = {"DEBUG": "37", "INFO": "32", "WARNING": "33", "ERROR": "31", "CRITICAL": "35"}


def _ansi(row: str) -> str:
    """vLLM's ColoredFormatter on a TTY: cyan process prefix, coloured level, grey time and location."""

    def colour(m: re.Match[str]) -> str:
        proc = re.sub(r"(\([^)]*\)) ", "\x1b[0;36m\\1\x1b[0;0m ", m.group("proc"))
        level = m.group("level")
        return (
            f"{proc}\x1b[{_COLOURS[level]}m{level}\x1b[0m \x1b[90m{m.group('stamp')}\x1b[0m "
            f"\x1b[90m{m.group('src')}\x1b[0m"
        )

    return _LOGGER_PREFIX.sub(colour, row, count=1)


def _box(rows: list[str], width: int = 120) -> bytes:
    """A terminal-UI pane `width` columns wide: longer lines wrap onto the next box row."""
    out = []
    for row in rows:
        for k in range(0, max(len(row), 1), width):
            out.append(f"│ {row[k : k + width]:<{width}} │")
    return _lines(out)


def _vllm_json(rows: list[str]) -> bytes:
    """vLLM with a JSON logging formatter: a LogRecord object per logged line; what is not logged
    (raw tracebacks, prints, progress bars) stays text with vLLM's process prefix."""
    out = []
    for row in rows:
        parts = split_line(row)
        if parts.logger != "vllm" or parts.source is None or parts.vllm_ts is None:
            out.append(row)
            continue
        filename, _, lineno = parts.source.rpartition(":")
        record = {
            "asctime": f"2025-{parts.vllm_ts},000",
            "levelname": parts.level,
            "name": "vllm",
            "processName": parts.process or "MainProcess",
            "process": parts.pid or 1,
            "filename": filename,
            "lineno": int(lineno),
            "message": parts.message,
        }
        if parts.process:
            record["vllm_process_name"] = parts.process
        out.append(json.dumps(record, ensure_ascii=False))
    return _lines(out)


_STAMP = re.compile(
    r"^(?P<head>(?:\([^)]*pid=\d+[^)]*\) )*(?:\[rank\d+\]:\s?)?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)) "
    r"\d\d-\d\d \d\d:\d\d:\d\d \[?(?P<src>[^\s\]]+:\d+)\] ?"
)


def _drop_timestamps(rows: list[str]) -> bytes:
    """No transport time, and a logger format without `%(asctime)s`: `INFO [core.py:718] …`."""
    return _lines([_STAMP.sub(r"\g<head> [\g<src>] ", row, count=1) for row in rows])


# ------------------------------------------------------------------------ cuts and other processes

_HEALTHY = "(VllmWorker rank=7 pid=424242) "
_OTHER_RANK = "(VllmWorker rank=6 pid=434343) "
_PROCESS = re.compile(r"^(?:\([^)]*pid=\d+[^)]*\) )+")


def _interleave_healthy_rank(rows: list[str], block: dict[str, int] | None) -> bytes:
    """A healthy rank logging the same progress, line for line, up to the failure."""
    stop = block["start"] - 1 if block else len(rows)
    out = []
    for i, row in enumerate(rows):
        out.append(row)
        parts = split_line(row)
        if i < stop and parts.logger == "vllm" and parts.level == "INFO" and parts.vllm_ts and parts.source:
            out.append(f"{_HEALTHY}INFO {parts.vllm_ts} [{parts.source}] {parts.message}")
    return _lines(out)


def _interleave_in_block(rows: list[str], block: dict[str, int]) -> bytes:
    """A healthy rank printing between every two lines of the failing process's error block."""
    start, end = block["start"] - 1, block["end"]
    stamp = next((p.vllm_ts for p in map(split_line, rows[start:end]) if p.vllm_ts), "11-04 15:23:28")
    beat = f"{_HEALTHY}INFO {stamp} [gpu_worker.py:100] rank 7 is still waiting for its peers"
    out = rows[:start]
    for row in rows[start:end]:
        out += [row, beat]
    return _lines(out + rows[end:])


def _duplicate_block(rows: list[str], block: dict[str, int]) -> bytes:
    """The same error block printed again, after the first, by another rank."""
    start, end = block["start"] - 1, block["end"]
    copy = [_OTHER_RANK + _PROCESS.sub("", row) for row in rows[start:end]]
    return _lines(rows[:end] + copy + rows[end:])


Transform = Callable[[list[str], dict[str, int] | None], bytes | None]

# name → (rows, block) → bytes, or None when the transformation does not apply to this case.
TRANSFORMS: dict[str, Transform] = {
    "strip-transports": lambda rows, block: _lines(plain(rows)) if plain(rows) != rows else None,
    "docker-logs-t": lambda rows, block: _lines([f"{_ts(i)} {r}" for i, r in enumerate(plain(rows))]),
    "compose": lambda rows, block: _lines([f"vllm-openai-1  | {r}" for r in plain(rows)]),
    "kubectl-prefix-t": lambda rows, block: _lines(
        [f"[pod/vllm-0/vllm] {_ts(i)} {r}" for i, r in enumerate(plain(rows))]
    ),
    "journald": lambda rows, block: _lines(
        [f"Nov 04 15:23:28 gpu-node-7 vllm[4242]: {r}" for r in plain(rows)]
    ),
    "cri-partial": lambda rows, block: _cri(plain(rows)),
    "ansi-colour": lambda rows, block: _lines([_ansi(r) for r in plain(rows)]),
    "crlf": lambda rows, block: _lines(plain(rows), "\r\n"),
    "cr-only": lambda rows, block: _lines(plain(rows), "\r"),
    "utf16-bom": lambda rows, block: ("\r\n".join(plain(rows)) + "\r\n").encode("utf-16"),
    # what a paste or a tail puts before every line (ingest/gutter.py): a Markdown list item's
    # indentation, `grep -n` numbers, stern's `pod container ` tag. A gutter is known by what the
    # lines share: a log of one or two lines has too few to show it (`1:` could be the line's own
    # text; ingest/gutter.py asks for MIN_RECORDS structured lines).
    "indent": lambda rows, block: (
        _lines(["    " + r for r in plain(rows)]) if len(rows) >= MIN_GUTTER_LINES else None
    ),
    "grep-n": lambda rows, block: (
        _lines([f"{i}:{r}" for i, r in enumerate(plain(rows), 1)]) if len(rows) >= MIN_GUTTER_LINES else None
    ),
    "stern": lambda rows, block: (
        _lines([f"vllm-6f7d8-k2x9q vllm {r}" for r in plain(rows)]) if len(rows) >= MIN_GUTTER_LINES else None
    ),
    "terminal-box": lambda rows, block: _box(plain(rows)),
    "vllm-json": lambda rows, block: _vllm_json(plain(rows)),
    "drop-timestamps": lambda rows, block: _drop_timestamps(plain(rows)),
    "interleave-healthy-rank": lambda rows, block: _interleave_healthy_rank(plain(rows), block),
    "interleave-in-block": lambda rows, block: _interleave_in_block(plain(rows), block) if block else None,
    "duplicate-block": lambda rows, block: _duplicate_block(plain(rows), block) if block else None,
    "cut-head": lambda rows, block: (
        _lines(rows[block["start"] - 1 :]) if block and block["start"] > 1 else None
    ),
    "cut-tail": lambda rows, block: (
        _lines(rows[: block["end"]]) if block and block["end"] < len(rows) else None
    ),
}
CUTS = ("cut-head", "cut-tail")
# Transformations that only re-encode the same lines (a transport, an encoding, line endings).
ENCODINGS = (
    "docker-logs-t", "compose", "kubectl-prefix-t", "journald", "cri-partial", "ansi-colour", "crlf", "cr-only",
    "utf16-bom", "terminal-box", "vllm-json", "indent", "grep-n", "stern",
)  # fmt: skip
CORPUS_ENCODINGS_PER_CASE = 3
