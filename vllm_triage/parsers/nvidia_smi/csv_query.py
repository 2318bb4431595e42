r"""nvidia-smi --query-gpu / --query-compute-apps output (--format=csv[,noheader][,nounits]).

Rows are split with the standard library's csv reader (nvidia-smi separates fields with ", ").
Without a header the columns come from the command line when the paste shows it; without either,
only columns whose values say what they are get a name (see `_guess_field`), and a value nvidia-smi
could not read (`[N/A]`, `[Not Supported]`) is None with the reason in a note.

>>> from vllm_triage.parsers.nvidia_smi import parse
>>> row = "0, NVIDIA GB10, GPU-7d3e91a0-52c4-4b18-9e0f-a4c2d6b18e53, 580.95.05, [N/A], [N/A]"
>>> facts = parse(row, "q.csv", "host").facts
>>> facts["host.gpu_models"].value, facts["host.driver_version"].value, "host.gpu_memory_used_mib" in facts
(['NVIDIA GB10'], '580.95.05', False)
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field

from vllm_triage.parsers.base import PasteLine
from vllm_triage.parsers.nvidia_smi.common import (
    BUS_ID,
    GPU_NAME,
    GPU_UUID,
    VERSION,
    Out,
    int_or_none,
    mig_from_modes,
    unavailable,
)

_QUERY_COMMAND = re.compile(r"--query-(gpu|compute-apps)[= ]([\w.,]+)")
_FIELD_LIKE = re.compile(r"^[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*(?:\s*\[[^\]]*\])?$")
_UNIT = re.compile(r"\s*\[[^\]]*\]\s*$")
_ALIASES = {
    "gpu_name": "name",
    "gpu_bus_id": "pci.bus_id",
    "gpu_serial": "serial",
    "used_memory": "used_gpu_memory",
}
_APP_FIELDS = {"pid", "process_name", "used_gpu_memory", "gpu_uuid"}
# Header names only --query-compute-apps prints: its process columns, and the `gpu_`-prefixed
# names of the GPU a process runs on (--query-gpu heads the same columns uuid, name, pci.bus_id,
# serial). Any of them makes the block a process list, whether or not pid was asked for.
_APP_HEADER_NAMES = frozenset(
    {
        "pid",
        "process_name",
        "used_gpu_memory",
        "used_memory",
        "gpu_uuid",
        "gpu_name",
        "gpu_bus_id",
        "gpu_serial",
    }
)
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
    open_ended: bool = False  # the header ends in '...': rows have more columns than it names
    waited: int = 0  # lines of other text between the command and its first row


# What a note or a transcript puts before a pasted line: a shell comment (`# index, name, …` in a
# runbook), a tool-call tag (`[tool_result] name, …`). The csv is the rest of the line.
_LEAD = re.compile(r"^(?:#+|//|;+|\[[\w .:-]{1,30}\])\s+")
# A note after a row (`580.173.02   ← verified`): nvidia-smi never writes two spaces and an arrow.
# Found by its marker, then checked for the spaces before it (a `\s{2,}` scan from every position
# of a long blank run would be quadratic).
_ANNOTATION = re.compile(r"←|<-|<=|#|//")
# Lines that may stand between a command and its output: a blank, a fence, 'Expected output:', the
# output of another command run in the same block (`docker --version`).
_MAX_WAIT = 6
_ELIDED = ("...", "…")


def _csv_text(text: str) -> str:
    """A pasted line as nvidia-smi printed it: the lead and trailing annotation of a note removed."""
    text = _LEAD.sub("", text.strip(), count=1)
    note = _ANNOTATION.search(text)
    if note and text[: note.start()].endswith(("  ", "\t")):
        text = text[: note.start()].rstrip()
    return text


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


def split(text: str) -> list[str]:
    """The fields of one csv line, stripped; a quoted field may hold a comma."""
    try:
        return [value.strip() for value in next(csv.reader([text], skipinitialspace=True), [])]
    except csv.Error:  # an unclosed quote in a paste: no csv row
        return []


def _csv_header(text: str) -> list[str] | None:
    """The field names of a csv header line; two known names at least, so 'name, count' prose is no header.
    A header whose last name is '...' (a person cut the list) names the columns before it."""
    tokens = split(text)
    if tokens and tokens[-1] in _ELIDED:
        tokens = tokens[:-1]
    if len(tokens) < 2 or not all(_FIELD_LIKE.match(token) for token in tokens):
        return None
    fields = [_field(token) for token in tokens]
    if sum(1 for name in fields if name in _GPU_FIELDS or name in _APP_FIELDS) < 2:
        return None
    return fields


def _header_names(text: str) -> set[str]:
    """The names of a header line as nvidia-smi printed them (units off, no aliases applied)."""
    return {_UNIT.sub("", token).strip().lower() for token in split(text)}


def csv_blocks(lines: list[PasteLine], commands: list[tuple[str, list[str], str, int]]) -> list[_CsvBlock]:
    by_line = {number: (query, fields) for query, fields, _, number in commands}
    blocks: list[_CsvBlock] = []
    current: _CsvBlock | None = None
    for line in lines:
        text = _csv_text(line.text)
        if line.number in by_line:
            query, fields = by_line[line.number]
            current = _CsvBlock([name for name in fields if name not in _ELIDED], query, None)
            current.open_ended = any(name in _ELIDED for name in fields)
            blocks.append(current)
            continue
        if "nvidia-smi" in text:
            current = None  # another command: its output is no csv row
            continue
        if not text:
            continue
        header = _csv_header(text)
        if header:
            query = "compute-apps" if _header_names(text) & _APP_HEADER_NAMES else "gpu"
            current = _CsvBlock(header, query, line.number, open_ended=split(text)[-1] in _ELIDED)
            blocks.append(current)
            continue
        if current is None:
            continue
        if text == "No running processes found" and current.query == "compute-apps":
            continue
        values = split(text)
        if (
            len(values) == len(current.fields) or current.open_ended and len(values) > len(current.fields)
        ) and (current.header_line is not None or _fits(current.fields, values)):
            current.rows.append((line.number, values[: len(current.fields)]))
            continue
        if current.rows and 2 <= len(values) < len(current.fields):
            current.dropped += 1  # a row cut by head or a paste limit
        elif not current.rows and current.waited < _MAX_WAIT:
            current.waited += 1  # text between the command and its output ('Expected output:')
            continue
        current = None  # whatever follows is another output
    blocks = [
        block for block in blocks if (block.rows or block.header_line is not None) and _plausible(block)
    ]
    return blocks or _headless_block(lines)


# What a value of a column the command named must look like: below a command (no header) a line of
# prose or of another program's output may have as many commas as the query has fields.
_SHAPES = {
    "name": GPU_NAME,
    "uuid": GPU_UUID,
    "index": re.compile(r"^\d+$"),
    "driver_version": re.compile(r"^\d{3}\.\d+(?:\.\d+)?$"),
    "memory.total": re.compile(r"^\d+(?: MiB)?$"),
    "memory.used": re.compile(r"^\d+(?: MiB)?$"),
    "memory.free": re.compile(r"^\d+(?: MiB)?$"),
}


def _fits(fields: list[str], values: list[str]) -> bool:
    """Every value of a known column has its shape (or is nvidia-smi's [N/A]-style no-value)."""
    return all(
        unavailable(value) is not None or shape.match(value)
        for name, value in zip(fields, values, strict=False)
        if (shape := _SHAPES.get(name)) is not None
    )


def _plausible(block: _CsvBlock) -> bool:
    """A header of plain words ('name, count') needs nvidia-smi values below it to count as one."""
    if block.header_line is None or any(re.search(r"[._\[]", name) for name in block.fields):
        return True
    values = [value for _, row in block.rows for value in row]
    return any(GPU_NAME.match(value) or GPU_UUID.match(value) for value in values)


def _headless_block(lines: list[PasteLine]) -> list[_CsvBlock]:
    """`--format=csv,noheader` pasted without its command: name the columns that say what they are.

    Only unambiguous columns are named (a GPU name, a GPU UUID, a driver version, an index 0..n-1,
    a process path); memory columns stay unnamed because used, free and total look alike. Rows count
    as nvidia-smi output only with one identity column (name, UUID or driver version) and a second
    sign (another of those, a `NNN MiB` value, a `[N/A]`), so prose and other tables are left alone.
    A UUID column beside a process column is --query-compute-apps, never GPUs.
    """
    rows: list[tuple[int, list[str]]] = []
    for line in lines:
        text = line.text.strip()
        values = split(text) if "," in text else []
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
    values = [value for _, row in rows for value in row]
    identity = [name for name in fields if name in ("name", "uuid", "driver_version")]
    signs = (
        len(identity)
        + any(name in ("pci.bus_id", "pci.device_id") for name in fields)
        + any(_MIB.fullmatch(value) for value in values)
        + any(_BRACKETED.match(value) for value in values)
        + ("uuid" in fields and "process_name" in fields)  # a process beside a GPU UUID: compute-apps
    )
    if not identity or signs < 2:
        return []
    if "uuid" in fields and "name" not in fields and "process_name" in fields:
        return [_CsvBlock(_app_fields(fields, columns), "compute-apps", None, rows)]
    fields = [f"column{at}" if name == "process_name" else name for at, name in enumerate(fields)]
    if fields.count("pci.device_id") > 1:  # pci.device_id and pci.sub_device_id look alike
        fields = [f"column{at}" if name == "pci.device_id" else name for at, name in enumerate(fields)]
    return [_CsvBlock(fields, "gpu", None, rows)]


_MIB = re.compile(r"\d+ MiB")
# PCI identities are nvidia-smi's own shapes: `00000000:17:00.0` (pci.bus_id, the usual partner of
# name in `--query-gpu=name,pci.bus_id` for CUDA_DEVICE_ORDER=PCI_BUS_ID) and `0x233010DE`
# (pci.device_id: device << 16 | NVIDIA's vendor id 10DE).
_PCI_BUS = re.compile(r"^" + BUS_ID.pattern + r"$")
_PCI_DEVICE = re.compile(r"^0x[0-9A-Fa-f]{4}10DE$")
_BRACKETED = re.compile(r"^\[(?:N/A|Not Supported|Insufficient Permissions|Unknown Error)\]$")
# a process as --query-compute-apps prints it: a path or a program name, never a number or N/A
_PROCESS = re.compile(r"^(?:/[\w.@+/-]+|[A-Za-z][\w.+-]*(?:::[\w.-]+)?)$")


def _app_fields(fields: list[str], columns: list[tuple[str, ...]]) -> list[str]:
    """pid and used memory of headerless compute-apps rows, named only where they cannot be swapped."""
    named = ["gpu_uuid" if name == "uuid" else name for name in fields]
    numeric = [at for at, name in enumerate(named) if name.startswith("column")]
    mib = [at for at in numeric if all(_MIB.fullmatch(value) for value in columns[at])]
    plain = [at for at in numeric if all(value.isdigit() for value in columns[at])]
    if len(mib) == 1:
        named[mib[0]] = "used_gpu_memory"
    if len(plain) == 1:  # with nounits, pid and used memory are both bare integers: left unnamed
        named[plain[0]] = "pid"
    return named


def _guess_field(position: int, column: tuple[str, ...]) -> str:
    if all(GPU_NAME.match(value) for value in column):
        return "name"
    if all(GPU_UUID.match(value) for value in column):
        return "uuid"
    if all(re.fullmatch(r"\d{3}\.\d+(?:\.\d+)?", value) for value in column):
        return "driver_version"
    if position == 0 and list(column) == [str(number) for number in range(len(column))]:
        return "index"
    if all(_PCI_BUS.match(value) for value in column):
        return "pci.bus_id"
    if all(_PCI_DEVICE.match(value) for value in column):
        return "pci.device_id"
    if all(_PROCESS.match(value) and not GPU_NAME.match(value) for value in column) and any(
        "/" in value or "python" in value.lower() or "vllm" in value.lower() for value in column
    ):
        return "process_name"
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
    """The last sample with every GPU in it; a sample cut by head or Ctrl-C is shorter or ends in a
    cut row."""
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
        if not values:
            continue
        numbers = [int_or_none(value) for value in values]
        reasons = sorted({reason for reason in map(unavailable, values) if reason})
        if reasons:
            # GB10 / DGX Spark and Jetson print [N/A] for memory: unified memory has no framebuffer figure
            out.note(f"--query-gpu: {column} shows {', '.join(reasons)} (unified memory or no NVML support)")
        if all(number is None for number in numbers):
            continue
        out.fact(fact, numbers, first, "None where nvidia-smi printed no number" if None in numbers else None)
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
    named = [name for name in block.fields if not name.startswith("column")]
    if block.header_line is None and len(named) < len(block.fields):
        out.note(
            f"--query-compute-apps output without a header or command: only {', '.join(named)} recognised"
        )
    out.fact("gpu_processes", len(rows), line)
    pids = _column(block, rows, "pid") or [""] * len(rows)
    nothing: list[str | None] = [None] * len(rows)
    names: list[str | None] = [*(_column(block, rows, "process_name") or nothing)]
    used: list[str | None] = [*(_column(block, rows, "used_gpu_memory") or nothing)]
    uuids: list[str | None] = [*(_column(block, rows, "gpu_uuid") or nothing)]
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
