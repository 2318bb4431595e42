"""nvidia-smi --query-gpu / --query-compute-apps output (--format=csv[,noheader][,nounits])."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from vllm_triage.parsers.base import PasteLine
from vllm_triage.parsers.nvidia_smi.common import (
    GPU_NAME,
    GPU_UUID,
    VERSION,
    Out,
    int_or_none,
    mig_from_modes,
)

_QUERY_COMMAND = re.compile(r"--query-(gpu|compute-apps)[= ]([\w.,]+)")
_FIELD_LIKE = re.compile(r"^[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*(?:\s*\[[^\]]*\])?$")
_UNIT = re.compile(r"\s*\[[^\]]*\]\s*$")
_ALIASES = {"gpu_name": "name", "gpu_bus_id": "pci.bus_id", "used_memory": "used_gpu_memory"}
_APP_FIELDS = {"pid", "process_name", "used_gpu_memory", "gpu_uuid"}
_GPU_FIELDS = frozenset(
    """index name uuid pci.bus_id driver_version memory.total memory.used memory.free memory.reserved
    mig.mode.current mig.mode.pending compute_cap persistence_mode count timestamp temperature.gpu
    utilization.gpu utilization.memory power.draw power.limit pstate serial vbios_version fan.speed
    compute_mode clocks.sm clocks.mem ecc.mode.current driver_model.current pcie.link.gen.current
    pcie.link.width.current""".split()  # noqa: SIM905 (a word list reads better than 31 quoted items)
)


@dataclass
class _CsvBlock:
    fields: list[str]
    query: str  # gpu | compute-apps
    header_line: int | None
    rows: list[tuple[int, list[str]]] = field(default_factory=list)
    dropped: int = 0


def _field(token: str) -> str:
    name = _UNIT.sub("", token).strip().lower()
    return _ALIASES.get(name, name)


def query_commands(lines: list[PasteLine]) -> list[tuple[str, list[str], str, int]]:
    """(query, fields, command text, line) for each --query-… command shown in the paste."""
    found = []
    for line in lines:
        match = _QUERY_COMMAND.search(line.text)
        if match:
            fields = [_field(token) for token in match.group(2).split(",") if token]
            found.append((match.group(1), fields, line.text, line.number))
    return found


def _csv_header(text: str) -> list[str] | None:
    """The field names of a csv header line; two known names at least, so 'name, count' prose is no header."""
    tokens = [token.strip() for token in text.split(",")]
    if len(tokens) < 2 or not all(_FIELD_LIKE.match(token) for token in tokens):
        return None
    fields = [_field(token) for token in tokens]
    if sum(1 for name in fields if name in _GPU_FIELDS or name in _APP_FIELDS) < 2:
        return None
    return fields


def csv_blocks(lines: list[PasteLine], commands: list[tuple[str, list[str], str, int]]) -> list[_CsvBlock]:
    by_line = {number: (query, fields) for query, fields, _, number in commands}
    blocks: list[_CsvBlock] = []
    current: _CsvBlock | None = None
    for line in lines:
        text = line.text.strip()
        if line.number in by_line:
            query, fields = by_line[line.number]
            current = _CsvBlock(fields, query, None)
            blocks.append(current)
            continue
        if "nvidia-smi" in text:
            current = None  # another command: its output is no csv row
            continue
        if not text:
            continue
        header = _csv_header(text)
        if header:
            query = "compute-apps" if "pid" in header else "gpu"
            current = _CsvBlock(header, query, line.number)
            blocks.append(current)
            continue
        if current is None:
            continue
        if text == "No running processes found" and current.query == "compute-apps":
            continue
        values = [value.strip() for value in text.split(",")]
        if len(values) == len(current.fields):
            current.rows.append((line.number, values))
            continue
        if current.rows and 2 <= len(values) < len(current.fields):
            current.dropped += 1  # a row cut by head or a paste limit
        current = None  # whatever follows is another output
    blocks = [
        block for block in blocks if (block.rows or block.header_line is not None) and _plausible(block)
    ]
    return blocks or _headless_block(lines)


def _plausible(block: _CsvBlock) -> bool:
    """A header of plain words ('name, count') needs nvidia-smi values below it to count as one."""
    if block.header_line is None or any(re.search(r"[._\[]", name) for name in block.fields):
        return True
    values = [value for _, row in block.rows for value in row]
    return any(GPU_NAME.match(value) or GPU_UUID.match(value) for value in values)


def _headless_block(lines: list[PasteLine]) -> list[_CsvBlock]:
    """`--format=csv,noheader` pasted without its command: name the columns that say what they are.

    Only unambiguous columns are named (a GPU name, a GPU UUID, a driver version, an index 0..n-1);
    memory columns stay unnamed because used, free and total look alike. A GPU-name column is
    required, so --query-compute-apps rows (process names) are never taken for GPUs.
    """
    rows: list[tuple[int, list[str]]] = []
    for line in lines:
        text = line.text.strip()
        values = [value.strip() for value in text.split(",")]
        if len(values) < 2 or "nvidia-smi" in text or text.startswith(("|", "+")):
            if rows:
                break
            continue
        if rows and len(values) != len(rows[0][1]):
            break
        rows.append((line.number, values))
    if not rows:
        return []
    columns = list(zip(*(values for _, values in rows), strict=True))
    fields = [_guess_field(position, column) for position, column in enumerate(columns)]
    # a GPU-name column and one more telling column, so prose that starts with "NVIDIA" is no csv
    telling = any(name in ("uuid", "driver_version", "index") for name in fields) or any(
        re.fullmatch(r"\d+ MiB", value) for _, values in rows for value in values
    )
    if "name" not in fields or not telling:
        return []
    return [_CsvBlock(fields, "gpu", None, rows)]


def _guess_field(position: int, column: tuple[str, ...]) -> str:
    if all(GPU_NAME.match(value) for value in column):
        return "name"
    if all(GPU_UUID.match(value) for value in column):
        return "uuid"
    if all(re.fullmatch(r"\d{3}\.\d+(?:\.\d+)?", value) for value in column):
        return "driver_version"
    if position == 0 and list(column) == [str(number) for number in range(len(column))]:
        return "index"
    return f"column{position}"


def _samples(block: _CsvBlock) -> list[list[tuple[int, list[str]]]]:
    """Loop mode (-l) repeats the GPUs; a repeated index/uuid (or a new timestamp) starts a sample."""
    key_field = next((name for name in ("index", "uuid", "pci.bus_id", "pid") if name in block.fields), None)
    samples: list[list[tuple[int, list[str]]]] = [[]]
    seen: set[str] = set()
    for number, values in block.rows:
        key = values[block.fields.index(key_field)] if key_field else None
        if key is not None and key in seen and key_field != "pid":
            samples.append([])
            seen = set()
        if key is not None:
            seen.add(key)
        samples[-1].append((number, values))
    return samples


def read(lines: list[PasteLine], out: Out) -> None:
    commands = query_commands(lines)
    blocks = csv_blocks(lines, commands)
    for query in ("gpu", "compute-apps"):
        chosen = [block for block in blocks if block.query == query]
        if not chosen:
            continue
        samples = [(block, sample) for block in chosen for sample in _samples(block)]
        block, rows = _last_complete(samples, query, out)
        if query == "gpu":
            selected = any(
                re.search(r"\s(?:-i|--id[= ])", command) for kind, _, command, _ in commands if kind == "gpu"
            )
            _emit_csv_gpus(block, rows, out, selected)
        else:
            _emit_csv_apps(block, rows, out)


def _last_complete(
    samples: list[tuple[_CsvBlock, list[tuple[int, list[str]]]]], query: str, out: Out
) -> tuple[_CsvBlock, list[tuple[int, list[str]]]]:
    """The last sample with every GPU in it; a sample cut by head or Ctrl-C is shorter or ends in a cut row."""
    full = max(len(rows) for _, rows in samples)
    block, rows = samples[-1]
    if query == "gpu" and len(samples) > 1:
        last = len(samples) - 1
        complete = [
            (b, r) for at, (b, r) in enumerate(samples) if len(r) == full and not (at == last and b.dropped)
        ]
        block, rows = complete[-1] if complete else samples[-1]
        at = rows[0][0] if rows else block.header_line
        out.note(f"--query-gpu loop output: {len(samples)} samples; read the last complete one (line {at})")
    elif block.dropped:
        out.note(f"--query-{query}: {block.dropped} row(s) cut short were skipped")
    return block, rows


def _column(block: _CsvBlock, rows: list[tuple[int, list[str]]], name: str) -> list[str] | None:
    if name not in block.fields:
        return None
    position = block.fields.index(name)
    return [values[position] for _, values in rows]


def _emit_csv_gpus(block: _CsvBlock, rows: list[tuple[int, list[str]]], out: Out, selected: bool) -> None:
    if not rows:
        return
    first = rows[0][0]
    count = _column(block, rows, "count")
    if count and int_or_none(count[0]) is not None:
        out.fact("gpu_count", int_or_none(count[0]), first)
    elif selected:
        out.note("--query-gpu ran with -i: only the selected GPUs are listed, gpu_count left out")
    else:
        out.fact("gpu_count", len(rows), first)
    driver = _column(block, rows, "driver_version")
    if driver and VERSION.match(driver[0]):
        out.fact("driver_version", driver[0], first)
    for column, fact in (("name", "gpu_models"), ("uuid", "gpu_uuids"), ("compute_cap", "gpu_compute_caps")):
        values = _column(block, rows, column)
        if values:
            out.fact(fact, values, first)
    for column, fact in (("memory.used", "gpu_memory_used_mib"), ("memory.total", "gpu_memory_total_mib")):
        values = _column(block, rows, column)
        if values:
            numbers = [int_or_none(value) for value in values]
            out.fact(
                fact, numbers, first, "None where nvidia-smi printed no number" if None in numbers else None
            )
    modes = _column(block, rows, "mig.mode.current")
    if modes:
        mig_from_modes(
            out, [(mode.strip("[]"), number) for mode, (number, _) in zip(modes, rows, strict=True)], "csv"
        )
    if block.header_line is None:
        named = [name for name in block.fields if not name.startswith("column")]
        if len(named) == len(block.fields):
            out.note("--query-gpu output without a header: columns taken from the command line")
        else:
            out.note(f"--query-gpu output without a header or command: only {', '.join(named)} recognised")


def _emit_csv_apps(block: _CsvBlock, rows: list[tuple[int, list[str]]], out: Out) -> None:
    line = rows[0][0] if rows else block.header_line
    out.fact("gpu_processes", len(rows), line)
    pids = _column(block, rows, "pid") or [""] * len(rows)
    names = _column(block, rows, "process_name") or [None] * len(rows)
    used = _column(block, rows, "used_gpu_memory") or [None] * len(rows)
    uuids = _column(block, rows, "gpu_uuid") or [None] * len(rows)
    out.fact(
        "gpu_process_list",
        [
            {
                "gpu": None,
                "gpu_uuid": uuid,
                "pid": int_or_none(pid),
                "name": name,
                "used_mib": int_or_none(mib),
            }
            for pid, name, mib, uuid in zip(pids, names, used, uuids, strict=True)
        ],
        line,
    )
